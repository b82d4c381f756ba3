package leaseq

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
)

//go:embed schema.sql
var schemaSQL string

// SchemaVersion is the schema version this package writes to PRAGMA
// user_version. New refuses a database with a newer one rather than guess at
// columns it does not know.
const SchemaVersion = 1

// migrate creates the schema if it is missing. It runs in one BEGIN
// IMMEDIATE transaction, so when two processes call New on a fresh file at
// once, one creates the table and sets user_version and the other, which
// waited for the lock, finds the work done.
func (q *Queue) migrate(ctx context.Context) error {
	return q.writeTx(ctx, func(tx execer) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		switch {
		case v == SchemaVersion:
			return nil
		case v != 0:
			return fmt.Errorf("database schema version is %d, this leaseq knows version %d or none: %w", v, SchemaVersion, ErrInvalid)
		}
		if _, err := tx.ExecContext(ctx, schemaSQL); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion))
		return err
	})
}

// rollbackJournals are the journal modes New accepts. WAL keeps readers on
// old snapshots, which a lease queue has no use for and which changes how
// locks and durability behave (SPEC rule 9); OFF and MEMORY lose atomic
// commit when the process dies.
var rollbackJournals = map[string]bool{"delete": true, "truncate": true, "persist": true}

// checkJournal refuses a database whose journal mode is not a rollback
// journal on disk.
func (q *Queue) checkJournal(ctx context.Context) error {
	var mode string
	err := q.readRetry(ctx, func(db execer) error {
		return db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	})
	if err != nil {
		return err
	}
	if !rollbackJournals[strings.ToLower(mode)] {
		return fmt.Errorf("database is in journal_mode=%s; leaseq needs a rollback journal on disk (DELETE, TRUNCATE or PERSIST): %w", mode, ErrInvalid)
	}
	return nil
}
