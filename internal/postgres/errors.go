package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// SQLSTATE codes the engine acts on (PostgreSQL's appendix A).
const (
	sqlStateUniqueViolation      = "23505"
	sqlStateSerializationFailure = "40001"
	sqlStateDeadlockDetected     = "40P01"
	sqlStateUndefinedTable       = "42P01"
)

// sqlState is the SQLSTATE of err, from the SQLState method PostgreSQL
// drivers give their errors (pgx's *pgconn.PgError, lib/pq's *pq.Error), or
// "". No driver is imported for it.
func sqlState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// interpretError maps the driver's errors onto the engine's: a unique
// violation is engine.ErrDuplicate, keeping the server's message (rule 41
// in docs/rules.md); every other error is returned as it is. A closed
// database keeps database/sql's own error, as it always did here: the root
// tells a closed Queue (engine.ErrClosed) before a call reaches the engine.
func interpretError(err error) error {
	if err != nil && sqlState(err) == sqlStateUniqueViolation {
		return fmt.Errorf("%w (%v)", engine.ErrDuplicate, err)
	}
	return err
}

// retryable reports whether err is a serialization failure or a deadlock:
// the server undid the whole transaction, so running it again is safe
// (rule 41).
func retryable(err error) bool {
	s := sqlState(err)
	return s == sqlStateSerializationFailure || s == sqlStateDeadlockDetected
}

// Bounds of retry's backoff.
const (
	retryDelayMin = 500 * time.Microsecond
	retryDelayMax = 16 * time.Millisecond
)

// retry runs try until it returns something other than a retryable error,
// or ctx ends, with a capped, jittered backoff between tries, and returns
// the last try's result: a try's result is its own return value, so a
// retried try never sees what an earlier one left. Once ctx is done a
// failed try reports ctx's error, saying so when it waited for a
// connection of db's pool (engine.PoolWait).
func retry[T any](ctx context.Context, db *sql.DB, try func() (T, error)) (T, error) {
	delay := retryDelayMin
	for {
		v, err := try()
		switch {
		case err == nil:
			return v, nil
		case ctx.Err() != nil:
			return v, engine.PoolWait(db, ctx.Err())
		case !retryable(err):
			return v, err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return v, engine.PoolWait(db, ctx.Err())
		}
		delay = min(2*delay, retryDelayMax)
	}
}

// faultDelay is how long a background retry waits after its n-th failure
// in a row: from 10ms, doubling, capped at max(limit, 1s), with jitter.
func faultDelay(n int, limit time.Duration) time.Duration {
	d := max(limit, time.Second)
	if n < 10 {
		d = min(10*time.Millisecond<<n, d)
	}
	return d/2 + rand.N(d/2+1)
}

// fromMillis turns a stored instant back into a time.Time in UTC.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
