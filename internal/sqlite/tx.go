package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	sqlite3 "modernc.org/sqlite/lib"
)

// This file and writeconn.go are where the engine begins, commits or rolls
// back a transaction of its own: every write goes through writeTx (group
// commit too, as one caller of it), every read through read, so the
// pitfalls below are handled once. The one transaction it does not own is
// the caller's of EnqueueTx, where JobInsertTx only sets a savepoint.
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
// The price of db.Conn is that Conn.Close returns the connection to the *sql.DB
// as it is, with a transaction still open if nobody rolled it back; the next
// user of that connection would then silently run inside it and hold the
// write lock forever. Every error path therefore ends in abort, which rolls
// back and, if even that fails, throws the connection away.
//
// A context cancelled while a statement runs interrupts it, and SQLite then
// rolls back the whole transaction on its own; later statements on the same
// connection would autocommit one by one. writeTx checks the context after
// the work function and never commits once it is done.

// txFunc is the one shape of a call's work inside a write transaction: its
// statements run on tx, on ctx, and it returns its result. It may run more
// than once (a transaction that hit SQLITE_BUSY is run again), so it must
// not have effects outside the transaction; the result of a call is the
// result of the try that ended it.
type txFunc[T any] func(ctx context.Context, tx engine.Execer) (T, error)

// idleFunc, where a call has one, decides from a read, without the write
// lock, that the call has nothing to do (an idle Claim; rule 23 in
// docs/rules.md). It runs on the write connection outside any transaction.
// It has the one shape, with idle as its result.
type idleFunc = txFunc[bool]

// errIdle is the outcome of a call that its idleFunc found idle.
var errIdle = errors.New("leaseq: nothing to do")

// write is what writeTx runs: run in the transaction, after idle (if set)
// found work. busy, if set, is handed the result and the error of each try
// that failed with SQLITE_BUSY, before the next; false ends the retries
// with that error (the group commit puts its calls back in the list there).
type write[T any] struct {
	idle idleFunc
	run  txFunc[T]
	busy func(T, error) bool
}

// writeTx runs w in one BEGIN IMMEDIATE transaction as the engine's only
// writer and commits it, retrying the whole transaction on SQLITE_BUSY
// until ctx ends. If w.idle reports the call idle, no transaction is begun
// and the error is errIdle. On any error the transaction is rolled back
// whole; once ctx is done the error is ctx's. The result is the last try's,
// also beside an error: a COMMIT whose outcome is unknown
// (errCommitUnknown) may have committed it.
func writeTx[T any](ctx context.Context, e *Engine, w write[T]) (T, error) {
	var b backoff
	for {
		var v T
		wc, err := e.takeTurn(ctx)
		if err == nil && w.idle != nil {
			err = idleErr(w.idle(ctx, wc))
		}
		if err == nil {
			var before uint32
			tm := startTxTimer()
			if before, err = wc.begin(ctx); err == nil {
				tm.lap(&tm.t.Begin)
				v, err = w.run(ctx, wc)
				tm.lap(&tm.t.Run)
				err = wc.end(ctx, before, err)
				tm.lap(&tm.t.End)
				tm.report()
				e.watch.committed(e.file, before, err) // watch.go
			} else if ctx.Err() != nil {
				b.locking = true // BEGIN IMMEDIATE waits for nothing but the lock
			}
			err = e.fileGone(err)
		}
		if wc != nil {
			e.leaveTurn(wc)
		}
		if isBusy(err) && w.busy != nil && !w.busy(v, err) {
			return v, err
		}
		if stop, err := b.done(ctx, err, isBusy); stop {
			return v, e.writeWait(err)
		}
	}
}

// TxTimes is how long the parts of one write transaction took: BEGIN
// IMMEDIATE with the read of the change counter, the statements, and
// COMMIT (or ROLLBACK).
type TxTimes struct{ Begin, Run, End time.Duration }

// txObserver, when set, is told every write transaction's TxTimes: for the
// root's benchmark that splits a worker pool's cycle into its parts
// (bench_cycle_test.go), and the bench's sleeping pool, which times its
// cycles' write transactions (bench/pool.go). Unset, writeTx reads no
// clock for it.
var txObserver atomic.Pointer[func(TxTimes)]

