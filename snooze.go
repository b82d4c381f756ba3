package leaseq

import (
	"context"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Snooze (rule 49 in docs/rules.md): a job put off for a while that spends
// no attempt — for a 429 or 503 with Retry-After, a resource not ready yet,
// a rolling restart. For a real failure return an error (or call
// [Queue.Release]): it spends the attempt and waits WorkerOptions.Backoff.

// Snooze gives the job of c back, if c is still the job's current lease
// (the fence of [Queue.Finish]), as [Queue.Release] with delay does, and
// gives the claim's attempt back: the job's MaxAttempts rises by one, so
// the snooze spends none (State.Attempts still counts claims, and the token
// is kept, the next claim getting +1). A snooze whose now + delay is at or
// after the deadline quarantines the job at once instead, as Release does,
// with a reason that says so and ends with reason, and leaves MaxAttempts
// as it was. A refused Snooze returns false and leaves the row as it was;
// a negative delay, or a c that Claim could not have returned, is
// [ErrInvalid]. A reason is stored as [Queue.Fail] says.
func (q *Queue) Snooze(ctx context.Context, c Claim, delay time.Duration, reason string) (bool, error) {
	_, ok, err := q.settle(ctx, "snooze", snoozeFenced(c, delay, reason), delayProblem(delay), engine.ShareCalls)
	if ok {
		q.e.Wakers().Signal(q.name) // claimable now, or a new instant for sleeping workers
	}
	return ok, err
}

// snoozeFenced is the fenced statement of Snooze.
func snoozeFenced(c Claim, delay time.Duration, reason string) fenced {
	call := engine.SnoozeFenced(c.ID, c.Owner, c.Token, delay.Milliseconds(), reason)
	call.LeaseUntil = toMillis(c.LeaseUntil)
	call.Reason, call.ReasonDeadline = cleanReason(call.Reason), cleanReason(call.ReasonDeadline)
	return fenced{c: c, call: call}
}

// Snooze is a handler's result that puts its job off for d (0 if d is
// negative) without spending an attempt: Work calls [Queue.Snooze] with d
// and the reason "snoozed for d". Use it for a rate limit or a Retry-After;
// for a failure return the error, which spends the attempt and waits
// WorkerOptions.Backoff.
func Snooze(d time.Duration) error { return &snoozeError{max(d, 0)} }

type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return "snoozed for " + e.d.String() }
