package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/leaseq/leaseq/internal/engine"
)

// Engine is what every Queue on one PostgreSQL *sql.DB shares.
type Engine struct {
	db   *sql.DB
	wake engine.Wakers
	// queues counts the open Queues on the engine, guarded by enginesMu.
	queues int
	// serverNow is the clock of the engine's Queues that have none of
	// their own.
	serverNow *serverClock
	// migrated is set once the schema is known to be current.
	migratedMu sync.Mutex
	migrated   bool
	// ident tells the database apart from others (EnqueueTx; see
	// DatabaseForeign).
	ident identity
	// notify sends this process's changes to others (notify.go).
	notify notifier
}

var _ engine.Engine = (*Engine)(nil)

var (
	enginesMu sync.Mutex
	engines   = map[*sql.DB]*Engine{}
)

// New returns db's engine, making it for the first open Queue; each New is
// ended by a Release. It is exported for the root package, which has asked
// Handles first.
func New(db *sql.DB) *Engine {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	e := engines[db]
	if e == nil {
		e = &Engine{db: db}
		e.serverNow = &serverClock{e: e}
		e.wake.SetAnnounce(e.announce) // rule 56 (notify.go)
		engines[db] = e
	}
	e.queues++
	return e
}

// Handles asks db's server what it is, for the root package's choice of
// engine: ok when it says it is PostgreSQL (pgx's stdlib, lib/pq and the
// like; the package imports none of them). version is the server's answer,
// for the root's refusal of another server; err is a failed question, which
// names the driver.
func Handles(ctx context.Context, db *sql.DB) (ok bool, version string, err error) {
	if err := db.QueryRowContext(ctx, stmt("version")).Scan(&version); err != nil {
		return false, "", fmt.Errorf("asking the %T database for its version: %w", db.Driver(), engine.PoolWait(db, err))
	}
	return strings.HasPrefix(version, "PostgreSQL "), version, nil
}

// Release ends one Queue's use of the engine; the last one forgets it.
// It first sends the notifications announced so far (notify.go).
func (e *Engine) Release() {
	e.flushNotifications()
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e.queues--; e.queues == 0 {
		delete(engines, e.db)
	}
}

// DB is the database the engine runs on.
func (e *Engine) DB() *sql.DB { return e.db }

// Wakers are the wake-ups of this process's idle workers on the database.
func (e *Engine) Wakers() *engine.Wakers { return &e.wake }

// Usable is the error of a call on a database that was closed, or nil.
func (e *Engine) Usable() error { return engine.Closed(e.db) }

// ServerClock is the server's clock, estimated (clock.go): PostgreSQL keeps
// time on the server, so that hosts whose clocks disagree still agree on
// when a lease ends (rule 40 in docs/rules.md).
func (e *Engine) ServerClock() engine.TimeSource { return e.serverNow }

// now reads the server's clock in Unix milliseconds.
func (e *Engine) now(ctx context.Context) (int64, error) {
	var ms int64
	err := e.db.QueryRowContext(ctx, stmt("now")).Scan(&ms)
	return ms, err
}

// schemaLock is the advisory lock key that makes migrations from several
// hosts at once take turns (schema_lock.sql).
const schemaLock = 0x6c65617365710a // "leaseq\n"

// SchemaCurrent is the version of sql/schema.sql, kept in leaseq_schema: 4
// added leaseq_purged_token and keeps leaseq_counts by backend; 5 lets one
// claim at a time sweep and has the claim take a row only under an
// advisory lock of its seq (leaseq_claim says why); 6 adds the jobs' kind
// (rule 50) and leaseq_paused (rule 54), which leaseq_claim_jobs reads; 7
// has leaseq_purged_token read before it updates and set no planner
// settings (an Enqueue's server time in it: a tenth, from a sixth); 8
// keeps leaseq_sweep's scans to their indexes (enable_seqscan off); 9
// counts a pool step's finishes once per step, not by the trigger per row.
// Every version's script
// runs on any older schema, as it creates what is missing and replaces
// every function and trigger. It is PostgreSQL's own number: SQLite's
// schema is numbered apart. Exported for the root package (Migrate's
// answer, the read-only check).
const SchemaCurrent = 9

// SchemaCurrent is the schema version this package writes.
func (e *Engine) SchemaCurrent() int { return SchemaCurrent }

// SchemaVersion reads the schema version (0 when there is none), without
// DDL.
func (e *Engine) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, e.db)
}

// schemaVersion reads the schema version on ex: 0 when there is none yet
// (no leaseq_schema table, or no row in it).
func schemaVersion(ctx context.Context, ex engine.Execer) (int, error) {
	var v int
	err := ex.QueryRowContext(ctx, stmt("schema_version")).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || sqlState(err) == sqlStateUndefinedTable {
		return 0, nil
	}
	return v, err
}

// SchemaMigrate checks that the schema is current with one read, which DML
// rights (or read-only ones) suffice for, and only when it is not creates
// or upgrades it: in one transaction under schemaLock, which reads the
// version again, since another host may have migrated meanwhile.
func (e *Engine) SchemaMigrate(ctx context.Context) error {
	e.migratedMu.Lock()
	defer e.migratedMu.Unlock()
	if e.migrated {
		return nil
	}
	v, err := schemaVersion(ctx, e.db)
	switch {
	case err != nil:
		return fmt.Errorf("reading the schema version: %w", err)
	case v == SchemaCurrent:
		e.migrated = true
		return nil
	case v > SchemaCurrent:
		return newerSchema(v)
	}
	_, err = write(ctx, e, func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		return struct{}{}, migrateTx(ctx, tx)
	})
	e.migrated = err == nil
	return err
}

// migrateTx is the migration's transaction: the lock, the version read
// again, and the script when the schema is still not current.
func migrateTx(ctx context.Context, tx engine.Execer) error {
	if _, err := tx.ExecContext(ctx, stmt("schema_lock"), int64(schemaLock)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, stmt("schema_table")); err != nil {
		return err
	}
	v, err := schemaVersion(ctx, tx)
	switch {
	case err != nil:
		return err
	case v == SchemaCurrent:
		return nil
	case v > SchemaCurrent:
		return newerSchema(v)
	}
	for _, s := range SplitSQL(stmt("schema")) {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	_, err = tx.ExecContext(ctx, stmt("schema_version_set"), SchemaCurrent)
	return err
}

// newerSchema is the error for a database of a later version of leaseq.
func newerSchema(v int) error {
	return engine.Invalid("database schema version is %d, this leaseq knows version %d and older", v, SchemaCurrent)
}

// SplitSQL splits a script into statements at semicolons outside comments
// and $$-quoted function bodies. Exported for the bench, which runs an old
// version's script over a database (its pg-schema8 mode).
func SplitSQL(script string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, line := range strings.SplitAfter(script, "\n") {
		if !quoted && strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for i := 0; i < len(line); i++ {
			if strings.HasPrefix(line[i:], "$$") {
				quoted = !quoted
				b.WriteString("$$")
				i++
				continue
			}
			if line[i] == ';' && !quoted {
				if s := strings.TrimSpace(b.String()); s != "" {
					out = append(out, s)
				}
				b.Reset()
				continue
			}
			b.WriteByte(line[i])
		}
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		out = append(out, s)
	}
	return out
}
