package leaseq

import (
	"errors"
	"math/rand/v2"
	"time"
)

// What a Handler's error asks of Work: by default a retry after
// WorkerOptions.Backoff; Permanent for no retry; RetryAfter for a retry at a
// time of the handler's choosing.

var (
	// ErrLeaseLost is the cause (context.Cause) of a handler's context that
	// ended because the queue no longer considers the handler the job's
	// holder: its lease ended without an extension, an extension was
	// refused (the job was cancelled, or another worker claimed it after a
	// stall), or the job's deadline came. The handler should stop: whatever
	// it returns is offered to the fence, which refuses it.
	ErrLeaseLost = errors.New("lease lost")
	// ErrShutdown is the cause of a handler's context that ended because
	// Work's context ended and WorkerOptions.DrainTimeout passed. The job is
	// released with no delay unless the handler returns nil.
	ErrShutdown = errors.New("worker shut down")
)

// Permanent marks err as a failure that retrying cannot fix: Work fails the
// job (see Queue.Fail) with err's text as the reason instead of releasing it
// for another attempt. Permanent(nil) is a failure with no text of its own.
func Permanent(err error) error { return &permanentError{err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil {
		return "permanent failure"
	}
	return e.err.Error()
}

func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter marks err as a failure to retry after d rather than after
// WorkerOptions.Backoff: Work releases the job with delay d (0 if d is
// negative) and err's text as the reason. The attempt still counts: for a
// rate limit or a Retry-After, where it should not, return Snooze(d).
func RetryAfter(d time.Duration, err error) error { return &retryAfterError{max(d, 0), err} }

type retryAfterError struct {
	d   time.Duration
	err error
}

func (e *retryAfterError) Error() string {
	if e.err == nil {
		return "retry after " + e.d.String()
	}
	return e.err.Error()
}

func (e *retryAfterError) Unwrap() error { return e.err }

// Bounds of DefaultBackoff.
const (
	backoffMin = time.Second
	backoffMax = time.Hour
)

// DefaultBackoff is the delay before the next attempt of a job whose
// attempt-th claim failed: 1s, 2s, 4s, ... doubling from 1 second and
// capped at 1 hour, each spread by up to ±25% at random so that jobs that
// failed together do not all come back together.
func DefaultBackoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 1 {
		attempt = 1
	}
	if attempt <= 13 { // 1s << 12 is over an hour
		d = min(backoffMin<<(attempt-1), backoffMax)
	}
	d += time.Duration(rand.Int64N(int64(d/2)+1)) - d/4
	return min(d, backoffMax)
}
