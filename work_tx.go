package leaseq

import (
	"sync"
	"time"
)

// A Work handler may settle its job itself with FinishTx (rule 46 in
// docs/rules.md): then the pool writes nothing more for it, its heartbeats
// stop, and nothing is logged as a lost lease. The pool holds each running
// claim here, by the claim's ID, owner and token, and FinishTx tells the
// hold how it ended.

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

// add holds c for a pool, until drop.
func (hs *holds) add(c Claim) *hold {
	h := &hold{done: make(chan struct{})}
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
