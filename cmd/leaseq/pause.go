package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/leaseq/leaseq"
)

const pauseUsage = `usage: leaseq pause -queue NAME [-create] [-db PATH|URL] [-json]

Pauses the queue NAME: no worker of any process claims its jobs until
"leaseq resume", and pools stop claiming at once. Handlers already running
go on and their results are recorded; jobs can still be enqueued. Pausing
a paused queue changes nothing. "leaseq stats" shows which queues are
paused.

A queue that has no jobs and is not paused is refused, naming the queues
that have jobs, since its name is most likely mistyped: a pause of it
would stop nothing. -create pauses it anyway, so that its first jobs wait.

flags:
  -create               pause NAME even though it has no jobs yet
` + dbFlagsUsage + pauseJSONUsage

const resumeUsage = `usage: leaseq resume -queue NAME [-db PATH|URL] [-json]

Resumes the queue NAME after "leaseq pause": its jobs are claimed again,
and idle pools wake at once. Resuming a queue that is not paused changes
nothing.

flags:
` + dbFlagsUsage + pauseJSONUsage

// pauseJSONUsage documents the JSON of pause and resume.
const pauseJSONUsage = `
JSON:
  {"queue": "default", "paused": true}
  "paused" is the queue's state after the command.
`

// pauseJSON is pause -json and resume -json.
type pauseJSON struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
}

// runPause is "leaseq pause".
func runPause(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var create bool
	f, pos, err := parseCommand("pause", args, func(fs *flag.FlagSet) { fs.BoolVar(&create, "create", false, "") })
	if err != nil {
		return err
	}
	return setPaused(ctx, "pause", create, f, pos, stdout)
}

// runResume is "leaseq resume".
func runResume(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f, pos, err := parseCommand("resume", args, nil)
	if err != nil {
		return err
	}
	return setPaused(ctx, "resume", false, f, pos, stdout)
}

// setPaused pauses (cmd "pause") or resumes the queue of -queue, which must
// be given: a pause of every queue at once is not a slip of the keyboard
// away. A pause of a queue never seen needs create.
func setPaused(ctx context.Context, cmd string, create bool, f dbFlags, pos []string, stdout io.Writer) error {
	paused := cmd == "pause"
	err := noArgs(pos)
	if err == nil && f.queue == "" {
		err = usageError{"-queue is required: name the queue to " + cmd}
	}
	if err != nil {
		return err
	}
	s, err := openSession(ctx, f, true)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := s.queue(ctx, f.queue)
	if err != nil {
		return err
	}
	op := q.Resume
	if paused {
		op = q.Pause
		if !create {
			if err := seen(ctx, s, q); err != nil {
				return err
			}
		}
	}
	if err := op(ctx); err != nil {
		return fmt.Errorf("queue %q: %s", f.queue, reason(err))
	}
	if f.json {
		return writeJSON(stdout, pauseJSON{Queue: f.queue, Paused: paused})
	}
	verb := map[bool]string{true: "paused", false: "resumed"}[paused]
	_, err = fmt.Fprintf(stdout, "%s queue %q\n", verb, f.queue)
	return err
}

// seen refuses a queue that has no jobs and is not paused: pausing such a
// queue is a write that stops nothing, and it shows in no "leaseq stats"
// without -queue, so a mistyped name would pass unnoticed.
func seen(ctx context.Context, s *session, q *leaseq.Queue) error {
	st, err := q.Stats(ctx)
	if err != nil {
		return fmt.Errorf("queue %q: %s", q.Name(), reason(err))
	}
	if st.Paused || st.Pending+st.Scheduled+st.Leased+st.Expired+st.Done+st.Quarantined > 0 {
		return nil
	}
	names, err := leaseq.Queues(ctx, s.db)
	if err != nil {
		return errors.New(reason(err))
	}
	known := "no queue has jobs"
	if len(names) > 0 {
		known = "the queues with jobs are " + strings.Join(names, ", ")
	}
	return fmt.Errorf("queue %q has no jobs and is not paused; %s (pass -create to pause it before its first job)",
		q.Name(), known)
}
