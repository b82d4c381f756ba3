package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leaseq/leaseq"
)

const statsUsage = `usage: leaseq stats [-db PATH|URL] [-queue NAME] [-json]

Counts each queue's jobs by status, at one instant: pending (claimable
now), scheduled (pending, runs later), leased (lease live), expired (lease
ended, claimable again), done and quarantined, and since when the
longest-waiting claimable job has been claimable. Without -queue it covers
every queue that has jobs. A worker pool (Work) purges done jobs after 24h
and quarantined jobs after 7 days unless its WorkerOptions.Retention says
otherwise, as the line under the table says.

flags:
` + dbFlagsUsage + `
JSON:
  {"queues": [{"queue": "default", "pending": 3, "scheduled": 1,
               "leased": 1, "expired": 1, "done": 2, "quarantined": 2,
               "oldest_ready": "2025-01-01T00:00:00Z", "paused": false}]}
  oldest_ready is null when nothing is claimable; "queues" is [] when no
  queue has jobs. A paused queue (leaseq pause) is "paused": true, and
  "(paused)" after its name in the table.
`

// runStats is "leaseq stats".
func runStats(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, pos, err := parseCommand("stats", args, nil)
	if err == nil {
		err = noArgs(pos)
	}
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f, false)
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := stats(ctx, s)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, out)
	}
	return printStats(stdout, out, s.now)
}

// stats counts the jobs of each queue the session covers.
func stats(ctx context.Context, s *session) (statsJSON, error) {
	out := statsJSON{Queues: []queueStatsJSON{}}
	names, err := s.names(ctx)
	if err != nil {
		return out, err
	}
	for _, name := range names {
		q, err := s.queue(ctx, name)
		if err != nil {
			return out, err
		}
		st, err := q.Stats(ctx)
		if err != nil {
			return out, fmt.Errorf("queue %q: %s", name, reason(err))
		}
		out.Queues = append(out.Queues, queueStatsJSON{
			Queue: name, Pending: st.Pending, Scheduled: st.Scheduled, Leased: st.Leased,
			Expired: st.Expired, Done: st.Done, Quarantined: st.Quarantined,
			OldestReady: instant(st.OldestReady), Paused: st.Paused,
		})
	}
	return out, nil
}

// printStats prints one row per queue.
func printStats(w io.Writer, out statsJSON, now time.Time) error {
	if len(out.Queues) == 0 {
		_, err := fmt.Fprintln(w, "no jobs in any queue")
		return err
	}
	tw := newTable(w)
	tw.row("QUEUE", "PENDING", "SCHEDULED", "LEASED", "EXPIRED", "DONE", "QUARANTINED", "OLDEST READY")
	for _, q := range out.Queues {
		oldest := "-"
		if q.OldestReady != nil {
			oldest = when(*q.OldestReady, now, tableTime)
		}
		name := cell(q.Queue)
		if q.Paused {
			name += " (paused)"
		}
		tw.row(name, count(q.Pending), count(q.Scheduled), count(q.Leased), count(q.Expired),
			count(q.Done), count(q.Quarantined), oldest)
	}
	if err := tw.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "retention: worker pools purge done jobs after %s and quarantined jobs after %s by default (WorkerOptions.Retention)\n",
		age(leaseq.RetentionDoneDefault), age(leaseq.RetentionQuarantinedDefault))
	return err
}

// age prints a retention age: in days when whole days over one, else as
// time.Duration does, without its zero minutes and seconds.
func age(d time.Duration) string {
	const day = 24 * time.Hour
	if d > day && d%day == 0 {
		return fmt.Sprintf("%d days", d/day)
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}
