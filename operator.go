package leaseq

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// Requeue and Cancel are an operator's calls on one job by ID. They are not
// fenced (an operator holds no claim); what they may do depends only on the
// job's status, and a job they do not apply to is an error, not a refusal.

// Requeue moves a quarantined job back to pending, claimable at once, with
// its attempts reset and its reason cleared, once someone has looked at why
// it failed. It is the only way out of quarantine. The token is kept, so
// its next claim still gets a token no earlier claim had. A job that is not
// quarantined, or whose deadline has passed (it would be quarantined again
// at once), is an error wrapping [ErrInvalid]; an unknown ID wraps
// [ErrNotFound]. Either way nothing changes.
func (q *Queue) Requeue(ctx context.Context, id string) error {
	err := q.operate(ctx, "requeue", engine.JobOperateParams{Kind: engine.OpRequeue, ID: id}, func(r engine.Refusal) error {
		if Status(r.Status) != StatusQuarantined {
			return invalid("job is %s; only a quarantined job can be requeued", r.Status)
		}
		return invalid("deadline %s has passed (now %s); enqueue a new job instead",
			fmtMillis(r.Deadline.Int64), fmtMillis(r.Now))
	})
	if err == nil {
		q.e.Wakers().Signal(q.name)
	}
	return err
}

// Cancel quarantines a pending or leased job with reason (cleaned as for
// [Queue.Fail]): an operator's stop. A worker holding the job is refused
// when it next calls Finish, Extend, Release or Fail (false, nil), which is
// how it learns the job is no longer its own; a Work pool's handler of it
// has its context ended with ErrLeaseLost at once, in this process and,
// through the wake-ups of rule 56, in others. [Queue.Requeue] undoes it. A
// job that is done or quarantined already is an error wrapping
// [ErrInvalid]; an unknown ID wraps [ErrNotFound]. Either way nothing
// changes.
func (q *Queue) Cancel(ctx context.Context, id, reason string) error {
	err := q.operate(ctx, "cancel", engine.JobOperateParams{Kind: engine.OpCancel, ID: id, Reason: cleanReason(reason)}, func(r engine.Refusal) error {
		return invalid("job is %s; only a pending or leased job can be cancelled", r.Status)
	})
	if err == nil {
		q.e.Wakers().Change(q.name) // rule 56: the holder's handler ends at once
	}
	return err
}

// operate runs an operator's update of one job at the queue's clock. When
// it matched no row, refused explains why from the row as it is, or the
// error is ErrNotFound.
func (q *Queue) operate(ctx context.Context, op string, o engine.JobOperateParams, refused func(engine.Refusal) error) error {
	if err := q.callable(ctx); err != nil {
		return opError(op, job(o.ID), err)
	}
	if nameProblem("ID", o.ID) != "" {
		return opError(op, job(o.ID), ErrNotFound) // see storedNames
	}
	o.Queue = q.ref()
	r, err := q.e.JobOperate(ctx, o)
	switch {
	case err != nil:
	case !r.Applied && !r.Found:
		err = ErrNotFound
	case !r.Applied:
		err = refused(r)
	}
	if err != nil {
		return opError(op, job(o.ID), err)
	}
	return nil
}
