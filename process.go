package leaseq

import (
	"context"
	"fmt"
	"time"
)

// Result is what Process did.
type Result struct {
	// Claim is the claim Process made; zero when Claimed is false.
	Claim Claim
	// Claimed reports whether a job was claimed (and send called).
	Claimed bool
	// Finished reports whether send returned nil and Finish accepted the
	// result. Claimed && !Finished with a nil error means the lease ended
	// (or the deadline passed) while send ran: another worker may already
	// hold the job, so the result was refused.
	Finished bool
}

// Process claims one job for owner, calls send with it, and finishes the job
// if send returned nil.
//
// send runs after the claim has committed, with no transaction or statement
// of the queue open, so other connections and processes can write to the
// queue while it works (SPEC rule 7). Its context ends when the lease does
// (measured on the system clock from the time left on the queue's clock);
// work that runs past it may be refused by Finish, and may have been done by
// another worker too, which is why receivers must be idempotent by job ID.
//
// If send fails, its error is returned wrapped (errors.Is finds it) and the
// job stays leased until its lease ends; then it is claimable again. With
// nothing claimable, Process returns Result{} and a nil error without
// calling send.
func (q *Queue) Process(ctx context.Context, owner string, lease time.Duration,
	send func(context.Context, Claim) error) (Result, error) {
	if send == nil {
		return Result{}, fmt.Errorf("leaseq: process as %q: send is nil: %w", owner, ErrInvalid)
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
		return res, fmt.Errorf("leaseq: process %q (token %d): send: %w", c.ID, c.Token, err)
	}
	res.Finished, err = q.Finish(ctx, c)
	return res, err
}
