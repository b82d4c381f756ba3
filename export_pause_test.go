package leaseq

import "context"

// NextDue is the instant an idle pool of the queue sleeps until at most
// (JobNextDue), in Unix milliseconds; ok is false when there is none, as
// for a paused queue.
func (q *Queue) NextDue(ctx context.Context) (int64, bool, error) { return q.e.JobNextDue(ctx, q.name) }
