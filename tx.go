package leaseq

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file is the only place that begins, commits or rolls back a
// transaction. Every write of the queue goes through writeTx, every read
// through read, so the pitfalls below are handled once.
//
// Why not db.BeginTx? database/sql cannot ask for BEGIN IMMEDIATE: the
// modernc driver issues it only when the DSN says _txlock=immediate, and
// leaseq must also be correct on a caller's own *sql.DB opened with a plain
// DSN. A deferred BEGIN followed by a write is worse than slow: the
// read-to-write lock upgrade returns SQLITE_BUSY at once, whatever the busy
// timeout, because waiting could deadlock. So writeTx takes one connection
// with db.Conn (kept between transactions; see writeConn) and runs BEGIN
// IMMEDIATE on it itself, which takes the RESERVED lock before anything is
// read: selection and update can never be split (rule 1 in docs/rules.md).
//
// The price of db.Conn is that Conn.Close returns the connection to the pool
// as it is, with a transaction still open if nobody rolled it back; the next
// user of that connection would then silently run inside it and hold the
// write lock forever. Every error path therefore ends in abort, which rolls
// back and, if even that fails, throws the connection away.
//
// A context cancelled while a statement runs interrupts it, and SQLite then
// rolls back the whole transaction on its own; later statements on the same
// connection would autocommit one by one. writeTx checks the context after
// the work function and never commits once it is done.
//
// SQLITE_BUSY is retried here, with a capped, jittered backoff, until the
// caller's context ends: a plain-DSN *sql.DB has no busy timeout at all, and
// one opened by Open gives up after its timeout even though the caller may be
// willing to wait longer. The caller sees "database is locked" never, and its
// context's error once it gives up.

// execer is what the statements of a transaction run on (a *writeConn
// inside writeTx, the *sql.DB for reads, a caller's *sql.Tx in EnqueueTx).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// txFunc is the one shape of a call's work inside a write transaction: its
// statements run on tx, on ctx. It may run more than once (a transaction
// that hit SQLITE_BUSY is run again), so it must not have effects outside
// the transaction.
type txFunc func(ctx context.Context, tx execer) error

// idleFunc, where a call has one, decides from a read, without the write
// lock, that the call has nothing to do (an idle Claim; rule 23 in docs/rules.md). It runs on the write connection outside any transaction.
type idleFunc func(ctx context.Context, db execer) (idle bool, err error)

// errIdle is the outcome of a call that its idleFunc found idle. It is an
// error, not nil, because fn may have run in an earlier try that was rolled
// back (SQLITE_BUSY at COMMIT) before the retry found nothing to do: what
// that try left in the caller's variables never happened.
var errIdle = errors.New("leaseq: nothing to do")

// writeTx runs fn inside one BEGIN IMMEDIATE transaction and commits it,
// retrying the whole transaction on SQLITE_BUSY. If idle is not nil and
// reports the call idle, no transaction is begun and the result is errIdle.
// On any error the transaction is rolled back whole; once ctx is done the
// error is ctx's.
func (s *store) writeTx(ctx context.Context, idle idleFunc, fn txFunc) error {
	return retryBusy(ctx, func() error {
		return s.asWriter(ctx, func() error {
			wc, err := s.writeConn(ctx)
			if err != nil {
				return err
			}
			if idle != nil {
				done, err := idle(ctx, wc)
				if err == nil && done {
					err = errIdle
				}
				if err != nil {
					s.afterTx(wc)
					return err
				}
			}
			return s.immediate(ctx, wc, fn)
		})
	})
}

// asWriter runs do as the store's only writer. Writers of one process take
// turns here rather than on SQLite's file lock: the file lock is polled with
// sleeps, this one hands over at once.
func (s *store) asWriter(ctx context.Context, do func() error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writer }()
	return do()
}

// immediate is one try of a write transaction on wc. The caller holds the
// writer's turn.
func (s *store) immediate(ctx context.Context, wc *writeConn, fn txFunc) error {
	err := wc.transaction(ctx, fn)
	s.afterTx(wc)
	return s.fileGone(err)
}

// afterTx keeps wc pinned for the next transaction, or gives it back. A
// connection abort threw away is closed already; a failed transaction that
// was rolled back cleanly (a BUSY from another process, most often) keeps
// the connection and its prepared statements for the retry.
func (s *store) afterTx(wc *writeConn) {
	if wc.broken || !s.pinWriteConn() {
		s.dropWriteConn(wc)
	}
}

