package leaseq

import (
	"context"
	"time"
)

// extendSQL sets the lease end to min(now + ?6 ms, deadline). The job stays out of
// leaseq_jobs_ready (ready = 0 also undoes a promotion made while a clock
// set back had the lease look ended).
const extendSQL = `
UPDATE leaseq_jobs
SET lease_until = min(?5 + ?6, coalesce(deadline, ?5 + ?6)), due_at = min(?5 + ?6, coalesce(deadline, ?5 + ?6)),
    ready = 0, updated_at = ?5` + fenceSQL

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
	until, ok, err := q.settle(ctx, "extend", fenced{c: c, kind: fenceExtend,
		args: []any{lease.Milliseconds()}}, leaseProblem(lease), shareCalls)
	if err != nil || !ok {
		return c, false, err
	}
	c.LeaseUntil = fromMillis(until)
	return c, true, nil
}