// ObserveTxs has f told the TxTimes of every write transaction of every
// engine from now on, and returns the function that stops it. For the
// benchmarks.
func ObserveTxs(f func(TxTimes)) (restore func()) {
	txObserver.Store(&f)
	return func() { txObserver.Store(nil) }
}

// txTimer times the parts of one transaction for txObserver.
type txTimer struct {
	f    func(TxTimes)
	last time.Time
	t    TxTimes
}

// startTxTimer starts timing a transaction, if an observer is set.
func startTxTimer() txTimer {
	f := txObserver.Load()
	if f == nil {
		return txTimer{}
	}
	return txTimer{f: *f, last: time.Now()}
}

// lap sets *d to the time since the last lap.
func (t *txTimer) lap(d *time.Duration) {
	if t.f != nil {
		now := time.Now()
		*d, t.last = now.Sub(t.last), now
	}
}

// report tells the observer the transaction's times.
func (t *txTimer) report() {
	if t.f != nil {
		t.f(t.t)
	}
}

// idleErr is an idle check's answer as writeTx's error: errIdle for idle.
func idleErr(idle bool, err error) error {
	if err == nil && idle {
		return errIdle
	}
	return err
}

// takeTurn waits for the writer's turn and returns the write connection.
// Writers of one process take turns here rather than on SQLite's file
// lock: the file lock is polled with sleeps, this one hands over at once.
// On an error it holds no turn.
func (e *Engine) takeTurn(ctx context.Context) (*writeConn, error) {
	select {
	case e.writer <- struct{}{}:
	case <-ctx.Done():
		return nil, &turnWait{ctx.Err()}
	}
	wc, err := e.writeConn(ctx)
	if err != nil {
		<-e.writer
	}
	return wc, err
}

// turnWait is the error of a call whose context ended while it waited for
// the writer's turn (rule 47 in docs/rules.md).
type turnWait struct{ cause error }

func (w *turnWait) Error() string {
	return "waiting for this process's writer turn on the database, which another call holds " +
		"(an InTx function, or a transaction waiting for the write lock): " + w.cause.Error()
}

func (w *turnWait) Unwrap() error { return w.cause }

// leaveTurn keeps wc pinned for the next transaction, or gives it back, and
// ends the writer's turn. A connection abort threw away is closed already;
// a failed transaction that was rolled back cleanly (a BUSY from another
// process, most often) keeps the connection and its prepared statements
// for the retry.
func (e *Engine) leaveTurn(wc *writeConn) {
	if wc.broken || !e.pinWriteConn() {
		e.dropWriteConn(wc)
	}
	<-e.writer
}

// begin starts a write transaction on wc and reads the file change
// counter, which afterFailedCommit compares. On an error nothing is open.
func (wc *writeConn) begin(ctx context.Context) (uint32, error) {
	clear(wc.swept)
	if _, err := wc.conn.ExecContext(ctx, stmt("begin")); err != nil {
		// A BEGIN interrupted by ctx may still have taken effect.
		return 0, wc.abort(err)
	}
	before, err := changeCounter(ctx, wc)
	if err != nil {
		return 0, wc.abort(err)
	}
	return before, nil
}

// end ends the transaction begun on wc whose work returned err: rolled back
// on an error or once ctx is done, else committed. COMMIT runs on a context
// that cannot be cancelled: interrupting it would leave the caller unable
// to tell whether it took effect, and a transaction that got this far
// should finish. Its wait for readers to leave is bounded by the busy
// timeout (none on a plain DSN, so BUSY comes back at once and the retry
// consults ctx).
func (wc *writeConn) end(ctx context.Context, before uint32, err error) error {
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return wc.abort(err)
	}
	_, err = wc.conn.ExecContext(context.WithoutCancel(ctx), stmt("commit"))
	switch {
	case err == nil:
		return nil
	case isBusy(err):
		// Nothing was written: the transaction is still open, and waits
		// for readers to leave. Roll back and let the retry try again.
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

// commitCheckWait bounds how long a failed COMMIT's outcome is looked for,
// whatever the caller's context says: the answer decides whether the
// caller's call took effect.
const commitCheckWait = 5 * time.Second

// changeCounter reads the file change counter on db. An empty file has no
// page 1 outside a write transaction: nothing was committed to it yet.
func changeCounter(ctx context.Context, db engine.Execer) (uint32, error) {
	var c []byte
	err := db.QueryRowContext(ctx, stmt("change_counter")).Scan(&c)
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
	var db engine.Execer = wc
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
