package leaseq

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
)

//go:embed schema.sql
var schemaSQL string

// SchemaVersion is the schema version this package writes to a SQLite
// database's PRAGMA user_version. [New] upgrades an older database, keeping
// every job, and refuses a newer one rather than guess at columns it does
// not know. PostgreSQL's schema is numbered on its own ([Migrate] says
// which version it left), as it changed without SQLite's.
const SchemaVersion = 3

// upgradeV1SQL turns a version-1 database (one queue, no delays or
// priorities) into version 2 (and with countsSQL, 3), keeping every row, token and attempt count.
// SQLite cannot add a UNIQUE (queue, id) constraint to a table, so the table
// is rebuilt: the old indexes are dropped (version 2 reuses some of their
// names), the old table set aside, the new schema created, the rows copied
// into the queue "default" and the old table dropped. Pending jobs copy as
// ready, leases as waiting for their lease end, as version 2 would have
// written them.
var upgradeV1SQL = []string{
	`DROP INDEX IF EXISTS leaseq_jobs_pending`,
	`DROP INDEX IF EXISTS leaseq_jobs_leased`,
	`DROP INDEX IF EXISTS leaseq_jobs_doomed`,
	`DROP INDEX IF EXISTS leaseq_jobs_pending_deadline`,
	`ALTER TABLE leaseq_jobs RENAME TO leaseq_jobs_v1`,
	schemaSQL,
	`INSERT INTO leaseq_jobs (seq, queue, id, qty, payload, status, owner, token, attempts, max_attempts,
		lease_until, deadline, reason, run_at, priority, due_at, ready, created_at, updated_at)
	SELECT seq, '` + DefaultName + `', id, qty, payload, status, owner, token, attempts, max_attempts,
		lease_until, deadline, reason, NULL, 0,
		CASE status WHEN 'leased' THEN lease_until ELSE created_at END,
		CASE status WHEN 'pending' THEN 1 ELSE 0 END,
		created_at, updated_at
	FROM leaseq_jobs_v1`,
	`DROP TABLE leaseq_jobs_v1`,
}

// upgradeV2Indexes drops the version-2 indexes that version 3 widens with
// created_at (for Activity), so that schemaSQL creates them anew.
const upgradeV2Indexes = `DROP INDEX leaseq_jobs_status; DROP INDEX leaseq_jobs_finished;`

// countsSQL fills leaseq_counts for a database written before version 3:
// the only time the done and quarantined jobs are counted by reading them.
const countsSQL = `INSERT INTO leaseq_counts (queue, status, n)
SELECT queue, status, count(*) FROM leaseq_jobs WHERE status IN ('done', 'quarantined') GROUP BY queue, status`

// migrate creates the schema if it is missing and upgrades an older one. It
// runs in one BEGIN IMMEDIATE transaction, so when several processes call
// New on one file at once, one does the work and the others, which waited
// for the lock, find it done; a failed upgrade leaves the old version whole.
func (s *store) migrate(ctx context.Context) error {
	return s.writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		var script []string
		switch v {
		case SchemaVersion:
			return nil
		case 0:
			script = []string{schemaSQL}
		case 1:
			script = append(slices.Clip(upgradeV1SQL), countsSQL)
		case 2:
			script = []string{upgradeV2Indexes, schemaSQL, countsSQL}
		default:
			return fmt.Errorf("database schema version is %d, this leaseq knows version %d and older: %w", v, SchemaVersion, ErrInvalid)
		}
		for _, stmt := range script {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("schema version %d to %d: %w", v, SchemaVersion, err)
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
		return err
	})
}

// rollbackJournals are the journal modes the queue writes in. WAL keeps
// readers on old snapshots, which a lease queue has no use for and which
// changes how locks and durability behave; OFF and MEMORY lose atomic commit
// when the process dies. See docs/guarantees.md, "Why a rollback journal".
var rollbackJournals = map[string]bool{"delete": true, "truncate": true, "persist": true}

// journalProblem says why the journal mode of the connection db is not one
// the queue writes in, or returns "".
func journalProblem(ctx context.Context, db execer) (string, error) {
	// The table-valued form, not "PRAGMA journal_mode": the plain pragma
	// reports the mode the connection last saw, and a pooled connection
	// opened before another one switched the file to WAL still says
	// "delete" until it reads the file again — its first write would then
	// run in WAL. Selecting from pragma_journal_mode starts a read, which
	// reads the file's header first.
	var mode string
	if err := db.QueryRowContext(ctx, "SELECT journal_mode FROM pragma_journal_mode").Scan(&mode); err != nil {
		return "", err
	}
	if !rollbackJournals[strings.ToLower(mode)] {
		return fmt.Sprintf("database is in journal_mode=%s; leaseq needs a rollback journal on disk (DELETE, TRUNCATE or PERSIST)", mode), nil
	}
	return "", nil
}
