package leaseq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// A Work handler may settle its job itself with FinishTx (rule 46 in
// docs/rules.md): then the pool writes nothing more for it, its heartbeats
// stop, and nothing is logged as a lost lease. The pool holds each running
// claim here, by the claim's ID, owner and token, and FinishTx tells the
// hold how it ended.
//
// A FinishTx of a claim the pool runs is run in the pool's next cycle
// (rule 48): its fn and Finish, the other handlers' results and the claim
// that refills the slot it frees share one transaction and one commit,
// where a transaction of its own would commit once more per cycle. The
// handler then returns, and the job claimed for its slot starts: the pool's
// handlers take a slot each (pool.sem) while they run, so no more than
// Concurrency run at once.

// holds are the claims this Queue's Work pools are running.
type holds struct {
	mu sync.Mutex
	m  map[holdKey]*hold
}

// holdKey is what names one claim.
type holdKey struct {
	id, owner string
	token     int64
}

// hold is one running claim of a pool.
type hold struct {
	// p and j are the pool that runs the claim and its slot.
	p    *pool
	j    *slot
	done chan struct{} // closed once a FinishTx finished the claim
	mu   sync.Mutex
	// refused: a FinishTx of the claim was refused by the fence. A nil
	// the handler returns after it must finish nothing: on PostgreSQL a
	// heartbeat that waited behind the FinishTx's row lock is judged as
	// of when it was sent, and may have renewed the lease meanwhile.
	refused bool
	busy    int           // FinishTx calls on the claim in flight
	idle    chan struct{} // closed when busy drops to 0; nil while 0
}

func keyOf(c Claim) holdKey { return holdKey{c.ID, c.Owner, c.Token} }

// add holds c for the pool p, which runs it in the slot j, until drop.
func (hs *holds) add(c Claim, p *pool, j *slot) *hold {
	h := &hold{p: p, j: j, done: make(chan struct{})}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = make(map[holdKey]*hold)
	}
	hs.m[keyOf(c)] = h
	return h
}

// drop ends the pool's hold of c.
func (hs *holds) drop(c Claim) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	delete(hs.m, keyOf(c))
}

// get is the pool's hold of c, or nil.
func (hs *holds) get(c Claim) *hold {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.m[keyOf(c)]
}

// settling marks a FinishTx of c in flight; settled ends it. It is nil,
// which both accept, when no pool holds c.
func (hs *holds) settling(c Claim) *hold {
	h := hs.get(c)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.busy == 0 {
		h.idle = make(chan struct{})
	}
	h.busy++
	return h
}

// settled ends a FinishTx in flight: ok, it finished the claim; refused,
// the fence refused it.
func (h *hold) settled(ok, refused bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused = h.refused || refused
	if ok {
		select {
		case <-h.done:
		default:
			close(h.done)
		}
	}
	if h.busy--; h.busy == 0 {
		close(h.idle)
		h.idle = nil
	}
}

// runner is the pool that runs the claim and its slot; nil for no hold.
func (h *hold) runner() (*pool, *slot) {
	if h == nil {
		return nil, nil
	}
	return h.p, h.j
}

// inFlight reports whether a FinishTx of the claim is in flight; false for
// no hold.
func (h *hold) inFlight() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.busy > 0
}

// wasRefused reports whether a FinishTx of the claim was refused; false
// for no hold.
func (h *hold) wasRefused() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// isDone reports whether a FinishTx finished the claim; false for no hold.
func (h *hold) isDone() bool {
	if h == nil {
		return false
	}
	select {
	case <-h.done:
		return true
	default:
		return false
	}
}

// doneAfter reports whether a FinishTx finished the claim, waiting first,
// for at most wait, for one in flight: a heartbeat refused, or a lease
// timer fired, while the handler's FinishTx commits is no lost lease.
func (h *hold) doneAfter(wait time.Duration) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	idle := h.idle
	h.mu.Unlock()
	if idle != nil {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
		}
	}
	return h.isDone()
}

// settledChan is closed once a FinishTx finished the claim; nil (never
// ready) for no hold.
func (h *hold) settledChan() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.done
}

