package postgres

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Worker pools on PostgreSQL. A single Finish or Claim is a statement and a
// commit of its own, and a commit waits for the server to flush its log: a
// pool of 16 handlers that finished one statement per job, and claimed in
// another, would spend most of its time waiting for flushes, about two jobs
// each. So the claims and finishes of Work (engine.SharePool) on one queue
// are gathered, as SQLite's group commit gathers calls: while one step
// runs, the calls that arrive wait, and the next step takes all of them,
// finishes first, then claims, in one statement (pool_step.sql) with one
// commit. A lone call is a step of its own at once; the gathering costs a
// hand-off to the committing goroutine.
//
// It is for pools on the server's clock, the production case: the step
// reads the server's clock once, in the statement. Each finish is fenced on
// its own, exactly as a single one; a claim is leaseq_claim's. The step
// skips the row of a finish that another transaction holds, as a claim
// skips it, so that one locked row holds up no other call of the step; such
// a finish comes back unaccepted and its caller runs it alone (JobSettle),
// waiting for the row.
//
// The callers' contexts end their calls: a call still waiting leaves the
// list; a call taken into a step waits for the step until its
// engine.StepWait ends (its context, unless the caller gave it longer: Work
// gives its claims its drain time), then leaves with its context's error,
// and whatever the step claimed for it is released once the step answers
// (abandon), so that no job stays leased to a caller that is gone.

// poolMaxCalls bounds the calls of one step.
const poolMaxCalls = 256

// poolStepWait bounds one step's statement, so that the step's goroutine
// does not wait forever on a server that stopped answering. A step cut
// short by it may still commit on the server; claims it made then stay
// leased until their leases end, as a crashed worker's do.
const poolStepWait = 30 * time.Second

// gatherYields bounds how often the committer yields while it gathers a
// step: a few microseconds each, nothing next to a commit.
const gatherYields = 32

// callState is where a poolCall is; it decides whether the caller may
// still walk away.
type callState int

const (
	callWaiting callState = iota // in the list; the caller may leave
	callRunning                  // taken into a step; the caller waits for it
	callLeft                     // the caller left, or the outcome was delivered
)

// pool gathers one queue's pool calls.
type pool struct {
	e       *Engine
	q       engine.Queue // the first Queue of the name that asked, for abandon
	mu      sync.Mutex
	waiting []*poolCall
	running bool // a committer goroutine is working the list
}

// poolCall is one call waiting for, or running in, a step.
type poolCall struct {
	ctx   context.Context
	claim bool
	f     engine.Fenced // a finish's
	owner string        // a claim's
	lease int64
	max   int
	state callState // guarded by pool.mu
	// left: the caller left while the call ran in a step; guarded by
	// pool.mu.
	left bool
	done chan struct{}
	// The outcome, set before done is closed.
	stepOutcome
	err error
}

// stepOutcome is what a step did for one call.
type stepOutcome struct {
	finished engine.Settled
	claims   []engine.ClaimRow
}

// pool returns the gatherer of the worker pools' calls on q's queue.
func (e *Engine) pool(q engine.Queue) *pool {
	e.poolsMu.Lock()
	defer e.poolsMu.Unlock()
	p := e.pools[q.Name]
	if p == nil {
		if e.pools == nil {
			e.pools = map[string]*pool{}
		}
		p = &pool{e: e, q: q}
		e.pools[q.Name] = p
	}
	return p
}

// finish runs the Finish f in a step.
func (p *pool) finish(ctx context.Context, f engine.Fenced) (engine.Settled, error) {
	call, err := p.call(ctx, &poolCall{f: f})
	if err != nil {
		return engine.Settled{}, err
	}
	return call.finished, call.err
}

// claim runs a claim of up to max jobs for owner in a step.
func (p *pool) claim(ctx context.Context, owner string, lease int64, max int) ([]engine.ClaimRow, error) {
	call, err := p.call(ctx, &poolCall{claim: true, owner: owner, lease: lease, max: max})
	if err != nil {
		return nil, err
	}
	return call.claims, call.err
}

// call adds c to the list and waits for its outcome. A caller whose
// context ends while its call still waits leaves with its context's error;
// one whose call runs in a step waits for the step until its StepWait
// ends, then leaves too, with its context's error, and does not touch c
// again.
func (p *pool) call(ctx context.Context, c *poolCall) (*poolCall, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.ctx, c.done = ctx, make(chan struct{})
	p.mu.Lock()
	p.waiting = append(p.waiting, c)
	if !p.running {
		p.running = true
		go p.commit()
	}
	p.mu.Unlock()
	select {
	case <-c.done:
		return c, nil
	case <-ctx.Done():
	}
	if p.leave(c, false) {
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return c, nil
	case <-engine.StepWait(ctx).Done():
	}
	if p.leave(c, true) {
		return nil, ctx.Err()
	}
	return c, nil
}

// leave takes c's caller away, and reports whether it could: from the
// list while c waits, or, when running is set, from a step still running
// (c.left: what it claimed is abandoned). A call answered meanwhile stays.
func (p *pool) leave(c *poolCall, running bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case c.state == callWaiting:
		c.state = callLeft
		return true
	case running && c.state != callLeft:
		c.left = true
		return true
	}
	return false
}

