package leaseq

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// Finish records the job of c done, if c is still the job's current lease:
// the row's ID, owner and token equal c's, the job is leased, and now is
// before both its lease end and its deadline. Otherwise it returns false and
// leaves the row as it was — a stale token, a lease that ran out, a passed
// deadline, an unknown ID or a job already done are all false with a nil
// error. An error means the database could not be reached or c is not a
// claim at all (empty ID or owner, token <= 0: [ErrInvalid]); it never means
// "your lease was lost".
func (q *Queue) Finish(ctx context.Context, c Claim) (bool, error) {
	return q.finish(ctx, c, engine.ShareCalls)
}

// finish is Finish, sharing its transaction as share allows (Work's are
// sharePool).
func (q *Queue) finish(ctx context.Context, c Claim, share engine.Sharing) (bool, error) {
	_, ok, err := q.settle(ctx, "finish", fence(c, engine.FenceFinish), "", share)
	return ok, err
}

// FinishBatch finishes each claim as [Queue.Finish] would, in one
// transaction, and reports for each whether it was accepted. Each claim is fenced on its own:
// a stale token, an ended lease or a passed deadline makes that entry false
// and leaves its row untouched, without affecting the others. A claim that
// could not have come from Claim (empty ID or owner, token <= 0) is an error
// wrapping [ErrInvalid] naming its index, and then nothing is written. All
// claims are judged at one instant, read from the clock under the lock.
func (q *Queue) FinishBatch(ctx context.Context, claims []Claim) ([]bool, error) {
	fs := make([]fenced, len(claims))
	for i, c := range claims {
		fs[i] = fence(c, engine.FenceFinish)
	}
	rs, err := q.settleBatch(ctx, "finish batch", fs, engine.JobSettleParams{Share: engine.ShareNone})
	if err != nil {
		return nil, err
	}
	oks := make([]bool, len(rs))
	for i, r := range rs {
		oks[i] = r.OK
	}
	return oks, nil
}
