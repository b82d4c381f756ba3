package leaseq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// requeueSQL puts a quarantined job back in line. attempts starts over, so
// the job gets its full MaxAttempts again; the token is kept, so the next
// claim still gets a token no earlier claim ever had.
const requeueSQL = `
UPDATE leaseq_jobs
SET status = 'pending', attempts = 0, lease_until = NULL, reason = '', updated_at = ?2
WHERE id = ?1 AND status = 'quarantined' AND (deadline IS NULL OR deadline > ?2)`

// Requeue moves a quarantined job back to pending, with its attempts reset,
// once someone has looked at why it failed. It is the only way out of
// quarantine (SPEC rule 6). A job that is not quarantined, or whose deadline
// has passed (it would be quarantined again at once), is an error wrapping
// ErrInvalid; an unknown ID wraps ErrNotFound. Either way nothing changes.
func (q *Queue) Requeue(ctx context.Context, id string) error {
	err := q.writeTx(ctx, func(tx execer) error {
		now := q.now()
		res, err := tx.ExecContext(ctx, requeueSQL, id, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		return whyNotRequeued(ctx, tx, id, now)
	})
	if err != nil {
		return wrapOp("requeue", id, err)
	}
	return nil
}

// whyNotRequeued explains a Requeue that matched no row.
func whyNotRequeued(ctx context.Context, tx execer, id string, now int64) error {
	var status Status
	var deadline sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT status, deadline FROM leaseq_jobs WHERE id = ?", id).Scan(&status, &deadline)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case status != StatusQuarantined:
		return fmt.Errorf("job is %s; only a quarantined job can be requeued: %w", status, ErrInvalid)
	default:
		return fmt.Errorf("deadline %s has passed (now %s); enqueue a new job instead: %w",
			fromMillis(deadline.Int64).Format(timeFormat), fromMillis(now).Format(timeFormat), ErrInvalid)
	}
}
