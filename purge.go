package leaseq

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// A purge runs in chunks of engine.PurgeChunk jobs, each a transaction of
// its own, so that the write lock is never held for long whatever the size
// of the purge.

// Purge deletes the queue's jobs in the given statuses ([StatusDone] and/or
// [StatusQuarantined]; none given means StatusDone) whose last change — the
// finish, fail, cancel or quarantine that put them there — is strictly
// before before, and returns how many it deleted. It works in short
// transactions of at most a few hundred jobs, so other writers, and other
// processes, get their turn between them; if it fails part way, the count
// says what was deleted. Pending and leased jobs are never purged; asking
// for another status, or a before outside years 1 to 9999, is [ErrInvalid]
// and deletes nothing.
//
// A purged ID may be enqueued again. The new job's tokens continue where
// the purged job's ended (its first claim gets the old last token + 1) and
// its attempts start at 0, so no claim made before the purge can ever
// finish, extend, release or fail the new job. The queue keeps one small
// row per purged ID for this.
func (q *Queue) Purge(ctx context.Context, before time.Time, statuses ...Status) (int, error) {
	if err := q.callable(ctx); err != nil {
		return 0, opError("purge", "", err)
	}
	if len(statuses) == 0 {
		statuses = []Status{StatusDone}
	}
	for _, st := range statuses {
		if st != StatusDone && st != StatusQuarantined {
			return 0, opError("purge", "", invalid("status %q cannot be purged; only %q and %q jobs can",
				st, StatusDone, StatusQuarantined))
		}
	}
	if err := problem(timeProblem("before", before, "")); err != nil {
		return 0, opError("purge", "", err)
	}
	statuses = slices.Compact(slices.Sorted(slices.Values(statuses)))
	b := toMillis(before)
	total := 0
	for _, st := range statuses {
		for {
			n, err := q.e.JobPurgeChunk(ctx, engine.JobPurgeChunkParams{Queue: q.name, Status: string(st), Before: b})
			total += n
			if err != nil {
				return total, opError("purge", "", fmt.Errorf("after deleting %d jobs: %w", total, err))
			}
			if n < engine.PurgeChunk {
				break
			}
		}
	}
	return total, nil
}
