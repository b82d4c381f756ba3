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
	err := q.operate(ctx, "requeue", operation{kind: opRequeue, id: id}, func(r refusal) error {
		if r.status != StatusQuarantined {
			return invalid("job is %s; only a quarantined job can be requeued", r.status)
		}
		return invalid("deadline %s has passed (now %s); enqueue a new job instead",
			fmtMillis(r.deadline.Int64), fmtMillis(r.now))
	})
	if err == nil {
		q.e.wakers().signal(q.name)
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
	return q.operate(ctx, "cancel", operation{kind: opCancel, id: id, reason: cleanReason(reason)}, func(r refusal) error {
		return invalid("job is %s; only a pending or leased job can be cancelled", r.status)
	})
}

// operate runs an operator's update of one job at the queue's clock. When
// it matched no row, refused explains why from the row as it is, or the
// error is ErrNotFound.
func (q *Queue) operate(ctx context.Context, op string, o operation, refused func(refusal) error) error {
	if err := q.callable(ctx); err != nil {
		return opError(op, job(o.id), err)
	}
	if nameProblem("ID", o.id) != "" {
		return opError(op, job(o.id), ErrNotFound) // see storedNames
	}
	r, err := q.e.operate(ctx, q, o)
	switch {
	case err != nil:
	case !r.applied && !r.found:
		err = ErrNotFound
	case !r.applied:
		err = refused(r)
	}
	if err != nil {
		return opError(op, job(o.id), err)
	}
	return nil
}

// operate runs o in a transaction of its own, and when it matches no row
// reads the row in the same transaction to say why.
func (s *store) operate(ctx context.Context, q *Queue, o operation) (refusal, error) {
	var r refusal
	err := s.writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		var err error
		r, err = operateTx(ctx, tx, q, o, q.now())
		return err
	})
	return r, err
}

// operateTries bounds how often an operator's update is run again because
// the row read to explain its refusal says it should have matched.
const operateTries = 5

// operateTx is the body of an operator's transaction on either engine: o's
// update at now, and when it matched no row the row as it is. Under
// PostgreSQL's READ COMMITTED each statement sees what was committed when
// it began, so a row committed between the update and the read (an Enqueue
// of the ID, a claim moving the job) could explain a refusal with a status
// the update would have taken: the update is then run again, so that the
// answer and its reason come from the same view of the row. Under SQLite's
// write lock nothing commits in between.
func operateTx(ctx context.Context, tx execer, q *Queue, o operation, now int64) (refusal, error) {
	for try := 1; ; try++ {
		r := refusal{now: now}
		var err error
		r.applied, err = runOperation(ctx, tx, q, o, now)
		if err != nil || r.applied {
			return r, err
		}
		if err := readRefusal(ctx, tx, q, o.id, &r); err != nil || !o.matches(r) || try == operateTries {
			return r, err
		}
	}
}

// matches reports whether o's update would take the row r read: a refusal
// that r contradicts.
func (o operation) matches(r refusal) bool {
	switch {
	case !r.found:
		return false
	case o.kind == opCancel:
		return r.status == StatusPending || r.status == StatusLeased
	default:
		return r.status == StatusQuarantined && (!r.deadline.Valid || r.deadline.Int64 > r.now)
	}
}

// runOperation runs o's update at now and reports whether it matched the
// row. Its statements are the same on both engines.
func runOperation(ctx context.Context, tx execer, q *Queue, o operation, now int64) (bool, error) {
	var res sql.Result
	var err error
	switch o.kind {
	case opRequeue:
		res, err = tx.ExecContext(ctx, requeueSQL, q.name, o.id, now)
	case opCancel:
		res, err = tx.ExecContext(ctx, cancelSQL, q.name, o.id, o.reason, now)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// readRefusal reads the row of job id that an operator's update did not
// match into r.
func readRefusal(ctx context.Context, tx execer, q *Queue, id string, r *refusal) error {
	err := tx.QueryRowContext(ctx, "SELECT status, deadline FROM leaseq_jobs WHERE queue = ?1 AND id = ?2",
		q.name, id).Scan(&r.status, &r.deadline)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading why nothing changed: %w", err)
	}
	r.found = true
	return nil
}
