package leaseq

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// The pool's loop and its cycles (rule 48 in docs/rules.md). A cycle
// records every result that came in since the last one and claims the
// slots they freed, in one engine step (JobCycle); results that come in
// while it is in flight wait for the next, so under load each cycle
// carries the results of every handler that returned meanwhile.

// loop is run's state between its events.
type loop struct {
	p        *pool
	ctx      context.Context
	done     <-chan struct{} // ctx's, nil once it ended
	claiming bool            // ctx has not ended and nothing fatal happened
	fatal    error
	// idle: the last claim found fewer jobs than it asked for, so the next
	// one waits for a wake-up, the sleep, or a result. woke: a wake-up
	// came while a cycle was in flight, which may have claimed before the
	// change it tells of.
	idle bool
	woke bool
	// wakeup is the queue's wake-up channel, taken before the change it
	// tells of could happen: one taken afresh at each wait would miss a
	// wake-up that came while the loop handled another event.
	wakeup <-chan struct{}
	faults int              // failed steps in a row
	retry  <-chan time.Time // after a fault: no cycle before it fires
	rebeat <-chan time.Time // a heartbeat skipped rows other transactions held: the next try
	sleep  *time.Timer
	drain  <-chan time.Time // DrainTimeout after ctx ended
	beat   *time.Ticker
	// usable ticks every PollInterval: a database closed under a pool
	// whose slots are all busy, which claims nothing, is noticed then
	// (rule 33), not once every lease has ended.
	usable *time.Ticker
	end    *time.Timer // the earliest lease end (leaseEnds)
	endAt  time.Time   // the instant end is armed for
	cycles chan cycleAnswer
	beats  chan beatAnswer
	alone  chan aloneAnswer
}

func newLoop(p *pool, ctx context.Context) *loop {
	l := &loop{p: p, ctx: ctx, done: ctx.Done(), claiming: true, sleep: time.NewTimer(time.Hour),
		beat: time.NewTicker(p.opts.Heartbeat), usable: time.NewTicker(p.opts.PollInterval), end: time.NewTimer(time.Hour),
		cycles: make(chan cycleAnswer, 1), beats: make(chan beatAnswer, 1), alone: make(chan aloneAnswer, 1)}
	l.sleep.Stop()
	l.end.Stop()
	l.wakeup = p.q.e.Wakers().Wakeup(p.q.name)
	return l
}

func (l *loop) stopTimers() { l.sleep.Stop(); l.beat.Stop(); l.usable.Stop(); l.end.Stop() }

// over reports whether the loop is done: no claiming, no handler running,
// no result unrecorded, no write in flight.
func (l *loop) over() bool {
	p := l.p
	return !l.claiming && len(p.running) == 0 && len(p.pending) == 0 && len(p.txs) == 0 && !p.cycling && !p.beating &&
		p.settling == 0
}

// next starts a cycle if there is something for one to do.
func (l *loop) next() {
	p := l.p
	if p.cycling || l.retry != nil {
		return
	}
	work := len(p.pending) > 0 || len(p.txs) > 0
	free := 0
	if l.claiming && (!l.idle || work) {
		free = p.free()
	}
	if !work && free == 0 {
		return
	}
	if work {
		p.gather(l)
		if free > 0 { // the slots the gathered results freed too
			free = p.free()
		}
	}
	l.cycle(p.pending, p.txs, free)
	p.pending, p.txs = nil, nil
}

// free is how many slots a claim may fill now: those of no running
// handler, and those of the handlers that settled their job with FinishTx
// (their next job waits for them to return: pool.sem). Each run whose
// OnOutcome or AfterOutcome has not returned keeps a goroutine: past
// Concurrency of them with the running handlers, no slot is filled, so a
// hook that blocks holds the pool back instead of piling up goroutines.
func (p *pool) free() int {
	n := p.opts.Concurrency - len(p.running) + p.nSettled
	if n <= 0 {
		return 0
	}
	p.heldBack.Store(true) // before the count: a report that ends after it wakes the loop
	limit := 2*p.opts.Concurrency - len(p.running) - int(p.reporting.Load())
	if limit >= n {
		p.heldBack.Store(false)
		return n
	}
	return max(limit, 0)
}

// gatherYields bounds how often the loop yields while it gathers a cycle:
// a few microseconds each, nothing next to a commit.
const gatherYields = 32