// transaction runs fn between BEGIN IMMEDIATE and COMMIT on wc.
func (wc *writeConn) transaction(ctx context.Context, fn txFunc) error {
	clear(wc.swept)
	if _, err := wc.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		// A BEGIN interrupted by ctx may still have taken effect.
		return wc.abort(err)
	}
	before, err := changeCounter(ctx, wc)
	if err == nil {
		err = fn(ctx, wc)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return wc.abort(err)
	}
	// COMMIT runs on a context that cannot be cancelled. Interrupting a
	// COMMIT leaves the caller unable to tell whether it took effect; a
	// transaction that got this far should finish. Its wait for readers to
	// leave is bounded by the busy timeout (none on a plain DSN, so BUSY
	// comes back at once and retryBusy consults ctx).
	_, err = wc.conn.ExecContext(context.WithoutCancel(ctx), "COMMIT")
	switch {
	case err == nil:
		return nil
	case isBusy(err):
		// Nothing was written: the transaction is still open, and waits
		// for readers to leave. Roll back and let retryBusy try again.
		return wc.abort(err)
	}
	return wc.afterFailedCommit(ctx, before, wc.abort(err))
}

// A COMMIT that fails with anything but SQLITE_BUSY may have committed. In
// DELETE journal mode the commit point is the journal's deletion: when
// someone else deleted the journal first, COMMIT fails with
// SQLITE_IOERR_DELETE_NOENT, "disk I/O error (5898)", for a transaction that
// is in the file and will stay there. Other I/O errors past the point where
// the file was written (an unlock, a journal that could not be truncated or
// zeroed) leave a hot journal that the next reader rolls back, or not. A
// caller told "failed" about a transaction that committed would enqueue a
// duplicate, or leave a claim leased that nobody holds. So the answer comes
// from the file: the change counter in its header (bytes 24–27), which
// every committed write transaction advances by one, read once the
// transaction has begun and again after the failure. The read after it
// runs hot-journal recovery first, so it sees what every later reader will
// see.
//
// The failed COMMIT released the lock, so another process may commit before
// the read back. A counter that moved by one is then either this
// transaction or that one; it is taken for this one (the read runs at once:
// the other process would have had to take the lock, write and sync its
// whole transaction in those microseconds), and for SQLITE_IOERR_DELETE_NOENT
// it is certain, as the file was written and synced before the journal was
// found gone. A counter that moved by more, after any other error, is
// reported as an unknown outcome.

// errCommitUnknown is wrapped by the error of a transaction whose COMMIT
// failed and whose outcome the file could not tell.
var errCommitUnknown = errors.New("whether it took effect is unknown")

// changeCounterSQL reads the file change counter, through SQLite's pager so
// that it is read under the connection's lock.
const changeCounterSQL = "SELECT substr(data, 25, 4) FROM sqlite_dbpage WHERE pgno = 1"

// commitCheckWait bounds how long a failed COMMIT's outcome is looked for,
// whatever the caller's context says: the answer decides whether the
// caller's call took effect.
const commitCheckWait = 5 * time.Second

// changeCounter reads the file change counter on db. An empty file has no
// page 1 outside a write transaction: nothing was committed to it yet.
func changeCounter(ctx context.Context, db execer) (uint32, error) {
	var c []byte
	err := db.QueryRowContext(ctx, changeCounterSQL).Scan(&c)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, err
	}
	if len(c) != 4 {
		return 0, fmt.Errorf("the file change counter is %d bytes, not 4", len(c))
	}
	return binary.BigEndian.Uint32(c), nil
}

// afterFailedCommit decides the outcome of a transaction whose COMMIT failed
// with cause, given the change counter read after its BEGIN: nil if the
// file shows it committed, cause if it shows it did not, and an error
// saying that the outcome is unknown if the file cannot tell.
func (wc *writeConn) afterFailedCommit(ctx context.Context, before uint32, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitCheckWait)
	defer cancel()
	var db execer = wc
	if wc.broken {
		db = wc.pool
	}
	after, err := retryBusyOnce(ctx, func() (uint32, error) { return changeCounter(ctx, db) })
	if err != nil {
		return fmt.Errorf("commit failed (%w), and %w: the file could not be read back: %v", cause, errCommitUnknown, err)
	}
	switch moved := after - before; {
	case moved == 0:
		return cause
	case moved == 1 || isCode(cause, sqlite3.SQLITE_IOERR_DELETE_NOENT):
		return nil
	default:
		return fmt.Errorf("commit failed (%w), and %w: the file counts %d commits since it began, so other writers committed too",
			cause, errCommitUnknown, moved)
	}
}

// writeConn is the connection a Queue's write transactions run on, with the
// statements prepared on it. With modernc, preparing a statement (parse,
// plan, code generation) costs about three times as much as running one of
// the queue's, so a Claim that prepared its three statements afresh would
// spend more on parsing than on its work. The Queue therefore keeps one
// connection for its writes, and their prepared statements, from one
// transaction to the next while writes keep coming, and gives it back to the
// pool after writeConnIdle without one.
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
	// transaction last ran the claim sweeps (claim.go, sweptAt); reset at
	// every BEGIN.
	swept map[string]int64
}

// pinMinPool is the smallest pool cap (0 means none) that allows pinning a
// write connection.
const pinMinPool = 4

// writeConnIdle is how long an unused write connection stays pinned. New
// copies it into the Queue; it is a variable only so that a test need not
// wait a second.
var writeConnIdle = time.Second

