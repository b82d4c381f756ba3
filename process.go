package leaseq

import (
	"context"
	"fmt"
	"time"
)

// recordTimeout bounds the Finish that Process runs after its caller's
// context ended: long enough for a commit behind a busy writer, short
// enough that a shutdown is not held up.
const recordTimeout = 5 * time.Second

// Process claims one job for owner ([Queue.Claim]), calls send with it, and
// finishes the job ([Queue.Finish]) if send returned nil. [Result] says what
// happened.
//
// send runs after the claim has committed, with no transaction or statement
// of the queue open, so other connections and processes can write to the
// queue while it works. Its context ends when the lease does (measured on
// the system clock from the time left on the queue's clock); work that runs
// past it may be refused by Finish, and may have been done by another worker
// too, which is why receivers must be idempotent by job ID.
//
// When send returned nil, the Finish runs even if ctx ended meanwhile (on a
// context that is not cancelled, bounded by a few seconds), so a shutdown
// never leaves a delivered job leased until its lease runs out.
//
// If send fails, its error is returned wrapped (errors.Is finds it) and the
// job stays leased until its lease ends; then it is claimable again. (To
// retry sooner, or after a delay of your choosing, claim the job yourself
// and call [Queue.Release].) With nothing claimable, Process returns
// Result{} and a nil error without calling send.
func (q *Queue) Process(ctx context.Context, owner string, lease time.Duration,
	send func(context.Context, Claim) error) (Result, error) {
	if send == nil {
		return Result{}, opError("process", as(owner), invalid("send is nil"))
	}
	if err := ctxProblem(ctx); err != nil {
		return Result{}, opError("process", as(owner), err)
	}
	c, ok, err := q.Claim(ctx, owner, lease)
	if err != nil || !ok {
		return Result{}, err
	}
	res := Result{Claim: c, Claimed: true}
	sendCtx, cancel := context.WithDeadline(ctx, time.Now().Add(c.LeaseUntil.Sub(q.clock.Now())))
	err = send(sendCtx, c)
	cancel()
	if err != nil {
		return res, opError("process", job(c.ID), fmt.Errorf("token %d: send: %w", c.Token, err))
	}
	finishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	res.Finished, err = q.Finish(finishCtx, c)
	return res, err
}