// gather lets the handlers that are about to return hand in their results
// (or their FinishTx calls) before a cycle takes the ones that came: it
// yields until every running handler has handed in (handlers started
// together by one cycle are likely to return together), or gatherYields
// yields passed. A cycle taken at the
// first result would split one cycle's worth of results into two commits,
// and then every later one too (measured: 10.8 results per cycle of 16
// slots when it waited only for as many as the last cycle took, 15.8 now).
func (p *pool) gather(l *loop) {
	for range gatherYields {
		if len(p.txs) >= len(p.running)-p.nSettled { // the rest returned: in pending
			return
		}
		runtime.Gosched()
		for more := true; more; {
			select {
			case r := <-p.returns:
				p.returned(l, r)
			case c := <-p.txIn:
				p.txCalled(l, c)
			default:
				more = false
			}
		}
	}
}

// await runs the loop once: it ends the handlers whose leases ended,
// starts a cycle if one is due, and waits for the next event and handles
// it.
func (p *pool) await(l *loop) {
	// The clock's next move is taken before fireEnds reads the clock: one
	// taken after it would miss a move in between, and a ManualClock's
	// lease end with it (only a later event would end that handler).
	var moved <-chan struct{}
	if mc, ok := p.q.clock.(movingClock); ok && p.ends.Len() > 0 {
		moved = mc.changed()
	}
	p.fireEnds()
	if l.over() {
		return
	}
	l.next()
	l.armEnd()
	if p.ends.Len() == 0 {
		moved = nil
	}
	select {
	case <-l.done:
		l.shutdown()
	case <-p.q.closing:
		l.die(ErrClosed)
	case r := <-p.returns:
		p.returned(l, r)
	case c := <-p.txIn:
		p.txCalled(l, c)
	case a := <-l.cycles:
		l.answered(a)
	case a := <-l.beats:
		p.extended(l, a)
	case a := <-l.alone:
		l.settledAlone(a)
	case <-l.wakeup:
		l.wakeup = p.q.e.Wakers().Wakeup(p.q.name)
		l.wake()
	case <-p.reported: // a slot free again: the next pass claims for it
	case <-l.sleep.C:
		l.wake()
	case <-l.retry:
		l.retry = nil
	case <-l.beat.C:
		p.heartbeat(l)
	case <-l.rebeat:
		l.rebeat = nil
		p.heartbeat(l)
	case <-l.usable.C:
		if err := p.q.e.Usable(); err != nil {
			l.die(err)
		}
	case <-l.end.C:
		l.endAt = time.Time{}
	case <-moved:
	case <-l.drain:
		l.drain = nil
		p.stop(ErrShutdown)
	}
}

// wake ends the idle wait.
func (l *loop) wake() {
	l.idle = false
	l.woke = l.p.cycling
}

// shutdown is the end of Work's ctx: no more claims; the handlers have
// DrainTimeout left.
func (l *loop) shutdown() {
	l.done, l.claiming = nil, false
	l.sleep.Stop()
	l.drain = time.After(l.p.opts.DrainTimeout)
}

// die is a fatal error: the handlers' contexts end at once with it, and
// no result is written any more.
func (l *loop) die(err error) {
	if l.fatal != nil {
		return
	}
	l.fatal, l.claiming, l.done = err, false, nil
	l.p.stop(err)
	for _, r := range l.p.pending {
		l.p.unrecorded(r, err)
	}
	for _, c := range l.p.txs {
		c.answer <- txAnswer{err: err}
	}
	l.p.pending, l.p.txs = nil, nil
}

// returned takes in a handler's result: into the next cycle, unless the
// handler settled its job with FinishTx or nothing can be written.
func (p *pool) returned(l *loop, r returned) {
	delete(p.running, r.j)
	p.ends.remove(r.j)
	if r.j.settled {
		p.nSettled--
	}
	c := r.j.c
	switch result, ok := p.settledByHandler(c, r.err, r.j.began); {
	case ok:
		p.told(r.j, result)
	case l.fatal != nil:
		p.unrecorded(r, l.fatal)
	default:
		r.w = p.outcome(c, r.err, r.cause)
		p.pending = append(p.pending, r)
	}
}

// resultWrite is the fenced call that records a handler's result, and the
// name of what it asks for (pool.outcome's).
type resultWrite struct {
	f       engine.Fenced
	outcome string
}

