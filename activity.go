package leaseq

import (
	"context"
	"fmt"
	"time"
)

// Minute is one minute of a queue's history, as [Queue.Activity] returns
// it. Every count comes from the rows as they are now, so it counts the
// work of every process on the database.
type Minute struct {
	// Start is the minute's first instant, a whole minute of Unix time, in
	// UTC.
	Start time.Time
	// Enqueued counts the jobs enqueued in the minute that are still in the
	// queue (a purged job is forgotten).
	Enqueued int
	// Done counts the jobs that finished in the minute and were not purged
	// since.
	Done int
	// Quarantined counts the jobs quarantined in the minute (failed,
	// cancelled, or swept by a Claim for their attempts or deadline) that
	// are still quarantined: one requeued since counts nowhere.
	Quarantined int
	// Depth is how many jobs were pending or leased at the minute's end, or
	// now for the minute that is still running. It is worked out backwards
	// from the depth now, so a job requeued since it was quarantined in the
	// window counts as waiting all along, and a purged job that finished in
	// the window counts as never having waited.
	Depth int
}

// MaxActivitySpan is how far back [Queue.Activity] reaches at most.
const MaxActivitySpan = 24 * time.Hour

// activitySQL gathers a queue's history since ?2 in one statement, so that
// all its counts come from one snapshot. It reads index entries only:
//   - jobs done and quarantined per minute, and of those the ones enqueued
//     since ?2 (a job finishes after it is enqueued, so every finished job
//     enqueued since ?2 is in the same range), by enqueue minute: two passes
//     of the range of leaseq_jobs_finished since ?2;
//   - the pending and leased jobs, counted, and those enqueued since ?2 by
//     enqueue minute: two passes of their ranges of leaseq_jobs_status.
//
// So its cost grows with the jobs finished since ?2 and with the jobs
// waiting or held now, never with the done rows of before ?2. Counting the
// enqueues from these two ranges, rather than from an index of every job by
// enqueue time, spares every Enqueue a write to one more index. Minutes are
// the integer division of Unix milliseconds by 60000.
const activitySQL = `
SELECT status, updated_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('done', 'quarantined') AND updated_at >= ?2
GROUP BY status, updated_at / 60000
UNION ALL
SELECT 'enqueued', created_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('done', 'quarantined') AND updated_at >= ?2 AND created_at >= ?2
GROUP BY created_at / 60000
UNION ALL
SELECT 'enqueued', created_at / 60000, count(*) FROM leaseq_jobs
WHERE queue = ?1 AND status IN ('pending', 'leased') AND created_at >= ?2
GROUP BY created_at / 60000
UNION ALL
SELECT 'depth', 0, count(*) FROM leaseq_jobs WHERE queue = ?1 AND status IN ('pending', 'leased')`

// Activity returns the queue's history minute by minute, from the minute
// that holds since to the one that holds now by the queue's clock, oldest
// first: how many jobs were enqueued, done and quarantined in each, and how
// deep the queue was at its end. It is a read like [Queue.Stats] and takes
// no write lock. Its cost grows with the jobs finished since since and the
// jobs pending or leased now (a pass over their index entries, like Stats);
// never with the done jobs of before since. A since after now, or more than
// [MaxActivitySpan] before it (so also one outside years 1 to 9999), is
// [ErrInvalid].
//
// An event stamped after now by the clock of another process falls in the
// last minute. A job enqueued in the window by a process whose clock runs
// ahead of the one that finished it, so that it seems to finish before it
// was enqueued, is missed from Enqueued.
func (q *Queue) Activity(ctx context.Context, since time.Time) ([]Minute, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError("activity", "", err)
	}
	now := q.now()
	why := timeProblem("since", since, "")
	if why == "" {
		why = activityProblem(toMillis(since), now)
	}
	if err := problem(why); err != nil {
		return nil, opError("activity", "", err)
	}
	first, last := toMillis(since)/60000, now/60000
	var minutes []Minute
	err := q.e.read(ctx, func(db execer) error {
		minutes = make([]Minute, last-first+1)
		for i := range minutes {
			minutes[i].Start = fromMillis((first + int64(i)) * 60000)
		}
		rows, err := db.QueryContext(ctx, activitySQL, q.name, first*60000)
		if err != nil {
			return err
		}
		defer rows.Close()
		depth := 0
		for rows.Next() {
			var kind string
			var minute int64
			var n int
			if err := rows.Scan(&kind, &minute, &n); err != nil {
				return err
			}
			if kind == "depth" {
				depth = n
				continue
			}
			m := &minutes[min(minute, last)-first]
			switch kind {
			case "enqueued":
				m.Enqueued += n
			case string(StatusDone):
				m.Done += n
			case string(StatusQuarantined):
				m.Quarantined += n
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		fillDepth(minutes, depth)
		return nil
	})
	if err != nil {
		return nil, opError("activity", "", err)
	}
	return minutes, nil
}

// fillDepth sets each minute's Depth from the depth now, walking back: a
// minute ended with the jobs that were waiting at the end of the next one,
// less those enqueued in the next one, plus those that finished in it. A
// requeue or a purge in the window can make the walk go below zero, which
// is shown as zero.
func fillDepth(minutes []Minute, now int) {
	depth := now
	for i := len(minutes) - 1; i >= 0; i-- {
		minutes[i].Depth = max(depth, 0)
		depth += minutes[i].Done + minutes[i].Quarantined - minutes[i].Enqueued
	}
}

// activityProblem validates the since of an Activity call (both in Unix
// milliseconds).
func activityProblem(since, now int64) string {
	switch {
	case since > now:
		return fmt.Sprintf("since %s is after now %s", fmtMillis(since), fmtMillis(now))
	case since < now-MaxActivitySpan.Milliseconds(): // not now-since, which could overflow
		return fmt.Sprintf("since %s is more than %s before now %s", fmtMillis(since), MaxActivitySpan, fmtMillis(now))
	}
	return ""
}
