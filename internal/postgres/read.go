package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// The reads run on the pool, each one statement (so one snapshot), retried
// as write's transactions are; the root turns their rows into its own
// types.

// scanState reads one row of get.sql's columns.
func scanState(row interface{ Scan(...any) error }) (engine.StateRow, error) {
	var s engine.StateRow
	err := row.Scan(&s.ID, &s.Queue, &s.Qty, &s.Payload, &s.Status, &s.Owner, &s.Token, &s.Attempts,
		&s.MaxAttempts, &s.LeaseUntil, &s.Deadline, &s.RunAt, &s.Priority, &s.Reason, &s.Created, &s.Updated, &s.Kind)
	if err != nil {
		return engine.StateRow{}, err
	}
	if len(s.Payload) == 0 {
		s.Payload = nil
	}
	return s, nil
}

// JobGet reads one job's row (get.sql).
func (e *Engine) JobGet(ctx context.Context, queue, id string) (engine.StateRow, bool, error) {
	s, err := read(ctx, e, func(ctx context.Context, db engine.Execer) (engine.StateRow, error) {
		return scanState(db.QueryRowContext(ctx, stmt("get"), queue, id))
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
		var after int64
		if p.AfterID != "" {
			err := db.QueryRowContext(ctx, stmt("list_after"), p.Queue, p.AfterID).Scan(&after)
			if errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("AfterID %q: %w", p.AfterID, engine.ErrNotFound)
			} else if err != nil {
				return nil, err
			}
		}
		query, args := listQuery(p, after)
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		return scanStates(rows)
	})
}

// listQuery is the statement of List's page p after the seq after, with
// its arguments: by kind (rule 50) a range of leaseq_jobs_kind, else of
// leaseq_jobs_status.
func listQuery(p engine.JobListParams, after int64) (string, []any) {
	switch {
	case p.Kind != "" && p.Status != "":
		return stmt("list_kind"), []any{p.Queue, p.Kind, p.Status, after, p.Limit}
	case p.Kind != "":
		return stmt("list_kind_all"), []any{p.Queue, p.Kind, after, p.Limit}
	case p.Status != "":
		return stmt("list_status"), []any{p.Queue, p.Status, after, p.Limit}
	}
	return stmt("list_all"), []any{p.Queue, after, p.Limit}
}

// scanStates reads rows of get.sql's columns.
func scanStates(rows *sql.Rows) ([]engine.StateRow, error) {
	defer rows.Close()
	var page []engine.StateRow
	for rows.Next() {
		s, err := scanState(rows)
		if err != nil {
			return nil, err
		}
		page = append(page, s)
	}
	return page, rows.Err()
}

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
		return scanStats(rows)
	})
}

// scanStats reads stats.sql's rows.
func scanStats(rows *sql.Rows) (engine.StatsRow, error) {
	defer rows.Close()
	st := engine.StatsRow{Counts: map[string]int{}, Claimable: map[string]int{}}
	for rows.Next() {
		var status string
		var n, due int
		var oldest sql.NullInt64
		if err := rows.Scan(&status, &n, &due, &oldest); err != nil {
			return engine.StatsRow{}, err
		}
		st.Counts[status], st.Claimable[status] = n, due
		waiting := status == "pending" || status == "leased"
		if waiting && oldest.Valid && (!st.OldestReady.Valid || oldest.Int64 < st.OldestReady.Int64) {
			st.OldestReady = oldest
		}
	}
	if err := rows.Err(); err != nil {
		return engine.StatsRow{}, err
	}
	return st, nil
}

// QueueActivity reads activity.sql's counts since p.Since.
func (e *Engine) QueueActivity(ctx context.Context, p engine.QueueActivityParams) ([]engine.ActivityRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.ActivityRow, error) {
		rows, err := db.QueryContext(ctx, stmt("activity"), p.Queue, p.Since)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []engine.ActivityRow
		for rows.Next() {
			var r engine.ActivityRow
			if err := rows.Scan(&r.Kind, &r.Minute, &r.N); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
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
		defer rows.Close()
		names := []string{}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		return names, rows.Err()
	})
}

// DatabaseProblem is nothing on PostgreSQL: the schema is all a queue
// needs of the database.
func (e *Engine) DatabaseProblem(context.Context) (string, error) { return "", nil }
