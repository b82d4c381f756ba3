package leaseq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Requeue and Cancel are an operator's calls on one job by ID. They are not
// fenced (an operator holds no claim); what they may do depends only on the
// job's status, and a job they do not apply to is an error, not a refusal.

// requeueSQL puts a quarantined job back in line, claimable at once.
// attempts starts over, so the job gets its full MaxAttempts again; the
// token is kept, so the next claim still gets a token no earlier claim ever
// had.
const requeueSQL = `
UPDATE leaseq_jobs
SET status = 'pending', attempts = 0, lease_until = NULL, run_at = NULL, reason = '',
    due_at = ?3, ready = 1, updated_at = ?3
WHERE queue = ?1 AND id = ?2 AND status = 'quarantined' AND (deadline IS NULL OR deadline > ?3)`

// Requeue moves a quarantined job back to pending, claimable at once, with
// its attempts reset and its reason cleared, once someone has looked at why
// it failed. It is the only way out of quarantine. The token is kept, so
// its next claim still gets a token no earlier claim had. A job that is not
// quarantined, or whose deadline has passed (it would be quarantined again
// at once), is an error wrapping [ErrInvalid]; an unknown ID wraps
// [ErrNotFound]. Either way nothing changes.
func (q *Queue) Requeue(ctx context.Context, id string) error {
	err := q.operate(ctx, "requeue", id, func(ctx context.Context, tx execer, now int64) (sql.Result, error) {
		return tx.ExecContext(ctx, requeueSQL, q.name, id, now)
	}, func(status Status, deadline sql.NullInt64, now int64) error {
		if status != StatusQuarantined {
			return invalid("job is %s; only a quarantined job can be requeued", status)
		}
		return invalid("deadline %s has passed (now %s); enqueue a new job instead",
			fmtMillis(deadline.Int64), fmtMillis(now))
	})
	if err == nil {
		q.s.wake.signal(q.name)
	}
	return err
}

// cancelSQL quarantines a pending or leased job with the reason ?3. A
// holder's later Finish, Extend, Release or Fail finds the job not leased
// and is refused.
const cancelSQL = `
UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = ?3, updated_at = ?4
WHERE queue = ?1 AND id = ?2 AND status IN ('pending', 'leased')`

// Cancel quarantines a pending or leased job with reason (cleaned as for
// [Queue.Fail]): an operator's stop. A worker holding the job is refused
// when it next calls Finish, Extend, Release or Fail (false, nil), which is
// how it learns the job is no longer its own. [Queue.Requeue] undoes it. A
// job that is done or quarantined already is an error wrapping
// [ErrInvalid]; an unknown ID wraps [ErrNotFound]. Either way nothing
// changes.
func (q *Queue) Cancel(ctx context.Context, id, reason string) error {
	reason = cleanReason(reason)
	return q.operate(ctx, "cancel", id, func(ctx context.Context, tx execer, now int64) (sql.Result, error) {
		return tx.ExecContext(ctx, cancelSQL, q.name, id, reason, now)
	}, func(status Status, _ sql.NullInt64, _ int64) error {
		return invalid("job is %s; only a pending or leased job can be cancelled", status)
	})
}

// operate runs an operator's update of job id at the queue's clock. When it
// matches no row, refused explains why from the row as it is, or the error
// is ErrNotFound.
func (q *Queue) operate(ctx context.Context, op, id string,
	update func(ctx context.Context, tx execer, now int64) (sql.Result, error),
	refused func(status Status, deadline sql.NullInt64, now int64) error) error {
	if err := q.usable(); err != nil {
		return opError(op, job(id), err)
	}
	err := q.s.writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		now := q.now()
		res, err := update(ctx, tx, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var status Status
		var deadline sql.NullInt64
		err = tx.QueryRowContext(ctx, "SELECT status, deadline FROM leaseq_jobs WHERE queue = ?1 AND id = ?2",
			q.name, id).Scan(&status, &deadline)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return fmt.Errorf("reading why nothing changed: %w", err)
		}
		return refused(status, deadline, now)
	})
	if err != nil {
		return opError(op, job(id), err)
	}
	return nil
}
