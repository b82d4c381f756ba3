package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/leaseq/leaseq"
)

const listUsage = `usage: leaseq list [-db PATH|URL] [-queue NAME] [-status STATUS] [-kind KIND]
                  [-limit N] [-after ID] [-json]

Lists jobs in the order they were enqueued, a page at a time: without
-queue, the first page of every queue that has jobs. When a page is full,
a last line says how to ask for the next one.

STATUS says "(scheduled)" of a pending job that runs later and "(expired)"
of a lease that has ended; ATTEMPTS is the claims so far of those allowed;
REASON is the first line of the reason, cut short ("leaseq show ID" gives
it in full).

flags:
  -status STATUS        only jobs in STATUS: pending, leased, done or
                        quarantined
  -kind KIND            only jobs of KIND (Job.Kind)
  -limit N              at most N jobs per queue, 1 to 1000 (default 100)
  -after ID             the page after job ID; needs -queue, as IDs are
                        unique per queue only
` + dbFlagsUsage + `
JSON:
  {"jobs": [JOB, ...], "more": [{"queue": "default", "after": "order-100"}]}
  JOB:
  {"queue": "default", "id": "order-7", "kind": "order.ship",
   "status": "quarantined", "qty": 3,
   "priority": 0, "owner": "worker-b", "token": 2, "attempts": 3,
   "max_attempts": 3, "enqueued_at": "2025-01-01T00:00:00Z",
   "updated_at": "2025-01-01T00:03:00Z", "run_at": null,
   "lease_until": "2025-01-01T00:03:00Z", "deadline": null,
   "reason": "max attempts reached, released: timeout"}
  "more" lists the queues whose page was full, with the -after to pass
  (with -queue) for the next page; it is [] on the last page.
`

// listArgs are list's own flags.
type listArgs struct {
	status string
	kind   string
	limit  int
	after  string
}

// reasonWidth is how many characters of a reason a list row shows.
const reasonWidth = 50

// runList is "leaseq list".
func runList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var la listArgs
	f, pos, err := parseCommand("list", args, func(fs *flag.FlagSet) {
		fs.StringVar(&la.status, "status", "", "")
		fs.StringVar(&la.kind, "kind", "", "")
		fs.IntVar(&la.limit, "limit", leaseq.DefaultListLimit, "")
		fs.StringVar(&la.after, "after", "", "")
	})
	if err == nil {
		err = noArgs(pos)
	}
	if err == nil {
		err = la.problem(f)
	}
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f, false)
	if err != nil {
		return err
	}
	defer s.Close()
	out, err := list(ctx, s, la)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(stdout, out)
	}
	return printList(stdout, out, s.now)
}

// problem refuses list's flags when they make no sense together.
func (la listArgs) problem(f dbFlags) error {
	switch leaseq.Status(la.status) {
	case "", leaseq.StatusPending, leaseq.StatusLeased, leaseq.StatusDone, leaseq.StatusQuarantined:
	default:
		return usageError{fmt.Sprintf("-status %q is not pending, leased, done or quarantined", la.status)}
	}
	if len(la.kind) > leaseq.MaxKindLen {
		return usageError{fmt.Sprintf("-kind is %d bytes, over the limit of %d", len(la.kind), leaseq.MaxKindLen)}
	}
	if la.limit < 1 || la.limit > leaseq.MaxListLimit {
		return usageError{fmt.Sprintf("-limit %d is outside 1..%d", la.limit, leaseq.MaxListLimit)}
	}
	if la.after != "" && f.queue == "" {
		return usageError{"-after needs -queue: job IDs are unique per queue only"}
	}
	return nil
}

// list reads a page of each queue the session covers.
func list(ctx context.Context, s *session, la listArgs) (listJSON, error) {
	out := listJSON{Jobs: []jobJSON{}, More: []moreJSON{}}
	names, err := s.names(ctx)
	if err != nil {
		return out, err
	}
	for _, name := range names {
		q, err := s.queue(ctx, name)
		if err != nil {
			return out, err
		}
		filter := leaseq.Filter{Status: leaseq.Status(la.status), AfterID: la.after, Limit: la.limit, Kind: la.kind}
		page, err := q.List(ctx, filter)
		if errors.Is(err, leaseq.ErrNotFound) {
			return out, jobError{la.after, fmt.Errorf("-after: job not found in queue %q", name)}
		} else if err != nil {
			return out, fmt.Errorf("queue %q: %s", name, reason(err))
		}
		for _, st := range page {
			out.Jobs = append(out.Jobs, toJobJSON(st))
		}
		if len(page) < la.limit {
			continue
		}
		// A full page may be the last; one more job says.
		filter.AfterID, filter.Limit = page[len(page)-1].ID, 1
		next, err := q.List(ctx, filter)
		if err != nil {
			return out, fmt.Errorf("queue %q: %s", name, reason(err))
		}
		if len(next) > 0 {
			out.More = append(out.More, moreJSON{Queue: name, After: filter.AfterID})
		}
	}
	return out, nil
}

// printList prints one row per job, then how to get the next pages.
func printList(w io.Writer, out listJSON, now time.Time) error {
	if len(out.Jobs) == 0 {
		_, err := fmt.Fprintln(w, "no jobs")
		return err
	}
	tw := newTable(w)
	tw.row("QUEUE", "ID", "KIND", "STATUS", "ATTEMPTS", "OWNER", "UPDATED", "REASON")
	for _, j := range out.Jobs {
		tw.row(cell(j.Queue), cell(j.ID), orNone(cell(j.Kind)), statusText(j, now), fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts),
			cell(j.Owner), when(j.UpdatedAt, now, tableTime), cell(cut(firstLine(listReason(j)), reasonWidth)))
	}
	if err := tw.flush(); err != nil {
		return err
	}
	for _, m := range out.More {
		if _, err := fmt.Fprintf(w, "more in queue %s: run again with -queue %s -after %s\n",
			cell(m.Queue), shellWord(m.Queue), shellWord(m.After)); err != nil {
			return err
		}
	}
	return nil
}

// listReason is the reason a list row shows: a quarantined job's as it is,
// a waiting job's marked as its retry's, and none for a done job, whose
// reason is only that of a retry before it succeeded and would read as a
// failure beside "done" (show and -json still give it).
func listReason(j jobJSON) string {
	switch {
	case j.Reason == "" || j.Status == string(leaseq.StatusDone):
		return ""
	case j.Status == string(leaseq.StatusQuarantined):
		return j.Reason
	}
	return "retried: " + j.Reason
}

// reasonLabel is what show calls a job's reason, by its status.
func reasonLabel(j jobJSON) string {
	switch j.Status {
	case string(leaseq.StatusQuarantined):
		return "why quarantined"
	case string(leaseq.StatusDone):
		return "reason of an earlier retry (the job is done)"
	}
	return "why retried"
}

// statusText is a job's status as list and show print it: a pending job
// that runs later is "(scheduled)", a lease that has ended "(expired)", as
// stats counts them.
func statusText(j jobJSON, now time.Time) string {
	switch {
	case j.Status == string(leaseq.StatusPending) && j.RunAt != nil && j.RunAt.After(now):
		return j.Status + " (scheduled)"
	case j.Status == string(leaseq.StatusLeased) && j.LeaseUntil != nil && !j.LeaseUntil.After(now):
		return j.Status + " (expired)"
	}
	return j.Status
}

// plainWord is a word a POSIX shell takes as it is.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellWord is s as one word to paste into a POSIX shell; one with
// characters that do not print is shown as cell shows it instead.
func shellWord(s string) string {
	if plainWord.MatchString(s) || cell(s) != s {
		return cell(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