// outcome names what the handler's result asks for and returns the fenced
// call that records it: Finish for nil, Fail for Permanent, Snooze for
// Snooze and for a run stopped by the shutdown (rule 49: a restart spends
// no attempt), Release otherwise.
func (p *pool) outcome(c Claim, err, cause error) resultWrite {
	var perm *permanentError
	var retry *retryAfterError
	var snooze *snoozeError
	switch {
	case err == nil:
		return resultWrite{fence(c, engine.FenceFinish).call, "finished"}
	case errors.Is(cause, ErrShutdown):
		return resultWrite{snoozeFenced(c, 0, "worker shut down: "+err.Error()).call, "released at shutdown"}
	case errors.As(err, &snooze):
		return resultWrite{snoozeFenced(c, max(snooze.d, 0), err.Error()).call, "snoozed"}
	case errors.As(err, &perm):
		return resultWrite{failFenced(c, err.Error()).call, "failed"}
	case errors.As(err, &retry):
		return resultWrite{releaseFenced(c, max(retry.d, 0), err.Error()).call, "released"}
	default:
		delay := max(p.opts.Backoff(c.Attempt), 0) // as RetryAfter: Release refuses a negative delay
		return resultWrite{releaseFenced(c, delay, err.Error()).call, "released"}
	}
}

// cycleAnswer is what one cycle did.
type cycleAnswer struct {
	txs     []*txCall
	ahead   []*slot // the leases extended ahead of txs
	results []returned
	max     int // the claim it asked for
	cy      engine.Cycle
	err     error
	idleFor time.Duration // when it claimed fewer than max: how long to sleep
}

// cycle runs one cycle on a goroutine of its own: the FinishTx calls whose
// callers are still there, the results, then a claim of up to max jobs, and
// one more for each FinishTx accepted while the pool claims. One that
// records results runs on bg, bounded by the latest of their lease ends (a
// result that comes after its lease ended must still meet the fence, which
// refuses it, not a timeout) and at least recordTimeout; one that only
// claims, on the pool's claims context.
func (l *loop) cycle(results []returned, txs []*txCall, max int) {
	p := l.p
	p.cycling = true
	params := engine.JobCycleParams{Queue: p.q.ref(), Owner: p.opts.Owner, Lease: p.opts.Lease.Milliseconds(), Max: max,
		Refill: l.claiming}
	var calls []*txCall
	slots := make([]*slot, 0, len(results)+len(txs))
	for _, c := range txs {
		if c.take() {
			calls, params.Txs, slots = append(calls, c), append(params.Txs, c.t), append(slots, c.j)
		}
	}
	var ahead []*slot
	if len(calls) > 0 {
		ahead, params.Extends = p.aheadOf(calls)
		params.Renewed = renewedAhead(ahead)
	}
	for _, r := range results {
		params.Results, slots = append(params.Results, r.w.f), append(slots, r.j)
	}
	bound := p.recordBound(slots)
	go func() {
		ctx, cancel := p.claims, context.CancelFunc(func() {})
		if len(slots) > 0 {
			ctx, cancel = context.WithTimeout(p.bg, bound)
		}
		defer cancel()
		cy, err := p.q.e.JobCycle(ctx, params)
		a := cycleAnswer{txs: calls, ahead: ahead, results: results, max: params.ClaimMax(cy.Txs), cy: cy, err: err}
		if err == nil && a.max > 0 && len(cy.Claims) < a.max {
			a.idleFor = p.idleFor(ctx)
		}
		l.cycles <- a
	}()
}

// recordBound is how long a write of the results of slots may take: until
// the latest of their lease ends, at least recordTimeout.
func (p *pool) recordBound(slots []*slot) time.Duration {
	bound := recordTimeout
	for _, j := range slots {
		bound = max(bound, p.untilLeaseEnd(j.c))
	}
	return bound
}

// slotsOf are the slots of results.
func slotsOf(results []returned) []*slot {
	slots := make([]*slot, len(results))
	for i, r := range results {
		slots[i] = r.j
	}
	return slots
}

// answered takes in a cycle's answer: it starts the claimed jobs (also
// those claimed as ctx ended: dropped, they would stay leased to a pool
// that is gone until their leases end), tells the judged results, and
// settles alone what the cycle left.
func (l *loop) answered(a cycleAnswer) {
	p := l.p
	p.cycling = false
	p.aheadAnswered(a.ahead, a.cy.Extended)
	p.txsAnswered(a.txs, a.cy.Txs, a.err)
	if l.fatal == nil {
		for _, row := range a.cy.Claims {
			p.start(p.q.claim(row))
		}
	}
	judged := len(a.cy.Settled) == len(a.results)
	if a.err != nil && !judged {
		l.failed(a.err, a.results)
		return
	}
	p.judge(l, a.results, a.cy)
	if a.err != nil { // the results were written; the claim failed
		l.failed(a.err, nil)
		return
	}
	l.faults = 0
	if a.max > 0 {
		l.idle = len(a.cy.Claims) < a.max && !l.woke
		if l.idle {
			l.sleep.Reset(a.idleFor)
		}
	}
	l.woke = false
}