// settledByHandler reports whether the handler settled c with FinishTx,
// with the run's result, and logs what it returned then: nothing more is
// written for c. A nil after a FinishTx the fence refused settles it too,
// as refused.
func (p *pool) settledByHandler(c Claim, err error, began time.Time) (result string, settled bool) {
	h := p.q.holds.get(c)
	switch {
	case !h.isDone() && err == nil && h.wasRefused():
		p.log.Warn("leaseq: result refused; the handler's FinishTx was refused, so its nil finishes nothing",
			p.attrs(c, "finished", began)...)
		return OutcomeRefused, true
	case !h.isDone():
		return "", false
	case err != nil:
		p.log.Warn("leaseq: handler returned an error after FinishTx finished its job; the job stays done",
			p.attrs(c, "finished", began, "error", err)...)
	default:
		p.log.Debug("leaseq: job finished", p.attrs(c, "finished", began)...)
	}
	return OutcomeFinished, true
}

// txCall is a FinishTx of a claim the pool runs, waiting for a cycle, or
// in one.
type txCall struct {
	t engine.CycleTx
	j *slot
	// state: txWaiting until a cycle takes it or its caller leaves.
	state  atomic.Int32
	answer chan txAnswer
}

const (
	txWaiting = iota
	txTaken
	txLeft
)

// txAnswer is what became of a txCall: the engine's outcome, or an error;
// alone: it was not run, because the handler of its slot returned already,
// and is to be run on a transaction of its own.
type txAnswer struct {
	out   engine.TxOutcome
	err   error
	alone bool
}

// take marks c as taken into a cycle, unless its caller left.
func (c *txCall) take() bool { return c.state.CompareAndSwap(txWaiting, txTaken) }

// finishTx hands t, a FinishTx of the claim the slot j runs, to the pool's
// loop and waits for the cycle that runs it: ran is false when the pool no
// longer runs it (its handler returned; Work returned). A ctx that ends
// before a cycle took it leaves with ctx's error, nothing written; once
// taken, the call waits for the cycle, which is bounded (pool.recordBound).
func (p *pool) finishTx(ctx context.Context, j *slot, t engine.CycleTx) (out engine.TxOutcome, err error, ran bool) {
	c := &txCall{t: t, j: j, answer: make(chan txAnswer, 1)}
	select {
	case p.txIn <- c:
	case <-p.gone:
		return engine.TxOutcome{}, nil, false
	case <-ctx.Done():
		return engine.TxOutcome{}, waitedForCycle(ctx), true
	}
	select {
	case a := <-c.answer:
		return a.out, a.err, !a.alone
	case <-ctx.Done():
		if c.state.CompareAndSwap(txWaiting, txLeft) {
			return engine.TxOutcome{}, waitedForCycle(ctx), true
		}
	}
	a := <-c.answer
	return a.out, a.err, !a.alone
}

// waitedForCycle is the error of a FinishTx whose ctx ended while it waited
// for its pool's next write (rule 47: it says what it waited for).
func waitedForCycle(ctx context.Context) error {
	return fmt.Errorf("waiting for the worker pool's next write: %w", context.Cause(ctx))
}

// txCalled takes in a FinishTx for the next cycle: one whose handler
// returned already is sent back to run alone, and after a fatal error it
// gets that error.
func (p *pool) txCalled(l *loop, c *txCall) {
	_, running := p.running[c.j]
	switch {
	case !running || c.j.settled:
		c.answer <- txAnswer{alone: true}
	case l.fatal != nil:
		c.answer <- txAnswer{err: l.fatal}
	default:
		p.txs = append(p.txs, c)
	}
}

// txsAnswered tells each FinishTx of a cycle what became of it: its
// outcome, or the cycle's error (err, when the cycle has no outcome for
// it). The slot of one accepted is free: its lease needs no more heartbeats
// nor an end, and the cycle claimed a job for it.
func (p *pool) txsAnswered(calls []*txCall, outs []engine.TxOutcome, err error) {
	for i, c := range calls {
		if i >= len(outs) {
			c.answer <- txAnswer{err: cmp.Or(err, errNoOutcome)}
			continue
		}
		if outs[i].Accepted() && !c.j.settled {
			c.j.settled = true
			p.nSettled++
			p.ends.remove(c.j)
		}
		c.answer <- txAnswer{out: outs[i]}
	}
}

// errNoOutcome is what a FinishTx gets from a cycle that gave no outcome
// for it and no error: never, unless an engine breaks its contract.
var errNoOutcome = errors.New("leaseq: the pool's cycle gave no outcome for the FinishTx")
