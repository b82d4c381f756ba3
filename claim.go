package leaseq

import (
	"context"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Claim leases the next claimable job of the queue to owner for lease. A
// job is claimable when it is pending and due (run_at at or before now), or
// leased with a lease that has ended (lease_until <= now); a live lease is
// never handed over. Of the claimable jobs Claim takes one of the highest
// priority, preferring the one due earliest. The claim gets a new token, the
// job's attempts go up by one, and its lease ends at min(now+lease,
// deadline).
//
// In the same transaction, before any token is issued, jobs that can no
// longer be finished are quarantined: those whose lease expired with their
// attempts used up, and those whose deadline is at or before now.
//
// With nothing claimable, ok is false and err nil; that answer comes from a
// read, without taking the write lock, so idle workers polling a queue do
// not slow its writers. owner must be a non-empty name of at most
// [MaxIDLen] bytes; lease is truncated to the millisecond and must be at
// least one, or the error wraps [ErrInvalid]. Claim holds no lock once it
// returns. A Claim whose context ends first returns the context's error
// and leaves no job leased to it: on PostgreSQL, a claim the server
// commits after its caller left is released at once, with no delay, as a
// Work shutdown releases a job (the attempt stays counted). Pass the claim to
// [Queue.Finish], [Queue.Extend], [Queue.Release] or [Queue.Fail].
func (q *Queue) Claim(ctx context.Context, owner string, lease time.Duration) (Claim, bool, error) {
	cs, err := q.claimN(ctx, "claim", owner, lease, 1, engine.ShareCalls)
	if err != nil || len(cs) == 0 {
		return Claim{}, false, err
	}
	return cs[0], true, nil
}

// ClaimBatch leases to owner for lease, in one transaction, up to max of the
// jobs [Queue.Claim] would have taken one by one, and returns them highest
// priority first, then in enqueue order. Each job is claimed exactly as
// Claim would claim it: its own new token and attempt, its lease capped at
// its deadline, and the same quarantine sweep first. With nothing claimable
// the result is an empty slice and a nil error, decided without the write
// lock. max must be from 1 to [MaxCount]; owner and lease are checked as in
// Claim.
func (q *Queue) ClaimBatch(ctx context.Context, owner string, lease time.Duration, max int) ([]Claim, error) {
	if max < 1 {
		return nil, opError("claim batch", as(owner), invalid("max %d is not positive", max))
	}
	if err := problem(countProblem("max", max)); err != nil {
		return nil, opError("claim batch", as(owner), err)
	}
	cs, err := q.claimN(ctx, "claim batch", owner, lease, max, engine.ShareNone)
	if err == nil && cs == nil {
		cs = []Claim{} // idle: decided without a transaction
	}
	return cs, err
}

// claimN claims up to max jobs in one transaction, which share says it
// may share with other calls. Nothing claimable is nil, nil.
func (q *Queue) claimN(ctx context.Context, op, owner string, lease time.Duration, max int, share engine.Sharing) ([]Claim, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError(op, as(owner), err)
	}
	why := nameProblem("owner", owner)
	if why == "" {
		why = leaseProblem(lease)
	}
	if err := problem(why); err != nil {
		return nil, opError(op, as(owner), err)
	}
	rows, err := q.e.JobClaim(ctx, engine.JobClaimParams{Queue: q.ref(), Owner: owner,
		Lease: lease.Milliseconds(), Max: max, Share: share})
	if err != nil {
		return nil, opError(op, as(owner), err)
	}
	if rows == nil {
		return nil, nil
	}
	cs := make([]Claim, len(rows))
	for i, r := range rows {
		cs[i] = q.claim(r)
	}
	return cs, nil
}

// claim is the public Claim of a row the engine claimed on q.
func (q *Queue) claim(r engine.ClaimRow) Claim {
	return Claim{ID: r.ID, Qty: r.Qty, Payload: r.Payload, Queue: q.name, Owner: r.Owner, Token: r.Token,
		Attempt: r.Attempt, LeaseUntil: fromMillis(r.LeaseUntil), Deadline: nullTime(r.Deadline), Priority: r.Priority,
		Kind: r.Kind, EnqueuedAt: fromMillis(r.Created), RunAt: nullTime(r.RunAt), MaxAttempts: r.MaxAttempts}
}
