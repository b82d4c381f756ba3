package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/leaseq/leaseq/internal/engine"
)

// migrations are the scripts that bring a database of each older schema
// version to SchemaVersion, in order. Version 1 had one queue and no delays
// or priorities: its table is rebuilt around the schema script. Version 2
// lacks the counts of version 3 and two of its indexes' columns. Version 3
// lacks the kind of version 4 (rule 50), which every script adds last.
var migrations = map[int][]string{
	0: {stmt("schema"), stmt("schema_kind")},
	1: {stmt("upgrade_v1"), stmt("schema"), stmt("upgrade_v1_copy"), stmt("upgrade_counts"), stmt("schema_kind")},
	2: {stmt("upgrade_v2"), stmt("schema"), stmt("upgrade_counts"), stmt("schema_kind")},
	// Version 3 lacks leaseq_paused (rule 54), which the schema script
	// creates, and the kind (rule 50).
	3: {stmt("schema"), stmt("schema_kind")},
}

// SchemaMigrate creates the schema if it is missing and upgrades an older
// one, keeping every row, token and attempt count. It runs in one BEGIN
// IMMEDIATE transaction, so when several processes call New on one file at
// once, one does the work and the others, which waited for the lock, find
// it done; a failed upgrade leaves the old version whole.
func (e *Engine) SchemaMigrate(ctx context.Context) error {
	_, err := writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		return struct{}{}, migrate(ctx, tx)
	}})
	return err
}

// migrate is SchemaMigrate's transaction.
func migrate(ctx context.Context, tx engine.Execer) error {
	var v int
	if err := tx.QueryRowContext(ctx, stmt("schema_version")).Scan(&v); err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	script, ok := migrations[v]
	if !ok {
		return engine.Invalid("database schema version is %d, this leaseq knows version %d and older", v, SchemaVersion)
	}
	for _, text := range script {
		if _, err := tx.ExecContext(ctx, text); err != nil {
			return fmt.Errorf("schema version %d to %d: %w", v, SchemaVersion, err)
		}
	}
	_, err := tx.ExecContext(ctx, stmt("schema_version_set"))
	return err
}

// SchemaVersion reads the database's schema version (PRAGMA user_version;
// 0 for none) on the *sql.DB, without writing.
func (e *Engine) SchemaVersion(ctx context.Context) (int, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) (int, error) {
		var v int
		err := db.QueryRowContext(ctx, stmt("schema_version")).Scan(&v)
		return v, err
	})
}

// rollbackJournals are the journal modes the queue writes in. WAL keeps
// readers on old snapshots, which a lease queue has no use for and which
// changes how locks and durability behave; OFF and MEMORY lose atomic commit
// when the process dies. See docs/guarantees.md, "Why a rollback journal".
var rollbackJournals = map[string]bool{"delete": true, "truncate": true, "persist": true}

// journalProblem says why the journal mode of the connection db is not one
// the queue writes in, or returns "".
func journalProblem(ctx context.Context, db engine.Execer) (string, error) {
	var mode string
	if err := db.QueryRowContext(ctx, stmt("journal_mode")).Scan(&mode); err != nil {
		return "", err
	}
	if !rollbackJournals[strings.ToLower(mode)] {
		return fmt.Sprintf("database is in journal_mode=%s; leaseq needs a rollback journal on disk (DELETE, TRUNCATE or PERSIST)", mode), nil
	}
	return "", nil
}

// DatabaseProblem says why the database's journal mode is not one the
// queue runs in (rule 26), or "": what a read-only Queue asks at New, where
// a writing one finds it out when it takes its write connection.
func (e *Engine) DatabaseProblem(ctx context.Context) (string, error) {
	return retryBusyOnce(ctx, func() (string, error) { return journalProblem(ctx, e.dbh) })
}
