package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// The service's transactions (rules 43–47 in docs/rules.md): InTx and
// FinishTx hand the engine a function of the service's, which it runs on a
// transaction of its own choosing — on SQLite inside the writer's turn,
// shared with other calls, in a savepoint of its own.

// TxFunc is the service's function: its statements go through tx. Its
// error is the call's own (TxOutcome.FnErr), and nothing it wrote is kept.
// It may run more than once, when the transaction fails as a whole and is
// run again.
type TxFunc func(ctx context.Context, tx *Tx) error

// TxRunParams are TxRun's.
type TxRunParams struct {
	Queue Queue
	// Finish, if not nil, is a claim's Finish fenced around Fn (FinishTx):
	// its fence is checked before Fn runs, which is not run when it
	// refuses, and the Finish runs after Fn, judged at the clock read
	// then; refused, Fn's writes are rolled back.
	Finish *Fenced
	Fn     TxFunc
}

// TxOutcome is what TxRun did, when it answers no error: Fn's error (then
// nothing of it was written), or the Finish refused (before Fn ran, or
// after: nothing written either), or everything committed.
type TxOutcome struct {
	FnErr   error
	Refused bool
	// Err is the call's own error when the rest of its transaction went
	// on: its context ended before its Finish was judged, or by then.
	// Nothing of it was written.
	Err error
}

// Accepted reports whether the call committed: Fn and the Finish, if any.
func (o TxOutcome) Accepted() bool { return o.FnErr == nil && !o.Refused && o.Err == nil }

// Tx is the transaction a TxFunc gets: the statements of the service and
// the queue's inserts, on the engine's transaction. Statements run on the
// engine's context for the transaction (on SQLite a shared transaction's
// committer's, which nobody cancels: an interrupted statement would roll
// back the other calls' work too), after a look at the context they were
// given, so a caller that left stops at the next statement. After the
// function returned, every method fails with sql.ErrTxDone, and the Rows
// it left open are closed.
type Tx struct {
	run    context.Context
	ex     Execer
	pool   *sql.DB
	insert func(ctx context.Context, ex Execer, jobs []JobRow) (int, error)
	// explain, if not nil, is the engine's word on a statement of the
	// service's that failed: its error, or one that wraps it and says what
	// was wrong with the statement. Called on failures only.
	explain func(query string, err error) error

	mu       sync.Mutex
	done     bool
	rows     []*sql.Rows
	enqueued bool
}

// NewTx is the Tx of a TxFunc whose statements run on ex with the context
// run, and whose inserts are insert's, under a savepoint on ex. pool is
// the database's: a Row refused before its query is made there (see
// QueryRowContext). explain, if not nil, says what was wrong with a
// statement that failed (see Tx.explain).
func NewTx(run context.Context, ex Execer, pool *sql.DB, insert func(ctx context.Context, ex Execer, jobs []JobRow) (int, error),
	explain func(query string, err error) error) *Tx {
	return &Tx{run: run, ex: ex, pool: pool, insert: insert, explain: explain}
}

// explained is err of the statement query, as the engine explains it.
func (t *Tx) explained(query string, err error) error {
	if err == nil || t.explain == nil {
		return err
	}
	return t.explain(query, err)
}

// usable is the error of a statement on t with ctx: the function returned,
// or ctx ended.
func (t *Tx) usable(ctx context.Context) error {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done {
		return sql.ErrTxDone
	}
	if ctx == nil {
		return Invalid("ctx is nil")
	}
	return ctx.Err()
}

// ExecContext runs a statement in the transaction.
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.usable(ctx); err != nil {
		return nil, err
	}
	res, err := t.ex.ExecContext(t.run, query, args...)
	return res, t.explained(query, err)
}

// QueryContext runs a query in the transaction; the Rows are closed when
// the function returns, if it did not close them.
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := t.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := t.ex.QueryContext(t.run, query, args...)
	if err != nil {
		return nil, t.explained(query, err)
	}
	t.mu.Lock()
	t.rows = append(t.rows, rows)
	t.mu.Unlock()
	return rows, nil
}

// QueryRowContext runs a query of one row in the transaction. A Row that
// was never scanned holds its statement open on the connection: scan it.
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := t.usable(ctx); err != nil {
		// A Row carries only the error of a query: the pool's, on a context
		// that has ended, fails before it takes a connection. Never the
		// transaction's connection, whose statements an interrupt could
		// reach.
		if ctx == nil || ctx.Err() == nil {
			done, cancel := context.WithCancel(context.Background())
			cancel()
			ctx = done
		}
		return t.pool.QueryRowContext(ctx, "SELECT 1")
	}
	row := t.ex.QueryRowContext(t.run, query, args...)
	if err := row.Err(); err != nil {
		if why := t.explained(query, err); why != err {
			return errRow(why)
		}
	}
	return row
}

// errRow is a Row whose Scan returns err. database/sql makes a Row only
// of a query, so it is a query on a pool whose every connection fails
// with err, which database/sql hands back as it is; the pool holds no
// connection and is closed at once.
func errRow(err error) *sql.Row {
	db := sql.OpenDB(errConnector{err})
	defer db.Close()
	return db.QueryRowContext(context.Background(), "")
}

// errConnector is a driver.Connector that connects to nothing, failing
// with err (errRow).
type errConnector struct{ err error }

func (c errConnector) Connect(context.Context) (driver.Conn, error) { return nil, c.err }
func (c errConnector) Driver() driver.Driver                        { return c }
func (c errConnector) Open(string) (driver.Conn, error)             { return nil, c.err }

// Insert writes jobs in the transaction, all or none (under a savepoint:
// on an error none is written and the transaction goes on); bad is as in
// JobInsertMany.
func (t *Tx) Insert(ctx context.Context, jobs []JobRow) (bad int, err error) {
	if err := t.usable(ctx); err != nil {
		return -1, err
	}
	bad, err = t.insert(t.run, t.ex, jobs)
	if err == nil {
		t.mu.Lock()
		t.enqueued = true
		t.mu.Unlock()
	}
	return bad, err
}

// End ends the function's use of t: its open Rows are closed, and later
// calls fail. It reports whether the function enqueued a job.
func (t *Tx) End() (enqueued bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	for _, r := range t.rows {
		err = errors.Join(err, r.Close())
	}
	t.rows = nil
	return t.enqueued, err
}
