package leaseq

import (
	"context"
	"slices"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Extend renews the lease of c, if c is still the job's current lease (the
// fence of [Queue.Finish]): the lease now ends at min(now+lease, deadline),
// counted from now like an SQS visibility change, so a short lease can also
// shorten it. The token and the attempt count stay. It returns c with its
// new LeaseUntil and true, or c unchanged and false, with the row untouched,
// when the fence refused it: the lease ended, the deadline passed, or
// another claim or an operator's [Queue.Cancel] took the job. A worker on a
// long job calls it well before LeaseUntil, like a heartbeat, and stops
// working on the job when it returns false. A lease under 1 ms, or a c that
// Claim could not have returned, is [ErrInvalid].
func (q *Queue) Extend(ctx context.Context, c Claim, lease time.Duration) (Claim, bool, error) {
	f := fence(c, engine.FenceExtend)
	f.call.Lease = lease.Milliseconds()
	until, ok, err := q.settle(ctx, "extend", f, leaseProblem(lease), engine.ShareCalls)
	if err != nil || !ok {
		return c, false, err
	}
	c.LeaseUntil = fromMillis(until)
	return c, true, nil
}

// ExtendBatch renews, in one transaction at one instant, the lease of each
// claim of cs that is still its job's current lease, as [Queue.Extend]
// would one by one: each fenced on its own, its lease then ending at
// min(now+lease, deadline). It returns cs with the new LeaseUntil of each
// renewed claim, and for each whether it was renewed; a refused claim is
// returned unchanged with false and its row untouched, without affecting
// the others. A worker pool calls it once per heartbeat for every running
// job that is due, instead of one write per job. A lease under 1 ms is
// [ErrInvalid]; so is a claim Claim could not have returned, naming its
// index. Either way nothing is written.
func (q *Queue) ExtendBatch(ctx context.Context, cs []Claim, lease time.Duration) ([]Claim, []bool, error) {
	out, rs, err := q.extendBatch(ctx, cs, lease, engine.JobSettleParams{Share: engine.ShareNone})
	if err != nil {
		return nil, nil, err
	}
	oks := make([]bool, len(rs))
	for i, r := range rs {
		oks[i] = r.OK
	}
	return out, oks, nil
}

// extendBatch is ExtendBatch, in a transaction of its own (ShareNone) or
// one it may share with other calls (ShareCalls: a pool's heartbeat, which
// on SQLite then rides in the commit of the pool's cycle), with each
// claim's outcome; how.SkipLocked leaves unjudged the claims whose rows
// another transaction holds (a pool's heartbeat).
func (q *Queue) extendBatch(ctx context.Context, cs []Claim, lease time.Duration, how engine.JobSettleParams) ([]Claim, []engine.Settled, error) {
	const op = "extend batch"
	if err := problem(leaseProblem(lease)); err != nil {
		return nil, nil, opError(op, "", err)
	}
	fs := make([]fenced, len(cs))
	for i, c := range cs {
		fs[i] = fence(c, engine.FenceExtend)
		fs[i].call.Lease = lease.Milliseconds()
	}
	rs, err := q.settleBatch(ctx, op, fs, how)
	if err != nil {
		return nil, nil, err
	}
	out := slices.Clone(cs)
	for i, r := range rs {
		if r.OK {
			out[i].LeaseUntil = fromMillis(r.LeaseUntil)
		}
	}
	return out, rs, nil
}
