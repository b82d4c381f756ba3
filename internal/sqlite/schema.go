package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/leaseq/leaseq/internal/engine"
)

// migration is the scripts that bring a database of schema version v to
// SchemaVersion, in order, around schema, the create script the engine was
// made with (the root's schema.sql), which is every statement IF NOT
// EXISTS: ok is false for a version it knows no way from. Version 1 had one
// queue and no delays or priorities: its table is rebuilt around the create
// script. Version 2 lacks the counts of version 3 and two of its indexes'
// columns. Versions 2 and 3 lack the kind (rule 50), which upgrade_v3 adds
// before the create script makes its index, and leaseq_paused (rule 54),
// which the create script makes.
func migration(v int, schema string) (script []string, ok bool) {
	switch v {
	case 0:
		return []string{schema}, true
	case 1:
		return []string{stmt("upgrade_v1"), schema, stmt("upgrade_v1_copy"), stmt("upgrade_counts")}, true
	case 2:
		return []string{stmt("upgrade_v2"), stmt("upgrade_v3"), schema, stmt("upgrade_counts")}, true
	case 3:
		return []string{stmt("upgrade_v3"), schema}, true
	}
	return nil, false
}

// SchemaMigrate creates the schema if it is missing and upgrades an older
// one, keeping every row, token and attempt count. It runs in one BEGIN
// IMMEDIATE transaction, so when several processes call New on one file at
// once, one does the work and the others, which waited for the lock, find
// it done; a failed upgrade leaves the old version whole.
func (e *Engine) SchemaMigrate(ctx context.Context) error {
	_, err := writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		return struct{}{}, migrate(ctx, tx, e.schema)
	}})
	return err
}

// migrate is SchemaMigrate's transaction, with the create script schema.
func migrate(ctx context.Context, tx engine.Execer, schema string) error {
	var v int
	if err := tx.QueryRowContext(ctx, stmt("schema_version")).Scan(&v); err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	script, ok := migration(v, schema)
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
