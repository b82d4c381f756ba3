package leaseq

import (
	"context"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Release gives the job of c back, if c is still the job's current lease
// (the fence of [Queue.Finish]): it becomes pending again, claimable from
// now + delay, with reason stored — for a failure that a later try may not
// meet. The token is kept (the next claim still gets +1) and the attempt
// stays counted. If the attempts are used up, or now + delay is at or after
// the deadline, the job is quarantined at once instead, with a reason that
// says so and ends with reason. Either way a Release whose fence matched
// returns true; a refused one returns false and leaves the row as it was. A
// negative delay, or a c that Claim could not have returned, is
// [ErrInvalid]. A reason is never refused; see [Queue.Fail] for how it is
// stored.
func (q *Queue) Release(ctx context.Context, c Claim, delay time.Duration, reason string) (bool, error) {
	_, ok, err := q.settle(ctx, "release", releaseFenced(c, delay, reason), delayProblem(delay), engine.ShareCalls)
	if ok {
		q.e.Wakers().Signal(q.name) // claimable now, or a new instant for sleeping workers
	}
	return ok, err
}

// releaseFenced is the fenced statement of Release.
func releaseFenced(c Claim, delay time.Duration, reason string) fenced {
	call := engine.ReleaseFenced(c.ID, c.Owner, c.Token, delay.Milliseconds(), reason)
	call.LeaseUntil = toMillis(c.LeaseUntil)
	call.Reason, call.ReasonAttempts, call.ReasonDeadline = cleanReason(call.Reason),
		cleanReason(call.ReasonAttempts), cleanReason(call.ReasonDeadline)
	return fenced{c: c, call: call}
}

// Fail quarantines the job of c at once with reason, if c is still the
// job's current lease (the fence of [Queue.Finish]): for work that retrying
// cannot fix. It stays quarantined until [Queue.Requeue]. A refused Fail
// returns false and leaves the row as it was; a c that Claim could not have
// returned is [ErrInvalid].
//
// A reason is stored cleaned, never refused: invalid UTF-8 becomes U+FFFD,
// NUL bytes are dropped, and it is cut to [MaxReasonLen] bytes at a
// character boundary. [Queue.Get] shows it as State.Reason.
func (q *Queue) Fail(ctx context.Context, c Claim, reason string) (bool, error) {
	_, ok, err := q.settle(ctx, "fail", failFenced(c, reason), "", engine.ShareCalls)
	return ok, err
}

// failFenced is the fenced statement of Fail.
func failFenced(c Claim, reason string) fenced {
	f := fence(c, engine.FenceFail)
	f.call.Reason = cleanReason(reason)
	return f
}
