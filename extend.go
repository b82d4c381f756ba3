package leaseq

import (
	"context"
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
