package leaseq

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Middleware and outcomes (rule 51 in docs/rules.md): what Work wraps
// around every handler run, and what it tells WorkerOptions.OnOutcome once
// the queue decided what became of the run's result.

// The results of an Outcome: what the queue did with a handler's result.
// Each but the last two is what an accepted write did; which one is decided
// by the fence, not by what the handler asked for.
const (
	OutcomeFinished    = "finished"    // nil was recorded: the job is done
	OutcomeReleased    = "released"    // the job is pending again, for another attempt
	OutcomeSnoozed     = "snoozed"     // released with its attempt given back
	OutcomeFailed      = "failed"      // Permanent: the job is quarantined by Fail
	OutcomeQuarantined = "quarantined" // a release found the attempts used up or the deadline reached
	OutcomeRefused     = "refused"     // the fence refused the result: the lease was lost
	OutcomeUnrecorded  = "unrecorded"  // the result could not be written (a database fault, a closed queue)
)

// Outcome is what became of one handler run, as WorkerOptions.OnOutcome
// gets it.
type Outcome struct {
	// Claim is the run's claim, as last extended by the heartbeats.
	Claim Claim
	// Result is one of the Outcome* constants.
	Result string
	// Err is the handler's error (a panic's, as Work logs it), or nil.
	Err error
	// Run is how long the handler ran, in real time.
	Run time.Duration
	// Wait is from the job being claimable to its handler starting, on the
	// queue's clock: since the later of Claim.EnqueuedAt and Claim.RunAt
	// (so for a job claimed again after a lease ran out, the earlier
	// attempt is counted in), never negative.
	Wait time.Duration
}

// withMiddleware wraps h in mw, the first the outermost, or says why it
// cannot: a nil middleware, or one that returned a nil Handler.
func withMiddleware(h Handler, mw []func(Handler) Handler) (Handler, string) {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] == nil {
			return nil, fmt.Sprintf("Middleware[%d] is nil", i)
		}
		if h = mw[i](h); h == nil {
			return nil, fmt.Sprintf("Middleware[%d] returned a nil Handler", i)
		}
	}
	return h, ""
}

// run is one handler run's outcome as it is found out, and the functions
// AfterOutcome registered for it.
type run struct {
	o     Outcome
	mu    sync.Mutex
	after []func(Outcome)
	told  bool // the outcome was reported: no more registrations
}

type runKey struct{}

// started is the run of a handler of c starting now, with its wait.
func (p *pool) started(c Claim) *run {
	from := c.EnqueuedAt
	if c.RunAt.After(from) {
		from = c.RunAt
	}
	return &run{o: Outcome{Wait: max(p.q.clock.Now().Sub(from), 0)}}
}

// context is the handler's ctx, through which AfterOutcome finds r.
func (r *run) context(ctx context.Context) context.Context {
	return context.WithValue(ctx, runKey{}, r)
}

// AfterOutcome registers f to be called with the Outcome of the handler run
// whose context ctx is (one Work gave its handler, or derived from it),
// once the queue decided what became of its result, before
// WorkerOptions.OnOutcome and on the same goroutine, which is also the one
// the handler ran on. It is for middleware that must see what became of
// the run, as a trace span that says so. It reports false, and f is never
// called, for any other context (a handler called by Process, or by hand)
// and once the run's outcome was reported.
func AfterOutcome(ctx context.Context, f func(Outcome)) bool {
	r, ok := ctx.Value(runKey{}).(*run)
	if !ok || f == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told {
		return false
	}
	r.after = append(r.after, f)
	return true
}

// outcome closes r to registrations and returns its outcome and its
// functions.
func (r *run) outcome(c Claim, err error, result string) (Outcome, []func(Outcome)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told = true
	o := r.o
	o.Claim, o.Err, o.Result = c, err, result
	return o, r.after
}

// accepted is the Result of an accepted write of the result named outcome
// (pool.outcome's names).
func accepted(outcome string, quarantined bool) string {
	switch {
	case quarantined:
		return OutcomeQuarantined
	case outcome == "finished" || outcome == "failed" || outcome == "snoozed":
		return outcome
	}
	return OutcomeReleased
}

// report gives the outcome of r, the run of c with the handler's error
// err, with result to the functions AfterOutcome registered, then to
// OnOutcome.
func (p *pool) report(r *run, c Claim, err error, result string) {
	o, after := r.outcome(c, err, result)
	for _, f := range after {
		p.tell("AfterOutcome", f, o)
	}
	if p.opts.OnOutcome != nil {
		p.tell("OnOutcome", p.opts.OnOutcome, o)
	}
}

// reportStarts counts a run whose hooks are about to be called.
func (p *pool) reportStarts() {
	p.reports.Add(1)
	p.reporting.Add(1)
}

// reportEnds counts a run whose hooks returned, and wakes the loop if a
// claim waited for that.
func (p *pool) reportEnds() {
	p.reporting.Add(-1)
	if p.heldBack.CompareAndSwap(true, false) {
		select {
		case p.reported <- struct{}{}:
		default:
		}
	}
	p.reports.Done()
}

// awaitReports waits, once every handler has returned and its result is
// recorded, for the runs' OnOutcome and AfterOutcome calls to return: at
// most DrainTimeout, after which Work returns without them, with a log.
func (p *pool) awaitReports() {
	done := make(chan struct{})
	go func() {
		p.reports.Wait()
		close(done)
	}()
	t := time.NewTimer(p.opts.DrainTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		p.log.Error("leaseq: OnOutcome or AfterOutcome calls have not returned DrainTimeout after the pool drained; Work returns without them",
			"queue", p.q.name, "owner", p.opts.Owner, "calls", p.reporting.Load(), "drain_timeout", p.opts.DrainTimeout)
	}
}

// tell calls f with o. A panic there is logged and goes no further: the
// pool runs on.
func (p *pool) tell(what string, f func(Outcome), o Outcome) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("leaseq: "+what+" panicked", p.attrs(o.Claim, o.Result, time.Time{}, "panic", fmt.Sprint(v))...)
		}
	}()
	f(o)
}
