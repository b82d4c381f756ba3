package leaseq

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors a caller can match with errors.Is. Each returned error wraps one of
// them with the operation, the job ID and the reason, for example
//
//	leaseq: enqueue "order-7": deadline 2026-01-01T00:00:00Z is not after now 2026-01-01T00:00:01Z: invalid argument
//
// A refused Finish (stale token, lease over, ...) is not an error: it is
// false with a nil error, because it is the expected outcome for a late
// worker, not a failure to reach the database.
var (
	// ErrInvalid means the arguments were malformed. Nothing was written.
	ErrInvalid = errors.New("invalid argument")
	// ErrDuplicate means a job with that ID is already in the queue, in
	// whatever state. The existing row was left untouched: job IDs name
	// business jobs, and receivers de-duplicate on them.
	ErrDuplicate = errors.New("duplicate job ID")
	// ErrNotFound means no job with that ID is in the queue.
	ErrNotFound = errors.New("job not found")
)

// MaxIDLen is the longest job ID, and the longest owner name, in bytes.
const MaxIDLen = 255

// invalid builds an ErrInvalid error for operation op on job id.
func invalid(op, id, format string, args ...any) error {
	return fmt.Errorf("leaseq: %s %q: %s: %w", op, id, fmt.Sprintf(format, args...), ErrInvalid)
}

// checkName validates a job ID or an owner name. Names are stored as SQLite
// TEXT, which is meant to be UTF-8 and which several SQL functions cut at a
// NUL byte; refusing both keeps every stored name byte-for-byte what the
// caller passed.
func checkName(what, s string) string {
	switch {
	case s == "":
		return what + " is empty"
	case len(s) > MaxIDLen:
		return fmt.Sprintf("%s is %d bytes, over the limit of %d", what, len(s), MaxIDLen)
	case !utf8.ValidString(s):
		return what + " is not valid UTF-8"
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Sprintf("%s has a NUL byte at offset %d", what, i)
		}
	}
	return ""
}
