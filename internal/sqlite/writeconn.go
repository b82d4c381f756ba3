package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// writeConn is the connection the engine's write transactions run on, with
// the statements prepared on it. With modernc, preparing a statement
// (parse, plan, code generation) costs about three times as much as running
// one of the queue's, so a Claim that prepared its three statements afresh
// would spend more on parsing than on its work. The engine therefore keeps
// one connection for its writes, and their prepared statements, from one
// transaction to the next while writes keep coming, and gives it back to
// the *sql.DB after writeConnIdle without one.
//
// A reset prepared statement holds no lock, so keeping them between
// transactions does not get in the way of other connections or processes.
// A pool capped below pinMinPool connections is not pinned: the connection
// held between writes could be one that the caller's own queries, or Get,
// wait for. Only the holder of the writer's turn touches a writeConn.
type writeConn struct {
	conn  *sql.Conn
	pool  *sql.DB // conn's, for reads once conn is thrown away
	stmts map[string]*sql.Stmt
	used  time.Time   // when the last transaction on it ended
	idle  *time.Timer // gives the connection back after writeConnIdle unused
	// broken means abort threw the connection away.
	broken bool
	// swept is, per queue name, the instant at which the current
	// transaction last ran the claim sweeps (see sweptAt); reset at every
	// BEGIN.
	swept map[string]int64
}

// pinMinPool is the smallest pool cap (0 means none) that allows pinning a
// write connection.
const pinMinPool = 4

// writeConnIdle is how long an unused write connection stays pinned. New
// copies it into the engine; it is a variable only so that a test need not
// wait a second.
var writeConnIdle = time.Second

// SetWriteConnIdle sets how long an unused write connection stays pinned in
// engines made from now on, and returns the function that restores it. For
// the root's tests.
func SetWriteConnIdle(d time.Duration) (restore func()) {
	old := writeConnIdle
	writeConnIdle = d
	return func() { writeConnIdle = old }
}

// writeConn returns the pinned write connection, taking one from the *sql.DB
// if there is none. A connection taken from the *sql.DB is checked for a
// rollback journal (a database switched to WAL after New is refused here),
// and a pinned one is not used once db.Close has been called. The caller
// holds the writer's turn.
func (e *Engine) writeConn(ctx context.Context) (*writeConn, error) {
	if e.closed {
		return nil, engine.ErrClosed
	}
	if err := engine.Closed(e.dbh); err != nil {
		if e.wc != nil {
			e.dropWriteConn(e.wc)
		}
		return nil, err
	}
	if e.wc != nil {
		return e.wc, nil
	}
	conn, err := e.dbh.Conn(ctx)
	if err != nil {
		return nil, err
	}
	wc := &writeConn{conn: conn, pool: e.dbh}
	why, err := retryBusyOnce(ctx, func() (string, error) { return journalProblem(ctx, wc) })
	if err == nil && why != "" {
		err = engine.Invalid("%s", why)
	}
	if err != nil {
		e.dropWriteConn(wc)
		return nil, err
	}
	e.wc = wc
	return wc, nil
}

// pinWriteConn reports whether the write connection may stay pinned after a
// transaction, and if so marks it used.
func (e *Engine) pinWriteConn() bool {
	if max := e.dbh.Stats().MaxOpenConnections; max != 0 && max < pinMinPool {
		return false
	}
	wc := e.wc
	if wc == nil {
		return false
	}
	wc.used = time.Now()
	if wc.idle == nil {
		wc.idle = time.AfterFunc(e.writeIdle, func() { e.releaseIdle(wc) })
	}
	return true
}

// releaseIdle gives wc back to the *sql.DB if it has not been used for
// writeConnIdle, or looks again when that much time will have passed.
func (e *Engine) releaseIdle(wc *writeConn) {
	e.writer <- struct{}{}
	defer func() { <-e.writer }()
	if e.wc != wc {
		return // dropped already
	}
	if wait := e.writeIdle - time.Since(wc.used); wait > 0 {
		wc.idle.Reset(wait)
		return
	}
	e.dropWriteConn(wc)
}

// dropWriteConn closes wc's statements and gives its connection back. The
// caller holds the writer's turn.
func (e *Engine) dropWriteConn(wc *writeConn) {
	if wc.idle != nil {
		wc.idle.Stop()
	}
	for _, st := range wc.stmts {
		st.Close()
	}
	wc.conn.Close()
	if e.wc == wc {
		e.wc = nil
	}
}

// prepared returns query prepared on the write connection.
func (wc *writeConn) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := wc.stmts[query]; ok {
		return s, nil
	}
	s, err := wc.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if wc.stmts == nil {
		wc.stmts = make(map[string]*sql.Stmt)
	}
	wc.stmts[query] = s
	return s, nil
}

// ExecContext runs query prepared on the write connection.
func (wc *writeConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := wc.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// QueryContext runs query prepared on the write connection.
func (wc *writeConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := wc.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext runs query prepared on the write connection.
func (wc *writeConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := wc.prepared(ctx, query)
	if err != nil {
		// A *sql.Row cannot be made to carry err; running the query
		// unprepared reports the same failure through Scan.
		return wc.conn.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// abort rolls back whatever transaction wc may hold and returns cause. If
// the rollback itself fails for any reason but "no transaction is active"
// (SQLite may already have rolled back on an interrupt or an I/O error), the
// connection is discarded, and wc marked broken, so that it never goes back
// to the *sql.DB inside a transaction.
func (wc *writeConn) abort(cause error) error {
	_, err := wc.conn.ExecContext(context.Background(), stmt("rollback"))
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		_ = wc.conn.Raw(func(any) error { return driver.ErrBadConn })
		wc.broken = true
	}
	return cause
}
