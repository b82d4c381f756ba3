package leaseq

import (
	"fmt"
	"strconv"

	"github.com/leaseq/leaseq/internal/engine"
)

// Errors a caller can match with [errors.Is]. Each returned error wraps one
// of them (or [ErrClosed], a context's error, or the database's) with the
// operation, what it was about (a job ID, an owner, a batch entry) and the
// reason, for example
//
//	leaseq: enqueue "order-7": deadline 2026-01-01T00:00:00Z is not after now 2026-01-01T00:00:01Z: invalid argument
//
// A refused [Queue.Finish], [Queue.Extend], [Queue.Release] or [Queue.Fail]
// (stale token, lease over, ...) is not an error: it is false with a nil
// error, because it is the expected outcome for a late worker, not a failure
// to reach the database.
var (
	// ErrInvalid means the arguments were malformed, or the call does not
	// apply to the job as it is. Nothing was written.
	ErrInvalid = engine.ErrInvalid
	// ErrDuplicate means a job with that ID is already in the queue, in
	// whatever state. The existing row was left untouched: job IDs name
	// business jobs, and receivers de-duplicate on them.
	ErrDuplicate = engine.ErrDuplicate
	// ErrNotFound means no job with that ID is in the queue.
	ErrNotFound = engine.ErrNotFound
	// ErrClosed is wrapped by the error of every call on a Queue after
	// [Queue.Close]. Nothing was written.
	ErrClosed = engine.ErrClosed
)

// opError is the one way the package builds a call's error: "leaseq: ",
// the operation, what it was about, and the cause, which errors.Is and
// errors.As see through.
func opError(op, about string, err error) error {
	if about == "" {
		return fmt.Errorf("leaseq: %s: %w", op, err)
	}
	return fmt.Errorf("leaseq: %s %s: %w", op, about, err)
}

// job is how an error names a job ID.
func job(id string) string { return strconv.Quote(id) }

// as is how an error names the owner of a claim call.
func as(owner string) string { return "as " + strconv.Quote(owner) }

// entry is how an error names one entry of a batch argument.
func entry(slice string, i int, id string) string {
	return fmt.Sprintf("%s[%d] %q", slice, i, id)
}

// invalid is the cause for a refused argument: why, wrapping ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}

// problem turns a validator's answer into an error: nil for "".
func problem(why string) error {
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s: %w", why, ErrInvalid)
}
