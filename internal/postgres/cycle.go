package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Worker pools on PostgreSQL (rule 48 in docs/rules.md). A commit waits for
// the server to flush its log, so a pool that finished one statement per
// job, and claimed in another, would spend most of its time waiting for
// flushes. A pool's cycle is therefore one statement (pool_step.sql): the
// finishes of every handler that returned since the last cycle, each fenced
// on its own exactly as a single one, then the claim that refills their
// slots, leaseq_claim's, at one instant on the server's clock with one
// commit.
//
// What the statement leaves to JobSettle (Cycle.Alone): a finish whose row
// another transaction holds, which the step skips rather than wait for, as
// a claim skips it, so that one locked row holds up no other result of the
// cycle nor its claim (it comes back unaccepted, and alone it waits for the
// row); and every result but a finish — releases, fails and snoozes are the
// rarer path, and each needs its own statement. On a queue with an
// injected clock (the tests' case) a cycle is two transactions: the
// results, then the claim.

// CycleTxs is false: a handler's FinishTx runs in a transaction of its own
// (TxRun), in parallel with the others on connections of their own. In the
// cycle's transaction each fn would run one after the other on one
// connection, and a slow fn, or a FinishTx row that another transaction
// holds (its lock waits, where the step's finishes skip such a row), would
// hold up every other result of the pool and its claim.
func (e *Engine) CycleTxs() bool { return false }

// stepWait bounds one cycle's statement, so that a pool does not wait
// forever on a server that stopped answering. A step cut short by it may
// still commit on the server; claims it made then stay leased until their
// leases end, as a crashed worker's do.
const stepWait = 30 * time.Second

// JobCycle runs a pool's cycle: in pool_step.sql on the server's clock,
// else as JobSettle, then JobClaim.
func (e *Engine) JobCycle(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	if !p.Queue.Clock.Server {
		return e.cycleApart(ctx, p)
	}
	c := engine.Cycle{Settled: make([]engine.Settled, len(p.Results))}
	a := newStepArgs(p)
	for i, f := range p.Results {
		if f.Kind != engine.FenceFinish {
			c.Alone = append(c.Alone, i)
		}
	}
	if len(a.fIDs) == 0 && p.Max == 0 {
		return c, nil
	}
	claims, err := e.stepFor(ctx, p, a, c.Settled)
	if err != nil {
		return engine.Cycle{}, err
	}
	c.Claims = claims
	for i, f := range p.Results {
		if f.Kind == engine.FenceFinish && !c.Settled[i].OK {
			c.Alone = append(c.Alone, i)
		}
	}
	slices.Sort(c.Alone)
	return c, nil
}

// cycleApart is a cycle on an injected clock: the results in one
// transaction, then the claim in another.
func (e *Engine) cycleApart(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	var c engine.Cycle
	var err error
	if len(p.Results) > 0 {
		sp := engine.JobSettleParams{Queue: p.Queue, Calls: p.Results, Share: engine.ShareNone}
		if c.Settled, err = e.JobSettle(ctx, sp); err != nil {
			return engine.Cycle{}, err
		}
	}
	if p.Max > 0 {
		cp := engine.JobClaimParams{Queue: p.Queue, Owner: p.Owner, Lease: p.Lease, Max: p.Max, Share: engine.ShareNone}
		c.Claims, err = e.JobClaim(ctx, cp)
	}
	return c, err
}

// stepFor runs the cycle's statement on a context of its own, bounded by
// stepWait, so that a step the server may still carry out is not cut off
// with its answer unread: when ctx ends first the caller leaves with ctx's
// error, and whatever the step then claimed is released once it answers
// (abandon), not left leased to a pool that is gone until the leases end.
func (e *Engine) stepFor(ctx context.Context, p engine.JobCycleParams, a stepArgs, settled []engine.Settled) ([]engine.ClaimRow, error) {
	type answer struct {
		claims []engine.ClaimRow
		err    error
	}
	mine := make([]engine.Settled, len(settled))
	done := make(chan answer, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepWait)
		defer cancel()
		claims, err := retry(sctx, e.db, func() ([]engine.ClaimRow, error) { return e.step(sctx, p, a, mine) })
		done <- answer{claims, interpretError(err)}
	}()
	select {
	case r := <-done:
		copy(settled, mine)
		return r.claims, r.err
	case <-ctx.Done():
	}
	go func() {
		if r := <-done; r.err == nil {
			e.abandon(p.Queue, r.claims)
		}
	}()
	return nil, ctx.Err()
}

// stepArgs are pool_step.sql's arguments after the queue: the finishes'
// arrays, then the claim requests' (one, or none).
type stepArgs struct {
	fIDs, fOwners, cOwners []string
	fTokens, cLeases       []int64
	cMaxes                 []int32
}

// newStepArgs gathers p's finishes and its claim.
func newStepArgs(p engine.JobCycleParams) stepArgs {
	var a stepArgs
	for _, f := range p.Results {
		if f.Kind == engine.FenceFinish {
			a.fIDs, a.fOwners, a.fTokens = append(a.fIDs, f.ID), append(a.fOwners, f.Owner), append(a.fTokens, f.Token)
		}
	}
	if p.Max > 0 {
		a.cOwners, a.cLeases, a.cMaxes = []string{p.Owner}, []int64{p.Lease}, []int32{int32(p.Max)}
	}
	return a
}

// step is one try of a cycle's statement: it marks the accepted finishes
// in settled, which it clears first, and returns the claims.
func (e *Engine) step(ctx context.Context, p engine.JobCycleParams, a stepArgs, settled []engine.Settled) ([]engine.ClaimRow, error) {
	clear(settled)
	rows, err := e.db.QueryContext(ctx, stmt("pool_step"), p.Queue.Name, a.fIDs, a.fOwners, a.fTokens, a.cOwners, a.cLeases, a.cMaxes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var got []engine.SeqClaim
	for rows.Next() {
		var req int
		var c engine.SeqClaim
		err := rows.Scan(&req, &c.Seq, &c.ID, &c.Owner, &c.Qty, &c.Payload, &c.Token, &c.Attempt,
			&c.LeaseUntil, &c.Deadline, &c.Priority, &c.Kind, &c.Created, &c.RunAt, &c.MaxAttempts)
		if err != nil {
			return nil, err
		}
		if req == 0 {
			finished(p.Results, settled, c.ClaimRow)
			continue
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return engine.ClaimOrder(got), nil
}

// finished marks in settled the first finish among results of the claim c,
// which the step accepted.
func finished(results []engine.Fenced, settled []engine.Settled, c engine.ClaimRow) {
	for i, f := range results {
		if f.Kind == engine.FenceFinish && !settled[i].OK && f.ID == c.ID && f.Owner == c.Owner && f.Token == c.Token {
			settled[i] = engine.Settled{OK: true, LeaseUntil: c.LeaseUntil}
			return
		}
	}
}
