package leaseq

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Validators. Each xxxProblem says what is wrong with its argument, naming
// the field, or returns "" when nothing is; problem turns the answer into
// an ErrInvalid error. A call validates everything before it writes.

// MaxIDLen is the longest job ID, owner name or queue name, in bytes.
const MaxIDLen = 255

// MaxReasonLen is the longest reason stored, in bytes; a longer one is cut
// at a character boundary, never refused (see [Queue.Fail]).
const MaxReasonLen = 1024

// MaxCount is the largest count a call takes: Job.MaxAttempts,
// Options.MaxAttempts, ClaimBatch's max and WorkerOptions.Concurrency. It
// is what PostgreSQL's integer column (and a LIMIT bound as one) holds, and
// SQLite keeps the same bound, so both engines accept the same input; a
// larger count is ErrInvalid naming the field.
const MaxCount = 1<<31 - 1

// The range of every instant a call takes (Job.Deadline and RunAt, Purge's
// before, Activity's since): from the zero time's instant, the first of
// year 1, to the last millisecond of year 9999. Every stored instant is in
// Unix milliseconds, and within this range it is exact on both engines,
// prints as RFC 3339 and marshals as JSON; past it the conversion would
// wrap. The zero time keeps its meaning where a call gives it one (no
// deadline, at once).
var (
	minTime = time.Time{}
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
)

// ctxProblem refuses a nil context before database/sql sees it: it would
// panic there with its pool's lock held, and every later call on the
// *sql.DB would wait for that lock forever. It refuses the context of an
// InTx or FinishTx function too (rule 44; see inTxProblem).
func ctxProblem(ctx context.Context) error {
	if ctx == nil {
		return invalid("ctx is nil; pass context.Background() or a context with a deadline")
	}
	return inTxProblem(ctx)
}

// countProblem validates a count that must be at most MaxCount.
func countProblem(what string, n int) string {
	if n > MaxCount {
		return fmt.Sprintf("%s %d is over the limit of %d", what, n, MaxCount)
	}
	return ""
}

// timeProblem validates an instant a call takes; zero names what the zero
// time means for it ("" if it has no meaning of its own).
func timeProblem(what string, t time.Time, zero string) string {
	if !t.Before(minTime) && !t.After(maxTime) {
		return ""
	}
	why := fmt.Sprintf("%s %s is outside the instants the queue stores, %s to %s", what,
		t.UTC().Format(timeFormat), minTime.Format(timeFormat), fmtMillis(toMillis(maxTime)))
	if zero != "" {
		why += "; use a zero " + what + " for " + zero
	}
	return why
}

// intervalProblem validates an optional interval: 0 means its default, and
// a positive one must be at least the 1ms resolution of the queue's clock
// (a shorter one would make a worker spin, or end the instant it began).
func intervalProblem(what string, d time.Duration) string {
	switch {
	case d < 0:
		return fmt.Sprintf("%s %v is negative", what, d)
	case d > 0 && d < time.Millisecond:
		return fmt.Sprintf("%s %v is under the floor of 1ms, the resolution of the queue's clock; 0 means the default", what, d)
	}
	return ""
}

// nameProblem validates a job ID, an owner or a queue name. Names are
// stored as text, which is meant to be UTF-8 and which several SQL functions
// cut at a NUL byte; refusing both keeps every stored name byte for byte
// what the caller passed.
func nameProblem(what, s string) string {
	switch {
	case s == "":
		return what + " is empty"
	case len(s) > MaxIDLen:
		return fmt.Sprintf("%s is %d bytes, over the limit of %d", what, len(s), MaxIDLen)
	case !utf8.ValidString(s):
		return what + " is not valid UTF-8"
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Sprintf("%s has a NUL byte at offset %d", what, i)
	}
	return ""
}

// jobProblem validates j against the queue's limits at time now.
func (q *Queue) jobProblem(j Job, now int64) string {
	if why := nameProblem("ID", j.ID); why != "" {
		return why
	}
	switch {
	case j.Qty < 0:
		return fmt.Sprintf("Qty %d is negative", j.Qty)
	case j.MaxAttempts < 0:
		return fmt.Sprintf("MaxAttempts %d is negative", j.MaxAttempts)
	case j.MaxAttempts > MaxCount:
		return countProblem("MaxAttempts", j.MaxAttempts)
	case len(j.Payload) > q.maxPayload:
		return fmt.Sprintf("Payload is %d bytes, over the limit of %d", len(j.Payload), q.maxPayload)
	case j.Priority < MinPriority || j.Priority > MaxPriority:
		return fmt.Sprintf("Priority %d is outside %d..%d", j.Priority, MinPriority, MaxPriority)
	case timeProblem("Deadline", j.Deadline, "no deadline") != "":
		return timeProblem("Deadline", j.Deadline, "no deadline")
	case timeProblem("RunAt", j.RunAt, "at once") != "":
		return timeProblem("RunAt", j.RunAt, "at once")
	case !j.Deadline.IsZero() && toMillis(j.Deadline) <= now:
		return fmt.Sprintf("deadline %s is not after now %s", fmtMillis(toMillis(j.Deadline)), fmtMillis(now))
	case !j.Deadline.IsZero() && !j.RunAt.IsZero() && toMillis(j.RunAt) >= toMillis(j.Deadline):
		return fmt.Sprintf("RunAt %s is not before the deadline %s", fmtMillis(toMillis(j.RunAt)), fmtMillis(toMillis(j.Deadline)))
	}
	return kindProblem(j.Kind)
}

// kindProblem validates a Job.Kind (rule 50): "" is none; otherwise the
// rules of names, at most MaxKindLen bytes.
func kindProblem(kind string) string {
	if kind == "" {
		return ""
	}
	if len(kind) > MaxKindLen {
		return fmt.Sprintf("Kind is %d bytes, over the limit of %d", len(kind), MaxKindLen)
	}
	return nameProblem("Kind", kind)
}

// claimProblem says why c cannot be a claim that Claim returned.
func claimProblem(c Claim) string {
	switch {
	case c.ID == "":
		return "claim has an empty ID"
	case c.Owner == "":
		return "claim has an empty owner"
	case c.Token <= 0:
		return fmt.Sprintf("claim token %d is not positive", c.Token)
	}
	return ""
}

// leaseProblem validates a lease length: the queue's clock counts whole
// milliseconds, so a shorter lease would end the instant it began.
func leaseProblem(lease time.Duration) string {
	if lease < time.Millisecond {
		return fmt.Sprintf("lease %v is under the 1ms resolution of the queue's clock", lease)
	}
	return ""
}

// delayProblem validates a Release delay.
func delayProblem(delay time.Duration) string {
	if delay < 0 {
		return fmt.Sprintf("delay %v is negative", delay)
	}
	return ""
}

// cleanReason makes a reason storable on every engine without refusing it:
// invalid UTF-8 becomes U+FFFD, NUL bytes are dropped, and what is left is
// cut to at most MaxReasonLen bytes at a character boundary.
func cleanReason(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= MaxReasonLen {
		return s
	}
	cut := MaxReasonLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
