package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
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

// stepWait bounds one cycle's statement, so that a pool does not wait
// forever on a server that stopped answering. A step cut short by it may
// still commit on the server; claims it made then stay leased until their
// leases end, as a crashed worker's do.
const stepWait = 30 * time.Second

// JobCycle runs a pool's cycle: in pool_step.sql on the server's clock,
// else as JobSettle, then JobClaim. The handlers' FinishTx calls (Txs), if
// any, run first in the transaction of the step (stepTxs).
func (e *Engine) JobCycle(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	if !p.Queue.Clock.Server {
		return e.cycleApart(ctx, p)
	}
	if len(p.Txs) == 0 && p.Max == 0 && !slices.ContainsFunc(p.Results, isFinish) {
		return engine.Cycle{Settled: make([]engine.Settled, len(p.Results)), Alone: allIndexes(p.Results)}, nil
	}
	out, err := e.stepFor(ctx, p)
	if err != nil {
		return engine.Cycle{}, err
	}
	c := engine.Cycle{Txs: out.txs, Settled: out.settled, Claims: out.claims}
	for i := range p.Results {
		if !c.Settled[i].OK {
			c.Alone = append(c.Alone, i)
		}
	}
	return c, nil
}

func isFinish(f engine.Fenced) bool { return f.Kind == engine.FenceFinish }

// allIndexes lists the index of every result: all left to JobSettle.
func allIndexes(results []engine.Fenced) []int {
	alone := make([]int, len(results))
	for i := range alone {
		alone[i] = i
	}
	return alone
}

// cycleApart is a cycle on an injected clock: each FinishTx in a
// transaction of its own, the results in one transaction, then the claim
// in another.
func (e *Engine) cycleApart(ctx context.Context, p engine.JobCycleParams) (engine.Cycle, error) {
	var c engine.Cycle
	var err error
	for _, t := range p.Txs {
		out, err := e.TxRun(t.Ctx, engine.TxRunParams{Queue: p.Queue, Finish: &t.Finish, Fn: t.Fn})
		if err != nil {
			out = engine.TxOutcome{Err: err}
		}
		c.Txs = append(c.Txs, out)
	}
	if len(p.Results) > 0 {
		sp := engine.JobSettleParams{Queue: p.Queue, Calls: p.Results, Share: engine.ShareNone}
		if c.Settled, err = e.JobSettle(ctx, sp); err != nil {
			return engine.Cycle{}, err
		}
	}
	if max := p.ClaimMax(c.Txs); max > 0 {
		cp := engine.JobClaimParams{Queue: p.Queue, Owner: p.Owner, Lease: p.Lease, Max: max, Share: engine.ShareNone}
		c.Claims, err = e.JobClaim(ctx, cp)
	}
	return c, err
}

// stepOut is what one cycle's step did: the outcome of each Tx and each
// result (a result it did not accept is left to JobSettle), and the
// claims.
type stepOut struct {
	txs     []engine.TxOutcome
	settled []engine.Settled
	claims  []engine.ClaimRow
}

// stepFor runs the cycle's step on a context of its own, bounded by
// stepWait, so that a step the server may still carry out is not cut off
// with its answer unread: when ctx ends first the caller leaves with ctx's
// error, and whatever the step then claimed is released once it answers
// (abandon), not left leased to a pool that is gone until the leases end.
func (e *Engine) stepFor(ctx context.Context, p engine.JobCycleParams) (stepOut, error) {
	type answer struct {
		out stepOut
		err error
	}
	done := make(chan answer, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stepWait)
		defer cancel()
		out, err := e.stepRun(sctx, p)
		done <- answer{out, interpretError(err)}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
	}
	go func() {
		if r := <-done; r.err == nil {
			e.abandon(p.Queue, r.out.claims)
		}
	}()
	return stepOut{}, ctx.Err()
}

// stepRun is the step: without Txs one statement on the pool of
// connections, retried on a serialization failure or deadlock; with them,
// stepTxs.
func (e *Engine) stepRun(ctx context.Context, p engine.JobCycleParams) (stepOut, error) {
	if len(p.Txs) > 0 {
		return e.stepTxs(ctx, p)
	}
	return retry(ctx, func() (stepOut, error) { return e.step(ctx, e.db, p, nil) })
}

// txUndone rolls back a try of stepTxs whose Tx i has the outcome out
// (refused, Fn's error, its caller gone): nothing of it may be kept, and
// the others are run again in the next try without it.
type txUndone struct {
	i   int
	out engine.TxOutcome
}

func (u *txUndone) Error() string {
	return fmt.Sprintf("leaseq: FinishTx %d of a cycle is rolled back", u.i)
}

// stepTxs runs a cycle with FinishTx calls as one transaction: their rows
// locked, each fence checked and each Fn run, then the step, which judges
// their finishes again with the results'. A Tx that does not commit rolls
// the try back whole (a savepoint per Fn would cost two more round trips
// each on the path every job takes), and the cycle runs again without it:
// at most once per Tx.
func (e *Engine) stepTxs(ctx context.Context, p engine.JobCycleParams) (stepOut, error) {
	decided := make([]*engine.TxOutcome, len(p.Txs))
	for {
		out, err := write(ctx, e, func(run context.Context, tx engine.Execer) (stepOut, error) {
			return e.stepTxsTry(run, tx, p, decided)
		})
		var u *txUndone
		if !errors.As(err, &u) {
			for i, d := range decided {
				if d != nil && err == nil {
					out.txs[i] = *d
				}
			}
			return out, err
		}
		decided[u.i] = &u.out
	}
}

