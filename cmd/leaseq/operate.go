package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/leaseq/leaseq"
)

const requeueUsage = `usage: leaseq requeue [-db PATH|URL] [-queue NAME] [-json] ID...

Moves each quarantined job ID back to pending, claimable at once, with its
attempts reset and its reason cleared. A job that is not quarantined, or
whose deadline has passed, is left as it is. Without -queue, each ID is
looked for in every queue; when several queues have a job of that ID,
-queue must choose.

Every ID is tried, and each gets a line: what was done on stdout, why not
on stderr. The exit status is 1 if any ID failed.

flags:
` + dbFlagsUsage + resultsUsage

const cancelUsage = `usage: leaseq cancel [-db PATH|URL] [-queue NAME] [-reason TEXT] [-json] ID...

Quarantines each pending or leased job ID, an operator's stop: a worker
holding the job is refused when it next finishes, extends or releases it.
"leaseq requeue" undoes it. A job that is done or quarantined is left as
it is. Without -queue, each ID is looked for in every queue; when several
queues have a job of that ID, -queue must choose.

Every ID is tried, and each gets a line: what was done on stdout, why not
on stderr. The exit status is 1 if any ID failed.

flags:
  -reason TEXT          the reason stored with the jobs
                        (default "` + cancelReason + `")
` + dbFlagsUsage + resultsUsage

// resultsUsage documents the JSON of requeue and cancel.
const resultsUsage = `
JSON:
  {"results": [{"id": "order-7", "queue": "default", "ok": true},
               {"id": "order-9", "queue": "", "ok": false,
                "error": "job not found in any queue"}]}
  one result per ID, in the order given. "queue" is the queue of -queue, or
  the one the ID was found in; "" when no queue has it. "error" is there
  only when "ok" is false; failures are reported on stderr too.
`

// cancelReason is the reason cancel stores when -reason is not given.
const cancelReason = "cancelled by an operator"

// runRequeue is "leaseq requeue ID...".
func runRequeue(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, ids, err := parseCommand("requeue", args, nil)
	if err != nil {
		return err
	}
	return onEach(ctx, "requeue", "requeued", f, ids, stdout, stderr, func(q *leaseq.Queue, id string) error {
		return q.Requeue(ctx, id)
	})
}

// runCancel is "leaseq cancel ID...".
func runCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var why string
	f, ids, err := parseCommand("cancel", args, func(fs *flag.FlagSet) {
		fs.StringVar(&why, "reason", cancelReason, "")
	})
	if err != nil {
		return err
	}
	return onEach(ctx, "cancel", "cancelled", f, ids, stdout, stderr, func(q *leaseq.Queue, id string) error {
		return q.Cancel(ctx, id, why)
	})
}

// onEach does op to each job of ids, in its own transaction, and reports
// each: "DONE "ID" in queue "Q"" on stdout, or the failure on stderr. It
// returns errReported if any failed.
func onEach(ctx context.Context, cmd, done string, f dbFlags, ids []string, stdout, stderr io.Writer,
	op func(q *leaseq.Queue, id string) error) error {
	if len(ids) == 0 {
		return usageError{"want at least one job ID"}
	}
	s, err := openSession(ctx, f, true)
	if err != nil {
		return err
	}
	defer s.Close()
	out := resultsJSON{Results: []resultJSON{}}
	failed := false
	for _, id := range ids {
		res := resultJSON{ID: id}
		q, err := s.find(ctx, id)
		if err == nil {
			res.Queue = q.Name()
			err = s.notFound(op(q, id))
		}
		if err != nil {
			failed = true
			var je jobError
			if !errors.As(err, &je) {
				je = jobError{id, err}
			}
			res.Error = reason(je.err)
			report(stderr, cmd, je)
		} else {
			res.OK = true
			if !f.json {
				fmt.Fprintf(stdout, "%s %q in queue %q\n", done, id, res.Queue)
			}
		}
		out.Results = append(out.Results, res)
	}
	if f.json {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	}
	if failed {
		return errReported
	}
	return nil
}
