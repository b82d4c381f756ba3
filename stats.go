package leaseq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Stats and List are reads: they never take the write lock, and each is a
// few statements over the index leaseq_jobs_status, which covers them.

// statsSQL counts the queue's pending and leased jobs, and of those
// claimable at ?2 how many and since when, in one pass of their ranges of
// leaseq_jobs_status (grouping by status alone needs no sorting); the done
// and quarantined ones it reads from leaseq_counts, summing PostgreSQL's
// shards. One statement, so one snapshot on either engine.
const statsSQL = `
SELECT status, count(*), sum(CASE WHEN ` + claimableSQL + ` THEN 1 ELSE 0 END), min(CASE WHEN ` + claimableSQL + ` THEN due_at END)
FROM leaseq_jobs WHERE queue = ?1 AND status IN ('pending', 'leased') GROUP BY status
UNION ALL
SELECT status, sum(n), 0, NULL FROM leaseq_counts WHERE queue = ?1 GROUP BY status`

// Stats counts the queue's jobs by where they are, at one instant of the
// queue's clock. It is a read: it costs one pass over the index entries of
// the queue's pending and leased jobs, however many are done or
// quarantined, and takes no write lock.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	if err := q.callable(ctx); err != nil {
		return Stats{}, opError("stats", "", err)
	}
	var st Stats
	err := q.e.read(ctx, func(db execer) error {
		st = Stats{}
		rows, err := db.QueryContext(ctx, statsSQL, q.name, q.now())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var status Status
			var n, due int
			var oldest sql.NullInt64
			if err := rows.Scan(&status, &n, &due, &oldest); err != nil {
				return err
			}
			switch status {
			case StatusPending:
				st.Pending, st.Scheduled = due, n-due
			case StatusLeased:
				st.Expired, st.Leased = due, n-due
			case StatusDone:
				st.Done = n
			case StatusQuarantined:
				st.Quarantined = n
			}
			if t := nullTime(oldest); !t.IsZero() && (st.OldestReady.IsZero() || t.Before(st.OldestReady)) {
				if status == StatusPending || status == StatusLeased {
					st.OldestReady = t
				}
			}
		}
		return rows.Err()
	})
	if err != nil {
		return Stats{}, opError("stats", "", err)
	}
	return st, nil
}

// listOneSQL is a page of one status: a range of leaseq_jobs_status.
const listOneSQL = `SELECT ` + stateColumns + ` FROM leaseq_jobs
WHERE queue = ?1 AND status = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4`

// listAllSQL is a page of every status: the first ?3 of each status after
// ?2, merged. Each part is a range of leaseq_jobs_status, so a page costs
// at most four times its size at any depth.
const listAllSQL = `SELECT ` + stateColumns + ` FROM leaseq_jobs WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'pending' AND seq > ?2 ORDER BY seq LIMIT ?3) AS p
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'leased' AND seq > ?2 ORDER BY seq LIMIT ?3) AS l
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'done' AND seq > ?2 ORDER BY seq LIMIT ?3) AS d
    UNION ALL SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND status = 'quarantined' AND seq > ?2 ORDER BY seq LIMIT ?3) AS x
    ORDER BY seq LIMIT ?3)
ORDER BY seq`

// List returns a page of the queue's jobs in enqueue order: those of
// f.Status (every status if ""), after the job f.AfterID (from the start if
// ""), at most f.Limit of them. To page, pass the last ID of a page as the
// next AfterID; a short page is the last. A page costs the same at any depth
// of the queue, and like [Queue.Stats] it is a read that takes no write
// lock. A Limit below 0 or over [MaxListLimit], or an unknown Status, is
// [ErrInvalid]; an AfterID not in the queue (never there, or purged since)
// is [ErrNotFound].
func (q *Queue) List(ctx context.Context, f Filter) ([]State, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError("list", "", err)
	}
	if err := problem(filterProblem(f)); err != nil {
		return nil, opError("list", "", err)
	}
	if f.Limit == 0 {
		f.Limit = DefaultListLimit
	}
	if f.AfterID != "" && nameProblem("AfterID", f.AfterID) != "" {
		return nil, opError("list", "", fmt.Errorf("AfterID %q: %w", f.AfterID, ErrNotFound)) // see storedNames
	}
	var page []State
	err := q.e.read(ctx, func(db execer) error {
		page = page[:0]
		var after int64
		if f.AfterID != "" {
			err := db.QueryRowContext(ctx, "SELECT seq FROM leaseq_jobs WHERE queue = ?1 AND id = ?2",
				q.name, f.AfterID).Scan(&after)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("AfterID %q: %w", f.AfterID, ErrNotFound)
			} else if err != nil {
				return err
			}
		}
		query, args := listAllSQL, []any{q.name, after, f.Limit}
		if f.Status != "" {
			query, args = listOneSQL, []any{q.name, string(f.Status), after, f.Limit}
		}
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			s, err := scanState(rows)
			if err != nil {
				return err
			}
			page = append(page, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, opError("list", "", err)
	}
	return page, nil
}

// filterProblem validates a List filter.
func filterProblem(f Filter) string {
	switch f.Status {
	case "", StatusPending, StatusLeased, StatusDone, StatusQuarantined:
	default:
		return fmt.Sprintf("Status %q is not a status", f.Status)
	}
	if f.Limit < 0 || f.Limit > MaxListLimit {
		return fmt.Sprintf("Limit %d is outside 0..%d", f.Limit, MaxListLimit)
	}
	return ""
}