// stepTxsTry is one try of stepTxs in tx, whose statements run on run; the
// Txs decided already are left out.
func (e *Engine) stepTxsTry(run context.Context, tx engine.Execer, p engine.JobCycleParams, decided []*engine.TxOutcome) (stepOut, error) {
	var ids []string
	for i, t := range p.Txs {
		if decided[i] == nil {
			ids = append(ids, t.Finish.ID)
		}
	}
	if err := lockJobs(run, tx, p.Queue.Name, ids...); err != nil {
		return stepOut{}, err
	}
	ran := make([]bool, len(p.Txs))
	for i, t := range p.Txs {
		if decided[i] != nil {
			continue
		}
		out, err := e.cycleFn(run, tx, p.Queue, t)
		if err != nil || !out.Accepted() {
			return stepOut{}, cmp.Or(err, error(&txUndone{i, out}))
		}
		ran[i] = true
	}
	out, err := e.step(run, tx, p, ran)
	if err != nil {
		return stepOut{}, err
	}
	for i, r := range ran {
		if r && !out.txs[i].Accepted() {
			return stepOut{}, &txUndone{i, out.txs[i]}
		}
	}
	return out, nil
}

// cycleFn runs the Fn of t in tx, its row locked already, unless its
// caller left or its fence refuses: then that is the outcome.
func (e *Engine) cycleFn(run context.Context, tx engine.Execer, q engine.Queue, t engine.CycleTx) (engine.TxOutcome, error) {
	if err := t.Ctx.Err(); err != nil {
		return engine.TxOutcome{Err: err}, nil
	}
	var until int64
	err := tx.QueryRowContext(run, stmt("fence_check"), q.Name, t.Finish.ID, t.Finish.Owner, t.Finish.Token, q.Clock.Arg()).Scan(&until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.TxOutcome{Refused: true}, nil
	case err != nil:
		return engine.TxOutcome{}, err
	}
	return e.fnRun(t.Ctx, run, tx, q, t.Fn)
}

// stepArgs are pool_step.sql's arguments after the queue: the finishes'
// arrays, then the claim requests' (one, or none).
type stepArgs struct {
	fIDs, fOwners, cOwners []string
	fTokens, cLeases       []int64
	cMaxes                 []int32
}

// finish adds f to the finishes.
func (a *stepArgs) finish(f engine.Fenced) {
	a.fIDs, a.fOwners, a.fTokens = append(a.fIDs, f.ID), append(a.fOwners, f.Owner), append(a.fTokens, f.Token)
}

// newStepArgs gathers p's finishes, those of the Txs that ran, and the
// claim: p.Max, and one more for each Tx that ran when the cycle refills
// their slots (a Tx its finish then refuses undoes the try: stepTxs).
func newStepArgs(p engine.JobCycleParams, ran []bool) stepArgs {
	var a stepArgs
	for _, f := range p.Results {
		if isFinish(f) {
			a.finish(f)
		}
	}
	max := p.Max
	for i, r := range ran {
		if r {
			a.finish(p.Txs[i].Finish)
			if p.Refill {
				max++
			}
		}
	}
	if max > 0 {
		a.cOwners, a.cLeases, a.cMaxes = []string{p.Owner}, []int64{p.Lease}, []int32{int32(max)}
	}
	return a
}

// step is one try of a cycle's statement on ex: the finishes of p's
// results and of its Txs that ran, and the claim. Each finish accepted is
// marked in the answer; a Tx left unmarked was refused.
func (e *Engine) step(ctx context.Context, ex engine.Execer, p engine.JobCycleParams, ran []bool) (stepOut, error) {
	a := newStepArgs(p, ran)
	out := stepOut{txs: make([]engine.TxOutcome, len(p.Txs)), settled: make([]engine.Settled, len(p.Results))}
	for i, r := range ran {
		out.txs[i].Refused = r // until the step accepts its finish
	}
	rows, err := ex.QueryContext(ctx, stmt("pool_step"), p.Queue.Name, a.fIDs, a.fOwners, a.fTokens, a.cOwners, a.cLeases, a.cMaxes)
	if err != nil {
		return stepOut{}, err
	}
	defer rows.Close()
	var got []engine.SeqClaim
	for rows.Next() {
		var req int
		var c engine.SeqClaim
		err := rows.Scan(&req, &c.Seq, &c.ID, &c.Owner, &c.Qty, &c.Payload, &c.Token, &c.Attempt,
			&c.LeaseUntil, &c.Deadline, &c.Priority, &c.Kind, &c.Created, &c.RunAt, &c.MaxAttempts)
		if err != nil {
			return stepOut{}, err
		}
		if req == 0 {
			out.finished(p, c.ClaimRow)
			continue
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return stepOut{}, err
	}
	out.claims = engine.ClaimOrder(got)
	return out, nil
}

// finished marks the first finish of p, a Tx's or a result's, of the
// claim c, which the step accepted.
func (o *stepOut) finished(p engine.JobCycleParams, c engine.ClaimRow) {
	is := func(f engine.Fenced) bool { return f.ID == c.ID && f.Owner == c.Owner && f.Token == c.Token }
	for i, t := range p.Txs {
		if o.txs[i].Refused && is(t.Finish) {
			o.txs[i].Refused = false
			return
		}
	}
	for i, f := range p.Results {
		if isFinish(f) && !o.settled[i].OK && is(f) {
			o.settled[i] = engine.Settled{OK: true, LeaseUntil: c.LeaseUntil}
			return
		}
	}
}
