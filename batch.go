package leaseq

import (
	"context"
	"fmt"
	"time"
)

// The batch calls do for many jobs what Enqueue, Claim and Finish do for
// one, in one short BEGIN IMMEDIATE transaction with one commit. A commit
// costs four fsyncs however many rows it carries, so a batch of 100 costs
// little more than a single call. Keep batches in the hundreds: the write
// lock is held for the whole batch, and other processes wait for it.

// EnqueueBatch adds jobs as pending, all or nothing. An invalid job is an
// error wrapping ErrInvalid that names its index and field; an ID that
// appears twice in jobs, or is already in the queue in whatever state, is
// ErrDuplicate naming it. On any error nothing is written. An empty batch
// does nothing.
func (q *Queue) EnqueueBatch(ctx context.Context, jobs []Job) error {
	now := q.now()
	first := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if why := q.jobProblem(j, now); why != "" {
			return fmt.Errorf("leaseq: enqueue batch: jobs[%d] %q: %s: %w", i, j.ID, why, ErrInvalid)
		}
		if k, seen := first[j.ID]; seen {
			return fmt.Errorf("leaseq: enqueue batch: jobs[%d] %q has the ID of jobs[%d]: %w", i, j.ID, k, ErrDuplicate)
		}
		first[j.ID] = i
	}
	if len(jobs) == 0 {
		return nil
	}
	bad := -1 // the job whose INSERT failed, if one did
	err := q.writeTx(ctx, func(tx execer) error {
		bad = -1
		for i, j := range jobs {
			if err := q.insert(ctx, tx, j, now); err != nil {
				bad = i
				return err
			}
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case bad >= 0:
		return fmt.Errorf("leaseq: enqueue batch: jobs[%d] %q: %w", bad, jobs[bad].ID, err)
	default:
		return fmt.Errorf("leaseq: enqueue batch of %d: %w", len(jobs), err)
	}
}

// ClaimBatch leases up to max claimable jobs to owner for lease, in one
// transaction, and returns them in enqueue order (which jobs are picked is
// as for claimSQL). Each job is claimed exactly as Claim would claim
// it: its own new token and attempt, its lease capped at its deadline, and
// the same quarantine sweep first. With nothing claimable the result is an
// empty slice and a nil error. max must be at least 1; owner and lease are
// checked as in Claim.
func (q *Queue) ClaimBatch(ctx context.Context, owner string, lease time.Duration, max int) ([]Claim, error) {
	if max < 1 {
		return nil, fmt.Errorf("leaseq: claim batch as %q: max %d is not positive: %w", owner, max, ErrInvalid)
	}
	return q.claimN(ctx, "claim batch", owner, lease, max, q.soloTx)
}

// FinishBatch finishes each claim as Finish would, in one transaction, and
// reports for each whether it was accepted. Each claim is fenced on its own:
// a stale token, an ended lease or a passed deadline makes that entry false
// and leaves its row untouched, without affecting the others. A claim that
// could not have come from Claim (empty ID or owner, token <= 0) is an error
// wrapping ErrInvalid naming its index, and then nothing is written. All
// claims are judged at one instant, read from the clock under the lock.
func (q *Queue) FinishBatch(ctx context.Context, claims []Claim) ([]bool, error) {
	for i, c := range claims {
		if why := claimProblem(c); why != "" {
			return nil, fmt.Errorf("leaseq: finish batch: claims[%d] %q: %s: %w", i, c.ID, why, ErrInvalid)
		}
	}
	oks := make([]bool, len(claims))
	if len(claims) == 0 {
		return oks, nil
	}
	err := q.writeTx(ctx, func(tx execer) error {
		now := q.now()
		for i, c := range claims {
			var err error
			if oks[i], err = q.finishTx(ctx, tx, c, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("leaseq: finish batch: %w", err)
	}
	return oks, nil
}
