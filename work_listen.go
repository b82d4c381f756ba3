package leaseq

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// Rule 56: a running pool hears of what other processes do. While it runs,
// its engine watches for their changes (SQLite: the file's change counter;
// PostgreSQL: Options.Listener's notifications) and wakes it as a local
// Enqueue would.

// watchStart starts the engine's watch for a pool; the function it returns
// ends it.
func (q *Queue) watchStart() (stop func()) {
	var l engine.Listener
	if q.listener != nil {
		l = q.listener
	}
	return q.e.WatchStart(engine.WatchParams{Listener: l})
}

// leaseCheckGap is the least time between two checks of a pool's running
// claims: a burst of changes costs one check per gap.
const leaseCheckGap = 5 * time.Millisecond

// heldLeases are a pool's claims whose handlers run, for the check that
// ends a handler at once when its job was taken from it (a Cancel here or
// in another process), not at its next heartbeat.
type heldLeases struct {
	mu sync.Mutex
	m  map[string]heldLease // by job ID
}

type heldLease struct {
	c    Claim
	lost context.CancelCauseFunc
	hold *hold // its FinishTx's view: a job it finished is no loss
}

// track notes that c's handler runs, until the function it returns is
// called.
func (p *pool) track(c Claim, lost context.CancelCauseFunc, hold *hold) (untrack func()) {
	h := &p.held
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[string]heldLease)
	}
	h.m[c.ID] = heldLease{c, lost, hold}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.m, c.ID)
	}
}

// watchLeases checks the running claims whenever a change that may have
// taken one (Changes: a Cancel, or any change of another process) comes,
// until the function it returns is called.
func (p *pool) watchLeases() (stop func()) { return p.held.watch(p) }

// watch is watchLeases, on a goroutine that is not the pool's own (the
// tests tell a parked pool by its goroutines).
func (h *heldLeases) watch(p *pool) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		changed := p.q.e.Wakers().Changes(p.q.name)
		for {
			select {
			case <-done:
				return
			case <-changed:
			}
			// The next change's channel is taken before the check, so
			// that a change during the check or the gap after it (a
			// Cancel just after a claim's commit) is seen, not lost.
			changed = p.q.e.Wakers().Changes(p.q.name)
			h.check(p)
			select {
			case <-done:
				return
			case <-time.After(leaseCheckGap):
			}
		}
	}()
	return func() { close(done); <-ended }
}

// doneByItself reports whether c's job, no longer leased to it, was
// finished by c itself: its handler's own FinishTx (rule 46), which is no
// loss. A read that fails says no, as the heartbeat would.
func (p *pool) doneByItself(c Claim) bool {
	ctx, cancel := context.WithTimeout(p.bg, recordTimeout)
	defer cancel()
	r, found, err := p.q.e.JobGet(ctx, p.q.name, c.ID)
	return err == nil && found && r.Status == string(StatusDone) && r.Token == c.Token && r.Owner.String == c.Owner
}

// check reads which jobs are leased to the pool's owner, in one read, and
// ends the handler of each running claim that is no longer among them with
// its token (cancelled, or taken over) with ErrLeaseLost. Only a claim held
// both before and after the read is judged: one started after the
// snapshot may have been claimed after the read, and a handler that
// returned meanwhile may have had its result recorded before it — neither
// is a loss. A read that fails changes nothing: the heartbeats still guard
// the leases.
func (held *heldLeases) check(p *pool) {
	before := held.snapshot()
	if len(before) == 0 {
		return
	}
	if h := heldCheckHook.Load(); h != nil {
		(*h)(p.opts.Owner)
	}
	ctx, cancel := context.WithTimeout(p.bg, recordTimeout)
	defer cancel()
	rows, err := p.q.e.JobsLeased(ctx, p.q.name, p.opts.Owner)
	if err != nil {
		return
	}
	tokens := make(map[string]int64, len(rows))
	for _, r := range rows {
		tokens[r.ID] = r.Token
	}
	after := held.snapshot()
	for id, h := range before {
		if still, ok := after[id]; !ok || still.c.Token != h.c.Token {
			continue
		}
		if token, ok := tokens[id]; (!ok || token != h.c.Token) && !p.doneByItself(h.c) {
			p.log.Warn("leaseq: the job was taken from its handler (cancelled?)", p.attrs(h.c, "lease lost", time.Time{})...)
			h.lost(ErrLeaseLost)
		}
	}
}

// snapshot is the running claims whose jobs their own FinishTx has not
// finished (those are not leased, and no loss), by job ID.
func (held *heldLeases) snapshot() map[string]heldLease {
	held.mu.Lock()
	defer held.mu.Unlock()
	hs := make(map[string]heldLease, len(held.m))
	for id, h := range held.m {
		if !h.hold.isDone() {
			hs[id] = h
		}
	}
	return hs
}

// heldCheckHook, when set (by the tests), is called by a pool's check of
// its running claims between its snapshot of them and its read, with the
// pool's owner.
var heldCheckHook atomic.Pointer[func(owner string)]
