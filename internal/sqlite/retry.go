package sqlite

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

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

// backoff is the wait between the tries of one retried operation.
type backoff struct{ delay time.Duration }

// done decides after a try that ended with err: stop with nil on success,
// with ctx's error once ctx is done (not the interrupt or lock error it
// caused), with err when again says no to it; otherwise it sleeps, capped
// and jittered, and says to try again.
func (b *backoff) done(ctx context.Context, err error, again func(error) bool) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case ctx.Err() != nil:
		return true, ctx.Err()
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
		return true, ctx.Err()
	}
	b.delay = min(2*b.delay, busyDelayMax)
	return false, nil
}

// retryBusyOnce runs op until it returns something other than SQLITE_BUSY
// or ctx ends, and returns its last result.
func retryBusyOnce[T any](ctx context.Context, op func() (T, error)) (T, error) {
	var b backoff
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
