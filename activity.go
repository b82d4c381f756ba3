package leaseq

import (
	"context"
	"fmt"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
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
	rows, err := q.e.QueueActivity(ctx, engine.QueueActivityParams{Queue: q.name, Since: first * 60000})
	if err != nil {
		return nil, opError("activity", "", err)
	}
	minutes := make([]Minute, last-first+1)
	for i := range minutes {
		minutes[i].Start = fromMillis((first + int64(i)) * 60000)
	}
	depth := 0
	for _, r := range rows {
		if r.Kind == "depth" {
			depth = r.N
			continue
		}
		m := &minutes[min(r.Minute, last)-first]
		switch r.Kind {
		case "enqueued":
			m.Enqueued += r.N
		case string(StatusDone):
			m.Done += r.N
		case string(StatusQuarantined):
			m.Quarantined += r.N
		}
	}
	fillDepth(minutes, depth)
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
