package leaseq

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// This file is Options.ReadOnly and Migrate: a queue that never writes, for
// the tools that only look (the CLI's stats, list and show, a read-only
// dashboard), and the schema upgrade as a step of its own, for deployments
// that run migrations separately from the service.

// errReadOnly is the cause of every write on a read-only queue.
func errReadOnly() error {
	return invalid("the queue was opened read-only (Options.ReadOnly)")
}

// readOnlyEngine is the engine of a Queue made with Options.ReadOnly: its
// reads pass through, every write is refused before the database is
// touched.
type readOnlyEngine struct{ engine.Engine }

func (readOnlyEngine) SchemaMigrate(context.Context) error { return errReadOnly() }

func (readOnlyEngine) JobInsertMany(context.Context, engine.JobInsertManyParams) (int, error) {
	return -1, errReadOnly()
}

func (readOnlyEngine) JobInsertTx(context.Context, *sql.Tx, engine.JobInsertTxParams) (int, error) {
	return -1, errReadOnly()
}

func (readOnlyEngine) JobClaim(context.Context, engine.JobClaimParams) ([]engine.ClaimRow, error) {
	return nil, errReadOnly()
}

func (readOnlyEngine) JobSettle(context.Context, engine.JobSettleParams) ([]engine.Settled, error) {
	return nil, errReadOnly()
}

func (readOnlyEngine) JobCycle(context.Context, engine.JobCycleParams) (engine.Cycle, error) {
	return engine.Cycle{}, errReadOnly()
}

func (readOnlyEngine) JobOperate(context.Context, engine.JobOperateParams) (engine.Refusal, error) {
	return engine.Refusal{}, errReadOnly()
}

func (readOnlyEngine) JobPurgeChunk(context.Context, engine.JobPurgeChunkParams) (int, error) {
	return 0, errReadOnly()
}

func (readOnlyEngine) TxRun(context.Context, engine.TxRunParams) (engine.TxOutcome, error) {
	return engine.TxOutcome{}, errReadOnly()
}

func (readOnlyEngine) QueuePause(context.Context, engine.QueuePauseParams) error {
	return errReadOnly()
}

// ReadOnly reports whether the queue was made with [Options.ReadOnly].
func (q *Queue) ReadOnly() bool {
	_, ok := q.e.(readOnlyEngine)
	return ok
}

// checkSchema refuses, for a read-only queue, a database whose schema is
// not the one this package writes: a read-only queue upgrades nothing, and
// an older schema lacks columns the reads need. On SQLite it also refuses a
// journal mode the queue does not run in (rule 26), as a write would.
func checkSchema(ctx context.Context, e engine.Engine) error {
	why, err := e.DatabaseProblem(ctx)
	if err != nil {
		return err
	}
	if why != "" {
		return invalid("%s", why)
	}
	v, err := e.SchemaVersion(ctx)
	want := e.SchemaCurrent()
	switch {
	case err != nil:
		return fmt.Errorf("reading the schema version: %w", err)
	case v == 0:
		return invalid("the database has no leaseq schema (version 0); a read-only queue creates none: run Migrate (the command: leaseq migrate)")
	case v < want:
		return invalid("database schema version is %d, older than this leaseq's %d; a read-only queue does not upgrade it: run Migrate (the command: leaseq migrate)", v, want)
	case v > want:
		return invalid("database schema version is %d, this leaseq knows version %d and older", v, want)
	}
	return nil
}

// Migrate creates leaseq's schema in db if it is missing, or upgrades one
// written by an earlier version (in one transaction that keeps every job,
// token and attempt count), as [New] does, and returns the version the
// database had before (0 for none) and the version it has now, the same
// when there was nothing to do. The version is [SchemaVersion] on SQLite;
// PostgreSQL numbers its schema on its own, as it changed without SQLite's.
// A newer schema is refused with [ErrInvalid].
// It is for deployments that upgrade as a step of their own, before
// starting services whose queues are made with [Options.ReadOnly] or by an
// older release; New without ReadOnly migrates by itself. Like New, it is
// safe when several processes call it at once.
func Migrate(ctx context.Context, db *sql.DB) (from, to int, err error) {
	if err := ctxProblem(ctx); err != nil {
		return 0, 0, opError("migrate", "", err)
	}
	if db == nil {
		return 0, 0, opError("migrate", "", invalid("db is nil"))
	}
	e, err := openEngine(ctx, db)
	if err != nil {
		return 0, 0, opError("migrate", "", err)
	}
	defer e.Release()
	from, err = e.SchemaVersion(ctx)
	if err == nil {
		err = e.SchemaMigrate(ctx)
	}
	if err != nil {
		return 0, 0, opError("migrate", "", err)
	}
	return from, e.SchemaCurrent(), nil
}

func (readOnlyEngine) SlotInsert(context.Context, engine.SlotInsertParams) (engine.SlotAnswer, error) {
	return 0, errReadOnly()
}