// commit runs steps until the list is empty. Before each it lets the
// callers just answered run, as SQLite's committer does: a pool answered a
// claim starts handlers that finish, and frees slots it claims again, at
// once; a step taken before they have would split one step's worth of
// calls into two commits.
func (p *pool) commit() {
	last := 0
	for {
		p.gather(last)
		calls := p.take()
		if len(calls) == 0 {
			return
		}
		last = len(calls)
		err := p.step(calls)
		p.answer(calls, err)
	}
}

// take takes up to poolMaxCalls waiting calls into a step, dropping the
// calls whose callers left; none ends the committer.
func (p *pool) take() []*poolCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var calls []*poolCall
	kept := p.waiting[:0]
	for _, c := range p.waiting {
		switch {
		case c.state != callWaiting:
		case len(calls) < poolMaxCalls:
			c.state = callRunning
			calls = append(calls, c)
		default:
			kept = append(kept, c)
		}
	}
	clear(p.waiting[len(kept):])
	p.waiting = kept
	if len(calls) == 0 {
		p.running = false
	}
	return calls
}

// answer delivers a step's outcome to its calls, and abandons what it
// claimed for callers that left.
func (p *pool) answer(calls []*poolCall, err error) {
	var orphans []engine.ClaimRow
	p.mu.Lock()
	for _, c := range calls {
		if err != nil {
			c.err = err
		}
		if c.left && c.err == nil {
			orphans = append(orphans, c.claims...)
		}
		c.state = callLeft
		close(c.done)
	}
	p.mu.Unlock()
	p.e.abandon(p.q, orphans)
}

// gather yields until as many calls wait as were in the last step, or
// gatherYields yields have passed.
func (p *pool) gather(want int) {
	for range gatherYields {
		runtime.Gosched()
		p.mu.Lock()
		n := 0
		for _, c := range p.waiting {
			if c.state == callWaiting {
				n++
			}
		}
		p.mu.Unlock()
		if n >= want {
			return
		}
	}
}

// stepArgs are pool_step.sql's arguments after the queue: the finishes'
// arrays, then the claims'.
type stepArgs struct {
	fIDs, fOwners, cOwners []string
	fTokens, cLeases       []int64
	cMaxes                 []int32
	claims                 []int // the index in calls of each claim request, in order
}

// newStepArgs gathers calls' arguments.
func newStepArgs(calls []*poolCall) stepArgs {
	var a stepArgs
	for i, c := range calls {
		if c.claim {
			a.claims = append(a.claims, i)
			a.cOwners, a.cLeases, a.cMaxes = append(a.cOwners, c.owner), append(a.cLeases, c.lease), append(a.cMaxes, int32(c.max))
			continue
		}
		a.fIDs, a.fOwners, a.fTokens = append(a.fIDs, c.f.ID), append(a.fOwners, c.f.Owner), append(a.fTokens, c.f.Token)
	}
	return a
}

// step runs calls in one statement and sets each one's outcome.
func (p *pool) step(calls []*poolCall) error {
	a := newStepArgs(calls)
	ctx, cancel := context.WithTimeout(context.Background(), poolStepWait)
	defer cancel()
	out, err := retry(ctx, func() ([]stepOutcome, error) { return p.runStep(ctx, calls, a) })
	if err != nil {
		return interpretError(err)
	}
	for i, c := range calls {
		c.stepOutcome = out[i]
	}
	return nil
}

// runStep is one try of a step: each call's outcome, by its index.
func (p *pool) runStep(ctx context.Context, calls []*poolCall, a stepArgs) ([]stepOutcome, error) {
	rows, err := p.e.db.QueryContext(ctx, stmt("pool_step"), p.q.Name, a.fIDs, a.fOwners, a.fTokens, a.cOwners, a.cLeases, a.cMaxes)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]stepOutcome, len(calls))
	got := make([][]engine.SeqClaim, len(calls))
	for rows.Next() {
		var req int
		var c engine.SeqClaim
		err := rows.Scan(&req, &c.Seq, &c.ID, &c.Owner, &c.Qty, &c.Payload, &c.Token, &c.Attempt,
			&c.LeaseUntil, &c.Deadline, &c.Priority, &c.Kind, &c.Created, &c.RunAt, &c.MaxAttempts)
		if err != nil {
			return nil, err
		}
		if req == 0 {
			finished(calls, out, c.ClaimRow)
			continue
		}
		i := a.claims[req-1]
		got[i] = append(got[i], c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, i := range a.claims {
		out[i].claims = engine.ClaimOrder(got[i])
	}
	return out, nil
}

// finished marks in out the first finish among calls of the claim c, which
// the step accepted.
func finished(calls []*poolCall, out []stepOutcome, c engine.ClaimRow) {
	for i, call := range calls {
		if !call.claim && !out[i].finished.OK && call.f.ID == c.ID && call.f.Owner == c.Owner && call.f.Token == c.Token {
			out[i].finished = engine.Settled{OK: true, LeaseUntil: c.LeaseUntil}
			return
		}
	}
}
