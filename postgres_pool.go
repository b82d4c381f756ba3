package leaseq

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"time"
)

// Worker pools on PostgreSQL. A single Finish or Claim is a statement and a
// commit of its own, and a commit waits for the server to flush its log: a
// pool of 16 handlers that finished one statement per job, and claimed in
// another, would spend most of its time waiting for flushes, about two jobs
// each. So the claims and finishes of Work (sharePool) on one queue are
// gathered, as SQLite's group commit gathers calls: while one step runs,
// the calls that arrive wait, and the next step takes all of them, finishes
// first, then claims, in one statement (leaseq_pool_step) with one commit.
// A lone call is a step of its own at once; the gathering costs a hand-off
// to the committing goroutine.
//
// It is for pools on the server's clock, the production case: the step
// reads the server's clock once, in the statement. Each finish is fenced on
// its own, exactly as a single one; a claim is leaseq_claim's. The step
// skips the row of a finish that another transaction holds, as a claim
// skips it, so that one locked row holds up no other call of the pool; such
// a finish comes back unaccepted and its caller runs it alone (settle),
// waiting for the row.
//
// The callers' contexts end their calls: a call still waiting leaves the
// list; a call taken into a step waits for the step until its stepWait
// ends (its context, unless the caller gave it longer: Work gives its
// claims its drain time), then leaves with its context's error, and
// whatever the step claimed for it is released once the step answers
// (abandon), so that no job stays leased to a caller that is gone.

// poolMaxCalls bounds the calls of one step.
const poolMaxCalls = 256

// poolStepWait bounds one step's statement, so that the step's goroutine
// does not wait forever on a server that stopped answering. A step cut
// short by it may still commit on the server; claims it made then stay
// leased until their leases end, as a crashed worker's do.
const poolStepWait = 30 * time.Second

// stepWaitKey is the context key of a pool call's stepWait.
type stepWaitKey struct{}

// withStepWait returns ctx with wait as the context that bounds how long
// a call of ctx taken into a step waits for the step's answer once ctx
// itself has ended.
func withStepWait(ctx, wait context.Context) context.Context {
	return context.WithValue(ctx, stepWaitKey{}, wait)
}

// stepWait is the context withStepWait put in ctx, or ctx.
func stepWait(ctx context.Context) context.Context {
	if wait, ok := ctx.Value(stepWaitKey{}).(context.Context); ok {
		return wait
	}
	return ctx
}

// pgPool gathers one queue's pool calls.
type pgPool struct {
	e       *pgEngine
	name    string
	q       *Queue // the first Queue of the name that asked, for abandon
	mu      sync.Mutex
	waiting []*poolCall
	running bool // a committer goroutine is working the list
}

// poolCall is one call waiting for, or running in, a step.
type poolCall struct {
	ctx   context.Context
	claim bool
	c     Claim  // a finish's claim
	owner string // a claim's
	lease int64
	max   int
	state opState // guarded by pgPool.mu
	// left: the caller left while the call ran in a step; guarded by
	// pgPool.mu.
	left bool
	done chan struct{}
	// The outcome, set before done is closed.
	finished settled
	claims   []Claim
	got      []seqClaim // a claim's, as the step returns them
	err      error
}

// pool returns the pool gatherer of q's queue.
func (e *pgEngine) pool(q *Queue) *pgPool {
	e.poolsMu.Lock()
	defer e.poolsMu.Unlock()
	p := e.pools[q.name]
	if p == nil {
		if e.pools == nil {
			e.pools = map[string]*pgPool{}
		}
		p = &pgPool{e: e, name: q.name, q: q}
		e.pools[q.name] = p
	}
	return p
}

func (p *pgPool) finish(ctx context.Context, c Claim) (settled, error) {
	call, err := p.call(ctx, &poolCall{c: c})
	if err != nil {
		return settled{}, err
	}
	return call.finished, call.err
}

func (p *pgPool) claim(ctx context.Context, owner string, lease time.Duration, max int) ([]Claim, error) {
	call, err := p.call(ctx, &poolCall{claim: true, owner: owner, lease: lease.Milliseconds(), max: max})
	if err != nil {
		return nil, err
	}
	return call.claims, call.err
}

