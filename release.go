package leaseq

import (
	"context"
	"time"
)

// releaseSQL puts the job back to pending, due at now + ?6 ms, with the
// reason ?7 — or quarantines it at once, with the reason ?8 or ?9, when its
// attempts are used up or the delay would end at or after its deadline
// (it could never be finished). The token and the attempts stay, so the
// next claim still gets a new token. A job due at once goes straight into
// leaseq_jobs_ready.
const releaseSQL = `
UPDATE leaseq_jobs
SET status = CASE WHEN attempts >= max_attempts OR ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1)
        THEN 'quarantined' ELSE 'pending' END,
    reason = CASE WHEN attempts >= max_attempts THEN ?8
        WHEN ?5 + ?6 >= coalesce(deadline, ?5 + ?6 + 1) THEN ?9 ELSE ?7 END,
    ready = (?6 = 0 AND attempts < max_attempts),
    run_at = ?5 + ?6, due_at = ?5 + ?6, lease_until = ?5, updated_at = ?5` + fenceSQL

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
	_, ok, err := q.settle(ctx, "release", releaseFenced(c, delay, reason), delayProblem(delay), shareCalls)
	if ok {
		q.e.wakers().signal(q.name) // claimable now, or a new instant for sleeping workers
	}
	return ok, err
}

// releaseFenced is the fenced statement of Release.
func releaseFenced(c Claim, delay time.Duration, reason string) fenced {
	return fenced{c: c, kind: fenceRelease, args: []any{delay.Milliseconds(), cleanReason(reason),
		cleanReason("max attempts reached, released: " + reason),
		cleanReason("released past the deadline: " + reason)}}
}

// failSQL quarantines the job with the reason ?6.
const failSQL = `UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = ?6, updated_at = ?5` + fenceSQL

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
	_, ok, err := q.settle(ctx, "fail", failFenced(c, reason), "", shareCalls)
	return ok, err
}

// failFenced is the fenced statement of Fail.
func failFenced(c Claim, reason string) fenced {
	return fenced{c: c, kind: fenceFail, args: []any{cleanReason(reason)}}
}