// writeConn returns the pinned write connection, taking one from the pool
// if there is none. A connection taken from the pool is checked for a
// rollback journal (a database switched to WAL after New is refused here),
// and a pinned one is not used once db.Close has been called. The caller
// holds the writer's turn.
func (s *store) writeConn(ctx context.Context) (*writeConn, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if err := dbClosed(s.dbh); err != nil {
		if s.wc != nil {
			s.dropWriteConn(s.wc)
		}
		return nil, err
	}
	if s.wc != nil {
		return s.wc, nil
	}
	conn, err := s.dbh.Conn(ctx)
	if err != nil {
		return nil, err
	}
	wc := &writeConn{conn: conn, pool: s.dbh}
	why, err := retryBusyOnce(ctx, func() (string, error) { return journalProblem(ctx, wc) })
	if err == nil && why != "" {
		err = fmt.Errorf("%s: %w", why, ErrInvalid)
	}
	if err != nil {
		s.dropWriteConn(wc)
		return nil, err
	}
	s.wc = wc
	return wc, nil
}

// pinWriteConn reports whether the write connection may stay pinned after a
// transaction, and if so marks it used.
func (s *store) pinWriteConn() bool {
	if max := s.dbh.Stats().MaxOpenConnections; max != 0 && max < pinMinPool {
		return false
	}
	wc := s.wc
	if wc == nil {
		return false
	}
	wc.used = time.Now()
	if wc.idle == nil {
		wc.idle = time.AfterFunc(s.writeIdle, func() { s.releaseIdle(wc) })
	}
	return true
}

// releaseIdle gives wc back to the pool if it has not been used for
// writeConnIdle, or looks again when that much time will have passed.
func (s *store) releaseIdle(wc *writeConn) {
	s.writer <- struct{}{}
	defer func() { <-s.writer }()
	if s.wc != wc {
		return // dropped already
	}
	if wait := s.writeIdle - time.Since(wc.used); wait > 0 {
		wc.idle.Reset(wait)
		return
	}
	s.dropWriteConn(wc)
}

// dropWriteConn closes wc's statements and gives its connection back. The
// caller holds the writer's turn.
func (s *store) dropWriteConn(wc *writeConn) {
	if wc.idle != nil {
		wc.idle.Stop()
	}
	for _, st := range wc.stmts {
		st.Close()
	}
	wc.conn.Close()
	if s.wc == wc {
		s.wc = nil
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

func (wc *writeConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	s, err := wc.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (wc *writeConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := wc.prepared(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

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
// to the pool inside a transaction.
func (wc *writeConn) abort(cause error) error {
	_, err := wc.conn.ExecContext(context.Background(), "ROLLBACK")
	if err != nil && !strings.Contains(err.Error(), "no transaction is active") {
		_ = wc.conn.Raw(func(any) error { return driver.ErrBadConn })
		wc.broken = true
	}
	return cause
}

// read runs a read on the pool, retrying SQLITE_BUSY: in rollback-journal
// mode a reader is locked out while another connection commits. Its
// statements are prepared once per pool (readStmt).
func (s *store) read(ctx context.Context, fn func(db execer) error) error {
	return retryBusy(ctx, func() error { return fn(pooledReads{s}) })
}

// pooledReads runs statements prepared on the pool (see readStmt).
type pooledReads struct{ s *store }

func (r pooledReads) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := r.s.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (r pooledReads) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.s.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (r pooledReads) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := r.s.readStmt(ctx, query)
	if err != nil {
		// As in writeConn.QueryRowContext: the unprepared query reports
		// the same failure through Scan.
		return r.s.dbh.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// retryBusyOnce is retryBusy for an operation that returns a value.
func retryBusyOnce[T any](ctx context.Context, op func() (T, error)) (T, error) {
	var v T
	err := retryBusy(ctx, func() error {
		var err error
		v, err = op()
		return err
	})
	return v, err
}

// Backoff bounds for retryBusy. The cap is short because a commit here
// holds the lock for a couple of milliseconds, not seconds.
const (
	busyDelayMin = 500 * time.Microsecond
	busyDelayMax = 16 * time.Millisecond
)

// retryBusy runs op until it returns something other than SQLITE_BUSY or ctx
// ends. Once ctx is done a failed op reports ctx's error, not the interrupt
// or lock error it caused.
func retryBusy(ctx context.Context, op func() error) error {
	return retryWhile(ctx, isBusy, op)
}

// retryWhile runs op until it returns an error again says no to, or nil, or
// ctx ends, with a capped, jittered backoff between tries.
func retryWhile(ctx context.Context, again func(error) bool, op func() error) error {
	delay := busyDelayMin
	for {
		err := op()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !again(err) {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		delay = min(2*delay, busyDelayMax)
	}
}

// isBusy reports whether err is SQLITE_BUSY in any of its extended forms.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isCode reports whether err is SQLite's extended result code code, such as
// sqlite3.SQLITE_CONSTRAINT_UNIQUE.
func isCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}
