package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// The reads run on the *sql.DB, each one statement (so one snapshot), retried
// as write's transactions are; the root turns their rows into its own
// types.

// JobGet reads one job's row (get.sql).
func (e *Engine) JobGet(ctx context.Context, queue, id string) (engine.StateRow, bool, error) {
	s, err := read(ctx, e, func(ctx context.Context, db engine.Execer) (engine.StateRow, error) {
		return engine.ScanState(db.QueryRowContext(ctx, stmt("get"), queue, id))
	})
	if errors.Is(err, sql.ErrNoRows) {
		return engine.StateRow{}, false, nil
	}
	return s, err == nil, err
}

// JobList reads a page (list_all.sql, or list_status.sql for one status)
// after the job AfterID, whose enqueue order list_after.sql finds.
func (e *Engine) JobList(ctx context.Context, p engine.JobListParams) ([]engine.StateRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.StateRow, error) {
		return engine.List(ctx, db, listSQL, p)
	})
}

// listSQL are List's statements.
var listSQL = engine.ListSQL{After: stmt("list_after"), All: stmt("list_all"), Status: stmt("list_status"),
	KindAll: stmt("list_kind_all"), Kind: stmt("list_kind")}

// JobNextDue reads the head of leaseq_jobs_waiting (next_due.sql).
func (e *Engine) JobNextDue(ctx context.Context, queue string) (int64, bool, error) {
	due, err := read(ctx, e, func(ctx context.Context, db engine.Execer) (sql.NullInt64, error) {
		var due sql.NullInt64
		err := db.QueryRowContext(ctx, stmt("next_due"), queue).Scan(&due)
		return due, err
	})
	return due.Int64, due.Valid && err == nil, err
}

// QueueStats counts the queue's jobs (stats.go): of the pending and leased,
// how many and how many claimable at p.Now, and since when; the done and
// quarantined from leaseq_counts.
func (e *Engine) QueueStats(ctx context.Context, p engine.QueueStatsParams) (engine.StatsRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) (engine.StatsRow, error) {
		rows, err := db.QueryContext(ctx, stmt("stats"), p.Queue, p.Now)
		if err != nil {
			return engine.StatsRow{}, err
		}
		return engine.ScanStats(rows)
	})
}

// QueueActivity reads activity.sql's counts since p.Since.
func (e *Engine) QueueActivity(ctx context.Context, p engine.QueueActivityParams) ([]engine.ActivityRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.ActivityRow, error) {
		rows, err := db.QueryContext(ctx, stmt("activity"), p.Queue, p.Since)
		if err != nil {
			return nil, err
		}
		return engine.ScanActivity(rows)
	})
}

// QueueNames lists the queue names (queues.sql) in the database's
// collation order; none is an empty slice.
func (e *Engine) QueueNames(ctx context.Context) ([]string, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]string, error) {
		rows, err := db.QueryContext(ctx, stmt("queues"))
		if err != nil {
			return nil, err
		}
		return engine.ScanNames(rows)
	})
}

// DatabaseProblem is nothing on PostgreSQL: the schema is all a queue
// needs of the database.
func (e *Engine) DatabaseProblem(context.Context) (string, error) { return "", nil }
