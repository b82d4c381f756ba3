package leaseq

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// Pause stops every process from claiming the queue's jobs (rule 54 in
// docs/rules.md): it is stored in the database, so Claim and ClaimBatch
// return nothing and take no write lock, and Work pools stop claiming — in
// this process at once, in others at their next claim. Handlers already
// running go on and their results are recorded; Enqueue still works.
// Pausing a paused queue changes nothing. [Stats] reports it; [Queue.Resume]
// undoes it.
func (q *Queue) Pause(ctx context.Context) error {
	return q.pause(ctx, "pause", true)
}

// Resume lets the queue's jobs be claimed again after [Queue.Pause], and
// wakes this process's idle pools of the queue at once. Resuming a queue
// that is not paused changes nothing.
func (q *Queue) Resume(ctx context.Context) error {
	if err := q.pause(ctx, "resume", false); err != nil {
		return err
	}
	q.e.Wakers().Signal(q.name)
	return nil
}

// pause stores paused for the queue.
func (q *Queue) pause(ctx context.Context, op string, paused bool) error {
	if err := q.callable(ctx); err != nil {
		return opError(op, "", err)
	}
	if err := q.e.QueuePause(ctx, engine.QueuePauseParams{Queue: q.ref(), Paused: paused}); err != nil {
		return opError(op, "", err)
	}
	return nil
}