// judge tells each judged result of a cycle what became of it, and
// settles alone (on a goroutine) the ones the cycle left.
func (p *pool) judge(l *loop, results []returned, cy engine.Cycle) {
	var alone []returned
	for i, r := range results {
		if slices.Contains(cy.Alone, i) {
			alone = append(alone, r)
			continue
		}
		p.recorded(r, cy.Settled[i])
	}
	if len(alone) > 0 {
		p.settleAlone(l, alone)
	}
}

// failed is a step that failed with err: a fatal error ends the pool;
// anything else is logged, and the results (unless their leases ended) go
// back to wait for the next cycle, which comes after the fault's delay.
func (l *loop) failed(err error, results []returned) {
	p := l.p
	if fatal := p.fatal(err); fatal != nil {
		p.pending = append(p.pending, results...)
		l.die(fatal)
		return
	}
	l.faults++
	wait := faultDelay(l.faults, p.opts.PollInterval)
	if len(results) == 0 {
		p.log.Error("leaseq: claiming failed; retrying", "queue", p.q.name, "owner", p.opts.Owner,
			"error", err, "retry_in", wait)
	}
	for _, r := range results {
		if p.untilLeaseEnd(r.j.c) <= 0 {
			p.unrecorded(r, err)
			continue
		}
		p.log.Error("leaseq: recording a result failed; retrying", p.attrs(r.j.c, r.w.outcome, r.j.began, "error", err, "retry_in", wait)...)
		p.pending = append(p.pending, r)
	}
	l.retry = time.After(wait)
}

// recorded tells r's handler what its fenced write did: s.OK, accepted,
// with s.LeaseUntil the fence's instant; else refused, the lease lost.
func (p *pool) recorded(r returned, s engine.Settled) {
	c, w := r.j.c, r.w
	if !s.OK {
		p.log.Warn("leaseq: result refused; the lease was lost", p.attrs(c, w.outcome, r.j.began, "error", r.err)...)
		p.told(r.j, OutcomeRefused)
		return
	}
	quarantined := false
	if w.f.Kind == engine.FenceRelease || w.f.Kind == engine.FenceSnooze {
		p.q.e.Wakers().Signal(p.q.name) // as Release: claimable now, or a new instant for sleeping workers
		quarantined = quarantinedBy(c, w.f, s.LeaseUntil)
	}
	if p.log.Enabled(p.bg, slog.LevelDebug) { // the attributes cost more than the rest of the record
		p.log.Debug("leaseq: job "+w.outcome, p.attrs(c, w.outcome, r.j.began, "error", r.err)...)
	}
	p.told(r.j, accepted(w.outcome, quarantined))
}

// quarantinedBy reports whether the accepted release or snooze f of c,
// judged at the instant at (what it returns as its lease end), quarantined
// the job instead: a release with the attempts used up (they cannot change
// while c holds the job), or either reaching the deadline.
func quarantinedBy(c Claim, f engine.Fenced, at int64) bool {
	if f.Kind == engine.FenceRelease && c.MaxAttempts > 0 && c.Attempt >= c.MaxAttempts {
		return true
	}
	return !c.Deadline.IsZero() && at+f.Delay >= toMillis(c.Deadline)
}

// unrecorded tells r's handler that its result could not be written.
func (p *pool) unrecorded(r returned, err error) {
	p.log.Error("leaseq: recording a result failed", p.attrs(r.j.c, r.w.outcome, r.j.began, "error", err)...)
	p.told(r.j, OutcomeUnrecorded)
}

// told gives j's goroutine what became of its result.
func (p *pool) told(j *slot, result string) {
	j.told <- told{c: j.c, result: result}
}

// aloneAnswer is what settling results alone did.
type aloneAnswer struct {
	results []returned
	rs      []engine.Settled
	err     error
}

// settleAlone settles results in one JobSettle of their own, which waits
// for rows another transaction holds, on a goroutine, so that the loop goes
// on meanwhile.
func (p *pool) settleAlone(l *loop, results []returned) {
	p.settling++
	fs := make([]engine.Fenced, len(results))
	for i, r := range results {
		fs[i] = r.w.f
	}
	bound := p.recordBound(slotsOf(results))
	go func() {
		ctx, cancel := context.WithTimeout(p.bg, bound)
		defer cancel()
		rs, err := p.q.e.JobSettle(ctx, engine.JobSettleParams{Queue: p.q.ref(), Calls: fs, Share: engine.ShareNone})
		l.alone <- aloneAnswer{results, rs, err}
	}()
}

// settledAlone takes in settleAlone's answer.
func (l *loop) settledAlone(a aloneAnswer) {
	p := l.p
	p.settling--
	if a.err != nil {
		l.failed(a.err, a.results)
		return
	}
	for i, r := range a.results {
		p.recorded(r, a.rs[i])
	}
}
