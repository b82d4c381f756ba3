package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/leaseq/leaseq"
)

const purgeUsage = `usage: leaseq purge -older-than DURATION [-status STATUS] [-db PATH|URL]
                   [-queue NAME] [-json]

Deletes the jobs in STATUS whose last change (the finish, fail, cancel or
quarantine that put them there) is older than DURATION, and says how many
it deleted from each queue. Pending and leased jobs are never purged.
Without -queue it purges every queue that has jobs. It deletes in short
transactions, so workers keep going while it runs.

A purged ID may be enqueued again; its tokens continue where the purged
job's ended, so no claim from before the purge can touch the new job.

flags:
  -older-than DURATION  required: how long ago the last change must be,
                        such as 24h, 168h or 90m; 0s purges every job in
                        STATUS. There is no default, so that no purge
                        deletes more than its command line says.
  -status STATUS        done, quarantined, or done,quarantined
                        (default done)
` + dbFlagsUsage + `
JSON:
  {"before": "2024-12-31T00:00:00Z", "older_than": "24h",
   "statuses": ["done"], "purged": 1204,
   "queues": [{"queue": "default", "purged": 1204}]}
  "before" is now minus -older-than; "purged" is the total. A queue whose
  purge failed part way has "error", and its "purged" counts the jobs
  deleted before the failure.
`

// runPurge is "leaseq purge".
func runPurge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var olderThan ageFlag
	var status string
	f, pos, err := parseCommand("purge", args, func(fs *flag.FlagSet) {
		fs.Var(&olderThan, "older-than", "")
		fs.StringVar(&status, "status", string(leaseq.StatusDone), "")
	})
	if err == nil {
		err = noArgs(pos)
	}
	if err == nil && !olderThan.set {
		err = usageError{"-older-than is required: say how old the jobs to delete must be, such as 24h"}
	}
	if err != nil {
		return err
	}
	statuses, err := purgeStatuses(status)
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f, true)
	if err != nil {
		return err
	}
	defer s.Close()
	out, failures := purge(ctx, s, olderThan.d, statuses)
	for _, err := range failures {
		report(stderr, "purge", err)
	}
	if f.json {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else if err := printPurge(stdout, out); err != nil {
		return err
	}
	if len(failures) > 0 {
		return errReported
	}
	return nil
}

// ageFlag is -older-than: a duration that is not negative, and whether it
// was given at all.
type ageFlag struct {
	d   time.Duration
	set bool
}

func (a *ageFlag) String() string {
	if a == nil {
		return ""
	}
	return duration(a.d)
}

func (a *ageFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a duration like 24h or 90m")
	case d < 0:
		return fmt.Errorf("negative")
	}
	a.d, a.set = d, true
	return nil
}

// purgeStatuses parses -status: done, quarantined, or both separated by a
// comma.
func purgeStatuses(v string) ([]leaseq.Status, error) {
	var statuses []leaseq.Status
	for _, word := range strings.Split(v, ",") {
		st := leaseq.Status(strings.TrimSpace(word))
		if st != leaseq.StatusDone && st != leaseq.StatusQuarantined {
			return nil, usageError{fmt.Sprintf("-status %q: only done and quarantined jobs can be purged", v)}
		}
		statuses = append(statuses, st)
	}
	slices.Sort(statuses)
	return slices.Compact(statuses), nil
}

// purge purges every queue the session covers, going on past a queue that
// fails, and returns what it did and the failures.
func purge(ctx context.Context, s *session, olderThan time.Duration, statuses []leaseq.Status) (purgeJSON, []error) {
	// The queue counts whole milliseconds; before is shown as it compares.
	out := purgeJSON{Before: s.now.Add(-olderThan).UTC().Truncate(time.Millisecond), OlderThan: duration(olderThan),
		Statuses: statuses, Queues: []queuePurgedJSON{}}
	names, err := s.names(ctx)
	if err != nil {
		return out, []error{err}
	}
	var failures []error
	for _, name := range names {
		res := queuePurgedJSON{Queue: name}
		q, err := s.queue(ctx, name)
		if err == nil {
			res.Purged, err = q.Purge(ctx, out.Before, statuses...)
		}
		if err != nil {
			res.Error = reason(err)
			failures = append(failures, fmt.Errorf("queue %q: %s", name, res.Error))
		}
		out.Purged += res.Purged
		out.Queues = append(out.Queues, res)
	}
	return out, failures
}

// printPurge says what purge did, one line per queue:
//
//	purged 1,204 done jobs older than 24h from queue "default"
func printPurge(w io.Writer, out purgeJSON) error {
	if len(out.Queues) == 0 {
		_, err := fmt.Fprintln(w, "no queue has jobs; nothing purged")
		return err
	}
	var what []string
	for _, st := range out.Statuses {
		what = append(what, string(st))
	}
	for _, q := range out.Queues {
		if _, err := fmt.Fprintf(w, "purged %s %s %s older than %s from queue %q\n", count(q.Purged),
			strings.Join(what, " and "), noun(q.Purged, "job"), out.OlderThan, q.Queue); err != nil {
			return err
		}
	}
	return nil
}