// call adds c to the list and waits for its outcome. A caller whose
// context ends while its call still waits leaves with its context's error;
// one whose call runs in a step waits for the step until its stepWait
// ends, then leaves too, with its context's error, and does not touch c
// again.
func (p *pgPool) call(ctx context.Context, c *poolCall) (*poolCall, error) {
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
	p.mu.Lock()
	if c.state == opWaiting {
		c.state = opLeft
		p.mu.Unlock()
		return nil, ctx.Err()
	}
	p.mu.Unlock()
	select {
	case <-c.done:
		return c, nil
	case <-stepWait(ctx).Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.state == opLeft { // answered meanwhile
		return c, nil
	}
	c.left = true
	return nil, ctx.Err()
}

// commit runs steps until the list is empty. Before each it lets the
// callers just answered run, as SQLite's committer does (group.gather):
// a pool answered a claim starts handlers that finish, and frees slots it
// claims again, at once; a step taken before they have would split one
// step's worth of calls into two commits.
func (p *pgPool) commit() {
	last := 0
	for {
		p.gather(last)
		p.mu.Lock()
		var calls []*poolCall
		kept := p.waiting[:0]
		for _, c := range p.waiting {
			switch {
			case c.state != opWaiting:
			case len(calls) < poolMaxCalls:
				c.state = opRunning
				calls = append(calls, c)
			default:
				kept = append(kept, c)
			}
		}
		clear(p.waiting[len(kept):])
		p.waiting = kept
		if len(calls) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		last = len(calls)
		err := p.step(calls)
		var orphans []Claim
		p.mu.Lock()
		for _, c := range calls {
			if err != nil {
				c.err = err
			}
			if c.left && c.err == nil {
				orphans = append(orphans, c.claims...)
			}
			c.state = opLeft
			close(c.done)
		}
		p.mu.Unlock()
		p.e.abandon(p.q, orphans)
	}
}

// gather yields until as many calls wait as were in the last step, or
// gatherYields yields have passed.
func (p *pgPool) gather(want int) {
	for range gatherYields {
		runtime.Gosched()
		p.mu.Lock()
		n := 0
		for _, c := range p.waiting {
			if c.state == opWaiting {
				n++
			}
		}
		p.mu.Unlock()
		if n >= want {
			return
		}
	}
}

// poolStepSQL runs leaseq_pool_step (postgres_schema.sql).
const poolStepSQL = `SELECT req, seq, id, owner, qty, payload, token, attempts, lease_until, deadline, priority
FROM leaseq_pool_step($1, $2, $3, $4, $5, $6, $7)`

// step runs calls in one statement and sets each one's outcome.
func (p *pgPool) step(calls []*poolCall) error {
	var fIDs, fOwners, cOwners []string
	var fTokens, cLeases []int64
	var cMaxes []int32
	var claims []*poolCall
	for _, c := range calls {
		if c.claim {
			claims = append(claims, c)
			cOwners, cLeases, cMaxes = append(cOwners, c.owner), append(cLeases, c.lease), append(cMaxes, int32(c.max))
			continue
		}
		fIDs, fOwners, fTokens = append(fIDs, c.c.ID), append(fOwners, c.c.Owner), append(fTokens, c.c.Token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), poolStepWait)
	defer cancel()
	return pgError(retrySerialization(ctx, func() error {
		for _, c := range calls {
			c.finished, c.got = settled{}, nil
		}
		rows, err := p.e.dbh.QueryContext(ctx, poolStepSQL, p.name, fIDs, fOwners, fTokens, cOwners, cLeases, cMaxes)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var req int
			var c seqClaim
			var leaseUntil int64
			var deadline sql.NullInt64
			err := rows.Scan(&req, &c.seq, &c.ID, &c.Owner, &c.Qty, &c.Payload, &c.Token, &c.Attempt,
				&leaseUntil, &deadline, &c.Priority)
			if err != nil {
				return err
			}
			if req == 0 {
				finished(calls, c.Claim, leaseUntil)
				continue
			}
			claims[req-1].got = append(claims[req-1].got, c.read(leaseUntil, deadline))
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, c := range claims {
			c.claims = claimOrder(c.got)
		}
		return nil
	}))
}

// finished marks the first finish among calls of the claim c, which the
// step accepted.
func finished(calls []*poolCall, c Claim, leaseUntil int64) {
	for _, call := range calls {
		if !call.claim && !call.finished.ok && call.c.ID == c.ID && call.c.Owner == c.Owner && call.c.Token == c.Token {
			call.finished = settled{ok: true, leaseUntil: leaseUntil}
			return
		}
	}
}
