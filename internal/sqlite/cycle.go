package sqlite

import (
	"context"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobCycle runs a worker pool's cycle (rule 48 in docs/rules.md) in one
// write transaction, shared with other single calls by group commit: the
// results first, each fenced as JobSettle fences it, then the claim, all
// at the instant read under the lock. A cycle with no result to record
// begins its transaction only if its idle check found work, as a Claim
// does (rule 23). SQLite judges every result: Cycle.Alone stays empty.
func (e *Engine) JobCycle(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	w := write[engine.Cycle]{run: func(ctx context.Context, tx engine.Execer) (engine.Cycle, error) {
		return cycleTx(ctx, tx, p)
	}}
	if len(p.Results) == 0 {
		w.idle = func(ctx context.Context, db engine.Execer) (bool, error) { return claimIdle(ctx, db, p.Queue) }
	}
	var c engine.Cycle
	var err error
	if grouped(p.Queue, engine.ShareCalls) {
		c, err = groupTx(ctx, e, p.Queue, w.idle, w.run)
	} else {
		c, err = writeTx(ctx, e, w)
	}
	switch {
	case errors.Is(err, errIdle):
		return engine.Cycle{}, nil
	case errors.Is(err, errCommitUnknown):
		e.releaseUnknown(ctx, p.Queue, c.Claims)
		return engine.Cycle{}, err
	}
	return c, err
}

// cycleTx is the body of a cycle's transaction: the results, then the
// claim, which sees the slots' jobs as the results left them.
func cycleTx(ctx context.Context, tx engine.Execer, p engine.JobCycleParams) (engine.Cycle, error) {
	var c engine.Cycle
	var err error
	if c.Settled, err = settleTx(ctx, tx, p.Queue, p.Results); err != nil || p.Max == 0 {
		return c, err
	}
	cp := engine.JobClaimParams{Queue: p.Queue, Owner: p.Owner, Lease: p.Lease, Max: p.Max}
	c.Claims, err = claimTx(ctx, tx, cp)
	return c, err
}
