package sqlite

import (
	"context"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobCycle runs a worker pool's cycle (rule 48 in docs/rules.md) in one
// write transaction, shared with other single calls by group commit: the
// handlers' FinishTx calls first, each as TxRun runs one (in a savepoint of
// its own), then the results, each fenced as JobSettle fences it, then the
// claim, each at the instant read under the lock. A cycle with nothing to
// record begins its transaction only if its idle check found work, as a
// Claim does (rule 23). SQLite judges every result: Cycle.Alone stays
// empty.
func (e *Engine) JobCycle(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	extended := e.extendAhead(ctx, p)
	w := write[engine.Cycle]{run: func(ctx context.Context, tx engine.Execer) (engine.Cycle, error) {
		return e.cycleTx(ctx, tx, p)
	}}
	if len(p.Results) == 0 && len(p.Txs) == 0 {
		w.idle = func(ctx context.Context, db engine.Execer) (bool, error) { return claimIdle(ctx, db, p.Queue) }
	}
	var c engine.Cycle
	var err error
	if grouped(p.Queue, engine.ShareCalls) {
		c, err = groupTx(ctx, e, p.Queue, w.idle, w.run)
	} else {
		c, err = writeTx(ctx, e, w)
	}
	c.Extended = extended
	switch {
	case errors.Is(err, errIdle):
		return engine.Cycle{Extended: extended}, nil
	case errors.Is(err, errCommitUnknown):
		e.releaseUnknown(ctx, p.Queue, c.Claims)
		return engine.Cycle{Extended: extended}, err
	}
	return c, err
}

// CycleTxs is true: a FinishTx takes the writer's turn whether it runs in
// a cycle or not, so in one it saves its commit.
func (e *Engine) CycleTxs() bool { return true }

// extendAhead commits the extensions of p ahead of its FinishTx calls, in
// a (possibly shared) write of their own: inside the cycle's transaction
// they would commit only after the FinishTx functions, and a lease that
// ended meanwhile would be renewed too late. A write that fails leaves the
// cycle to go on without them: the pool's lease ends guard the handlers.
func (e *Engine) extendAhead(ctx context.Context, p engine.JobCycleParams) []engine.Settled {
	if len(p.Extends) == 0 {
		return nil
	}
	rs, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: p.Queue, Calls: p.Extends, Share: engine.ShareCalls})
	if err != nil {
		return nil
	}
	if p.Renewed != nil {
		p.Renewed(rs)
	}
	return rs
}

// cycleTx is the body of a cycle's transaction: the FinishTx calls, the
// results, then the claim, which sees the slots' jobs as they left them.
func (e *Engine) cycleTx(ctx context.Context, tx engine.Execer, p engine.JobCycleParams) (engine.Cycle, error) {
	var c engine.Cycle
	var err error
	if c.Txs, err = e.cycleFns(ctx, tx, p); err != nil {
		return c, err
	}
	if c.Settled, err = settleTx(ctx, tx, p.Queue, p.Results); err != nil {
		return c, err
	}
	max := p.ClaimMax(c.Txs)
	if max == 0 {
		return c, nil
	}
	cp := engine.JobClaimParams{Queue: p.Queue, Owner: p.Owner, Lease: p.Lease, Max: max}
	c.Claims, err = claimTx(ctx, tx, cp)
	return c, err
}

// cycleFns runs a cycle's FinishTx calls in tx, whose statements run on
// run: each as fnTx runs one, unless its caller's context has ended,
// before Fn or by the time its Finish was judged (then rolled back to its
// savepoint: nothing of it written). A later context end is too late, as
// for a call of a shared transaction once it ran.
func (e *Engine) cycleFns(run context.Context, tx engine.Execer, p engine.JobCycleParams) ([]engine.TxOutcome, error) {
	var outs []engine.TxOutcome
	for _, t := range p.Txs {
		out := engine.TxOutcome{Err: t.Ctx.Err()}
		if out.Err == nil {
			var err error
			rp := engine.TxRunParams{Queue: p.Queue, Finish: &t.Finish, Fn: t.Fn}
			if out, err = e.fnTx(t.Ctx, run, tx, rp); err != nil {
				return nil, err
			}
		}
		outs = append(outs, out)
	}
	return outs, nil
}
