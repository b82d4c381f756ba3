package leaseq

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// purgeChunk is how many jobs one Purge transaction deletes at most, so the
// write lock is never held for long whatever the size of the purge.
const purgeChunk = 500

// purgeSelect picks the next chunk: jobs of status ?2 whose last change is
// before ?3, from leaseq_jobs_finished. The IN repeats the index's
// condition, which a bound ?2 alone cannot show the planner.
const purgeSelect = `SELECT seq FROM leaseq_jobs
    WHERE queue = ?1 AND status = ?2 AND status IN ('done', 'quarantined') AND updated_at < ?3
    ORDER BY updated_at LIMIT ?4`

// purgeSQL remembers the last token of each job of the chunk that was ever
// claimed, then deletes the chunk. The second statement picks the same rows
// as the first: nothing changes leaseq_jobs between them.
var purgeSQL = [...]string{`
INSERT INTO leaseq_purged (queue, id, token)
SELECT queue, id, token FROM leaseq_jobs WHERE seq IN (` + purgeSelect + `) AND token > 0
ON CONFLICT (queue, id) DO UPDATE SET token = excluded.token`,
	`DELETE FROM leaseq_jobs WHERE seq IN (` + purgeSelect + `)`}

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
			n, err := q.e.purgeChunk(ctx, q, st, b)
			total += n
			if err != nil {
				return total, opError("purge", "", fmt.Errorf("after deleting %d jobs: %w", total, err))
			}
			if n < purgeChunk {
				break
			}
		}
	}
	return total, nil
}

// purgeChunk deletes one chunk in a transaction of its own, and returns
// how many jobs it deleted: none when it fails.
func (s *store) purgeChunk(ctx context.Context, q *Queue, st Status, before int64) (int, error) {
	var n int
	err := s.writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		var err error
		n, err = purgeTx(ctx, tx, q, st, before)
		return err
	})
	if err != nil {
		return 0, err // rolled back: nothing of the chunk deleted
	}
	return n, nil
}

// purgeTx runs purgeSQL and returns how many jobs it deleted: SQLite's
// purge, whose write lock keeps the rows as they are between the two
// statements (PostgreSQL's is pgPurgeSQL).
func purgeTx(ctx context.Context, tx execer, q *Queue, st Status, before int64) (int, error) {
	if _, err := tx.ExecContext(ctx, purgeSQL[0], q.name, st, before, purgeChunk); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, purgeSQL[1], q.name, st, before, purgeChunk)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
