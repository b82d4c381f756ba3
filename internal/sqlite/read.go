package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// The reads never take the write lock: each is one statement, or two, on
// the *sql.DB, over an index that covers it.

// read runs fn on the *sql.DB, retrying SQLITE_BUSY (in rollback-journal mode
// a reader is locked out while another connection commits), and returns the
// last try's result. Its statements are prepared once per *sql.DB (readStmt).
func read[T any](ctx context.Context, e *Engine, fn txFunc[T]) (T, error) {
	v, err := retryBusyOnce(ctx, func() (T, error) { return fn(ctx, pooledReads{e}) })
	return v, e.readWait(err)
}

// readStmt returns query prepared on the *sql.DB. database/sql prepares it
// again on each connection it runs on, once: a read that polls (an idle
// worker's) or repeats (Get) parses its SQL once per connection, not per
// call.
func (e *Engine) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	e.readsMu.Lock()
	defer e.readsMu.Unlock()
	if st, ok := e.reads[query]; ok {
		return st, nil
	}
	st, err := e.dbh.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if e.reads == nil {
		e.reads = make(map[string]*sql.Stmt)
	}
	e.reads[query] = st
	return st, nil
}

// pooledReads runs statements prepared on the *sql.DB (see readStmt).
type pooledReads struct{ e *Engine }

// ExecContext runs query prepared on the *sql.DB.
func (r pooledReads) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := r.e.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs query prepared on the *sql.DB.
func (r pooledReads) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.e.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs query prepared on the *sql.DB.
func (r pooledReads) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := r.e.readStmt(ctx, query)
	if err != nil {
		// As in writeConn.QueryRowContext: the unprepared query reports
		// the same failure through Scan.
		return r.e.dbh.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// JobGet reads the row of job id in queue; found is false for an unknown
// ID.
func (e *Engine) JobGet(ctx context.Context, queue, id string) (engine.StateRow, bool, error) {
	s, err := read(ctx, e, func(ctx context.Context, db engine.Execer) (engine.StateRow, error) {
		return engine.ScanState(db.QueryRowContext(ctx, stmt("get"), queue, id))
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.StateRow{}, false, nil
	case err != nil:
		return engine.StateRow{}, false, err
	}
	return s, true, nil
}

// JobList reads a page of the queue's jobs in enqueue order: a range of
// leaseq_jobs_status, or four merged (every status). An AfterID not in the
// queue is an error wrapping engine.ErrNotFound.
func (e *Engine) JobList(ctx context.Context, p engine.JobListParams) ([]engine.StateRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.StateRow, error) {
		return engine.List(ctx, db, listSQL, p)
	})
}

// listSQL are List's statements.
var listSQL = engine.ListSQL{After: stmt("list_after"), All: stmt("list_all"), Status: stmt("list_status"),
	KindAll: stmt("list_kind_all"), Kind: stmt("list_kind")}

// JobNextDue is the earliest instant a delayed job or a lease of queue
// becomes claimable: the head of leaseq_jobs_waiting.
func (e *Engine) JobNextDue(ctx context.Context, queue string) (int64, bool, error) {
	due, err := read(ctx, e, func(ctx context.Context, db engine.Execer) (sql.NullInt64, error) {
		var due sql.NullInt64
		err := db.QueryRowContext(ctx, stmt("next_due"), queue).Scan(&due)
		return due, err
	})
	if err != nil {
		return 0, false, err
	}
	return due.Int64, due.Valid, nil
}

// QueueStats counts the queue's jobs by status at p.Now, in one statement:
// the pending and leased from their index entries, the done and
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

// QueueActivity counts the queue's events by minute since p.Since, in one
// statement over index entries only.
func (e *Engine) QueueActivity(ctx context.Context, p engine.QueueActivityParams) ([]engine.ActivityRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.ActivityRow, error) {
		rows, err := db.QueryContext(ctx, stmt("activity"), p.Queue, p.Since)
		if err != nil {
			return nil, err
		}
		return engine.ScanActivity(rows)
	})
}

// QueueNames lists the names of the queues that have jobs, one index probe
// per queue, in SQLite's collation order (byte order, BINARY). It runs on
// db unprepared, as the root's Queues did.
func (e *Engine) QueueNames(ctx context.Context) ([]string, error) {
	names, err := retryBusyOnce(ctx, func() ([]string, error) {
		rows, err := e.dbh.QueryContext(ctx, stmt("queues"))
		if err != nil {
			return nil, err
		}
		return engine.ScanNames(rows)
	})
	return names, e.readWait(err)
}
