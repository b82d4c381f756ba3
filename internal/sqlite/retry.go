package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLITE_BUSY is retried by the engine, with a capped, jittered backoff,
// until the caller's context ends: a plain-DSN *sql.DB has no busy timeout
// at all, and one opened by Open gives up after its timeout even though the
// caller may be willing to wait longer. The caller sees "database is
// locked" never, and its context's error once it gives up.

// Backoff bounds for the retries. The cap is short because a commit here
// holds the lock for a couple of milliseconds, not seconds.
const (
	busyDelayMin = 500 * time.Microsecond
	busyDelayMax = 16 * time.Millisecond
)

// backoff is the wait between the tries of one retried operation. waited
// is the last SQLITE_BUSY of its tries, and locking says that a try waited
// for the file's write lock when ctx ended, for the error then (rule 47 in
// docs/rules.md).
type backoff struct {
	delay   time.Duration
	waited  error
	locking bool
	reading bool // the operation reads: its wait is to read, not for the write lock
}

// done decides after a try that ended with err: stop with nil on success,
// with ctx's error once ctx is done (not the interrupt or lock error it
// caused), with err when again says no to it; otherwise it sleeps, capped
// and jittered, and says to try again.
func (b *backoff) done(ctx context.Context, err error, again func(error) bool) (bool, error) {
	if isBusy(err) {
		b.waited = err
	}
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil && errors.As(err, new(*turnWait)) && b.waited == nil:
		return true, err // it says what it waited for
	case ctx.Err() != nil:
		return true, b.ctxErr(ctx)
	case !again(err):
		return true, err
	}
	if b.delay == 0 {
		b.delay = busyDelayMin
	}
	t := time.NewTimer(b.delay/2 + rand.N(b.delay))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return true, b.ctxErr(ctx)
	}
	b.delay = min(2*b.delay, busyDelayMax)
	return false, nil
}

// retryBusyOnce runs op until it returns something other than SQLITE_BUSY
// or ctx ends, and returns its last result.
func retryBusyOnce[T any](ctx context.Context, op func() (T, error)) (T, error) {
	b := backoff{reading: true} // every caller reads
	for {
		v, err := op()
		if stop, err := b.done(ctx, err, isBusy); stop {
			return v, err
		}
	}
}

// retryBusy is retryBusyOnce for an operation with no result.
func retryBusy(ctx context.Context, op func() error) error {
	_, err := retryBusyOnce(ctx, func() (struct{}, error) { return struct{}{}, op() })
	return err
}

// isBusy reports whether err is SQLITE_BUSY in any of its extended forms.
func isBusy(err error) bool {
	if err == nil {
		return false // before errors.As, whose target would escape on every call
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isCode reports whether err is SQLite's extended result code code, such as
// sqlite3.SQLITE_CONSTRAINT_UNIQUE.
func isCode(err error, code int) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == code
}

// ctxErr is ctx's error as the answer of the operation, saying that it
// waited for the write lock if it did (rule 47).
func (b *backoff) ctxErr(ctx context.Context) error {
	switch {
	case b.waited == nil && !b.locking:
		return ctx.Err()
	case b.reading:
		return readWaitError(ctx.Err(), b.waited)
	}
	return lockWaitError(ctx.Err(), b.waited)
}

// lockWaitError is the error of a call whose context ended, cause, while
// it waited for the file's write lock, whose last refusal was lockErr (nil:
// none yet, the first wait was cut short): both are wrapped, so errors.Is
// finds the context's error and errors.As the driver's (rule 47).
func lockWaitError(cause, lockErr error) error {
	return waitError("waiting for the database's write lock, which another connection holds "+
		"(a transaction of the caller's own, an open *sql.Rows, another process)", cause, lockErr)
}

// readWaitError is lockWaitError for a read: in rollback-journal mode a
// read waits while another connection holds the file locked to write it
// (its commit under way, or a transaction begun EXCLUSIVE).
func readWaitError(cause, lockErr error) error {
	return waitError("waiting to read the database, which another connection holds locked while it writes "+
		"(a commit under way, or a transaction begun EXCLUSIVE; another process's, or the caller's own)", cause, lockErr)
}

// waitError is the error of a call whose context ended, cause, while it
// waited as why says, with the last refusal lockErr if there was one.
func waitError(why string, cause, lockErr error) error {
	if lockErr == nil {
		return fmt.Errorf("%s: %w", why, cause)
	}
	return fmt.Errorf("%s: %w (%w)", why, cause, lockErr)
}

// readWait names what a read whose context ended waited for, when err, its
// error, does not say (rule 47): a connection of the pool, or another
// connection's lock on the file — which the driver's own busy handler
// waits for, ending with the bare context error.
func (e *Engine) readWait(err error) error {
	if !engine.BareCtxErr(err) {
		return err
	}
	if pw := engine.PoolWait(e.dbh, err); pw != err {
		return pw
	}
	if e.lockedByOther() {
		return readWaitError(err, nil)
	}
	return err
}

// writeWait is readWait for a write, whose error may also be a wait for
// the writer's turn: the holder of the turn waits for the pool or the
// file's lock as this call would have.
func (e *Engine) writeWait(err error) error {
	var tw *turnWait
	if !engine.BareCtxErr(err) && !errors.As(err, &tw) {
		return err
	}
	cause := err
	if tw != nil {
		cause = tw.cause
	}
	if pw := engine.PoolWait(e.dbh, cause); pw != cause {
		return pw
	}
	if e.lockedByOther() {
		return lockWaitError(cause, nil)
	}
	return err
}

// lockedByOther reports whether another connection holds the file locked
// against readers (a commit under way, or a transaction begun EXCLUSIVE),
// by a read that does not wait, on a read-only connection of its own. It
// is asked only once a call's context has ended, to say what the call
// waited for; a lock let go meanwhile is not seen.
func (e *Engine) lockedByOther() bool {
	db, err := sql.Open("sqlite", "file:"+escapePath(e.file)+"?mode=ro")
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	return isBusy(db.QueryRowContext(context.Background(), stmt("open_check")).Scan(&n))
}
