package main

import (
	"context"
	"fmt"
	"io"
)

const pauseUsage = `usage: leaseq pause -queue NAME [-db PATH|URL] [-json]

Pauses the queue NAME: no worker of any process claims its jobs until
"leaseq resume", and pools stop claiming at once. Handlers already running
go on and their results are recorded; jobs can still be enqueued. Pausing
a paused queue changes nothing. "leaseq stats" shows which queues are
paused.

flags:
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
	return setPaused(ctx, "pause", true, args, stdout)
}

// runResume is "leaseq resume".
func runResume(ctx context.Context, args []string, stdout, _ io.Writer) error {
	return setPaused(ctx, "resume", false, args, stdout)
}

// setPaused pauses or resumes the queue of -queue, which must be given: a
// pause of every queue at once is not a slip of the keyboard away.
func setPaused(ctx context.Context, cmd string, paused bool, args []string, stdout io.Writer) error {
	f, pos, err := parseCommand(cmd, args, nil)
	if err == nil {
		err = noArgs(pos)
	}
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
