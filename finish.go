package leaseq

import (
	"context"
	"fmt"
)

// finishSQL is the fence (SPEC rule 3): the row changes only if the job is
// leased by this very claim — same ID, owner and token — and both the lease
// and the deadline are still running at now. At now == lease_until the lease
// is over (rule 4).
const finishSQL = `
UPDATE leaseq_jobs SET status = 'done', updated_at = ?4
WHERE id = ?1 AND owner = ?2 AND token = ?3 AND status = 'leased'
  AND lease_until > ?4 AND (deadline IS NULL OR deadline > ?4)`

// Finish records the job of c done, if c is still the job's current lease:
// the row's ID, owner and token equal c's, the job is leased, and now is
// before both its lease end and its deadline. Otherwise it returns false and
// leaves the row as it was — a stale token, a lease that ran out, a passed
// deadline, an unknown ID or a job already done are all false with a nil
// error. An error means the database could not be reached or c is not a
// claim at all (empty ID or owner, token <= 0: ErrInvalid); it never means
// "your lease was lost".
func (q *Queue) Finish(ctx context.Context, c Claim) (bool, error) {
	if err := checkClaim(c); err != nil {
		return false, err
	}
	var ok bool
	err := q.groupTx(ctx, func(ctx context.Context, tx execer) error {
		var err error
		ok, err = q.finishTx(ctx, tx, c, q.now())
		return err
	})
	if err != nil {
		return false, wrapOp("finish", c.ID, err)
	}
	return ok, nil
}

// checkClaim refuses a Claim that no Claim call could have returned.
func checkClaim(c Claim) error {
	if why := claimProblem(c); why != "" {
		return invalid("finish", c.ID, "%s", why)
	}
	return nil
}

// claimProblem says why c cannot be a claim, or returns "" if it can be.
func claimProblem(c Claim) string {
	switch {
	case c.ID == "":
		return "claim has an empty ID"
	case c.Owner == "":
		return "claim has an empty owner"
	case c.Token <= 0:
		return fmt.Sprintf("claim token %d is not positive", c.Token)
	}
	return ""
}

// finishTx runs the fence for one claim at time now and reports whether it
// matched.
func (q *Queue) finishTx(ctx context.Context, tx execer, c Claim, now int64) (bool, error) {
	res, err := tx.ExecContext(ctx, finishSQL, c.ID, c.Owner, c.Token, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("rows affected: %w", err)
	}
	return n == 1, nil
}
