package leaseq

import (
	"container/heap"
	"context"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// The pool's leases (rules 28–34 and 48 in docs/rules.md): every Heartbeat
// one ExtendBatch renews the lease of every running handler, and the lease
// ends are kept in one heap, whose earliest arms the loop's one timer. Each
// lease still ends exactly when its own fenced extension says: the loop
// compares the heap's earliest with the queue's clock before each event,
// and a ManualClock's moves wake it too. A refused extension, or a lease
// end, cancels that handler alone, with ErrLeaseLost.

// leaseEnds are the running jobs by lease end, earliest first (a
// container/heap).
type leaseEnds []*slot

func (h leaseEnds) Len() int           { return len(h) }
func (h leaseEnds) Less(i, k int) bool { return h[i].c.LeaseUntil.Before(h[k].c.LeaseUntil) }
func (h leaseEnds) Swap(i, k int) {
	h[i], h[k] = h[k], h[i]
	h[i].idx, h[k].idx = i, k
}
func (h *leaseEnds) Push(x any) {
	j := x.(*slot)
	j.idx = len(*h)
	*h = append(*h, j)
}
func (h *leaseEnds) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	j.idx = -1
	return j
}

func (h *leaseEnds) add(j *slot) { heap.Push(h, j) }

// remove takes j out, if it is in.
func (h *leaseEnds) remove(j *slot) {
	if j.idx >= 0 {
		heap.Remove(h, j.idx)
	}
}

// moved puts j back in order after its lease end changed.
func (h *leaseEnds) moved(j *slot) {
	if j.idx >= 0 {
		heap.Fix(h, j.idx)
	}
}

// fireEnds ends the handler of every lease that ended by the queue's clock.
func (p *pool) fireEnds() {
	if p.ends.Len() == 0 {
		return
	}
	now := p.q.clock.Now()
	for p.ends.Len() > 0 && !now.Before(p.ends[0].c.LeaseUntil) {
		j := heap.Pop(&p.ends).(*slot)
		if u := fromMillis(j.renewedTo.Load()); j.ahead && now.Before(u) { // committed ahead of a FinishTx, not yet answered
			j.c.LeaseUntil = u
			p.ends.add(j)
			continue
		}
		p.lose(j, "lease ended before the handler returned")
	}
}

// armEnd sets the loop's timer for the earliest lease end.
func (l *loop) armEnd() {
	p := l.p
	if p.ends.Len() == 0 {
		return
	}
	at := p.ends[0].c.LeaseUntil
	if at.Equal(l.endAt) {
		return
	}
	l.endAt = at
	l.end.Stop()
	// A timer counts real time: one that fires before the clock reached
	// the end (the clock was set back, or is a ManualClock) rearms.
	l.end.Reset(max(p.untilLeaseEnd(p.ends[0].c), time.Millisecond))
}

// lose ends j's handler with ErrLeaseLost, and says why — unless its own
// FinishTx finished the job (a FinishTx in flight is waited for, so on a
// goroutine of its own: rule 46).
func (p *pool) lose(j *slot, why string) {
	c := j.c
	p.records.Add(1)
	go func() {
		defer p.records.Done()
		if j.hold.doneAfter(recordTimeout) {
			return
		}
		j.lost(ErrLeaseLost) // first: a slow log must not keep the handler running
		p.log.Warn("leaseq: "+why, p.attrs(c, "lease lost", time.Time{})...)
	}()
}

// beatAnswer is what one heartbeat did.
type beatAnswer struct {
	jobs []*slot
	cs   []Claim
	rs   []engine.Settled
	err  error
}

// beatRetry is how soon a heartbeat that skipped leases whose rows another
// transaction held tries again.
const beatRetry = 10 * time.Millisecond

// heartbeat extends, in one ExtendBatch on a goroutine of its own, the
// lease of every running handler whose job its FinishTx did not finish and
// whose FinishTx is not in flight: on PostgreSQL that FinishTx holds the
// job's row, and the FinishTx's fence, judged at its commit, decides its
// lease. Rows another transaction holds are skipped, not waited for, so
// that the other leases are renewed on time; the skipped ones are tried
// again after beatRetry. Its context ends with the latest of their leases,
// though a COMMIT held up by readers may keep it longer.
func (p *pool) heartbeat(l *loop) {
	if p.beating || len(p.running) == 0 {
		return
	}
	var jobs []*slot
	var cs []Claim
	var bound time.Duration
	for j := range p.running {
		if j.idx >= 0 && !j.hold.isDone() && !j.hold.inFlight() {
			jobs, cs = append(jobs, j), append(cs, j.c)
			bound = max(bound, p.untilLeaseEnd(j.c))
		}
	}
	if len(jobs) == 0 {
		return
	}
	p.beating = true
	go func() {
		ctx, cancel := context.WithTimeout(p.bg, max(bound, time.Millisecond))
		defer cancel()
		how := engine.JobSettleParams{Share: engine.ShareCalls, SkipLocked: true}
		out, rs, err := p.q.extendBatch(ctx, cs, p.opts.Lease, how)
		l.beats <- beatAnswer{jobs, out, rs, err}
	}()
}

// extended takes in a heartbeat's answer: each renewed lease moves in the
// heap; a refused one ends its handler; a skipped one is tried again
// soon. A heartbeat that failed because the Queue or its database was
// closed ends the pool (rule 33); any other failure changes nothing: the
// next may still renew the leases, and the lease ends guard the handlers
// meanwhile.
func (p *pool) extended(l *loop, a beatAnswer) {
	p.beating = false
	if a.err != nil {
		if fatal := p.fatal(a.err); fatal != nil {
			l.die(fatal)
			return
		}
		for _, j := range a.jobs {
			p.log.Error("leaseq: extending a lease failed", p.attrs(j.c, "extend error", time.Time{}, "error", a.err)...)
		}
		return
	}
	for i, j := range a.jobs {
		if a.rs[i].Skipped {
			l.rebeat = time.After(min(beatRetry, p.opts.Heartbeat))
			continue
		}
		p.renewed(j, a.rs[i].OK, a.cs[i].LeaseUntil)
	}
}

// renewed takes in one extension of j's lease: accepted, its lease now
// ends at until, unless the pool knows of a later end already (another
// extension that committed after this one and was heard of first);
// refused, its handler ends. A slot that returned, was settled, or whose
// lease ended meanwhile is left as it is.
func (p *pool) renewed(j *slot, ok bool, until time.Time) {
	_, running := p.running[j]
	switch {
	case !running || j.settled || j.idx < 0:
	case ok:
		if until.After(j.c.LeaseUntil) {
			j.c.LeaseUntil = until
		}
		p.ends.moved(j)
	default:
		p.ends.remove(j)
		p.lose(j, "extension refused; the job is no longer this handler's")
	}
}

// aheadOf are the pool's other running leases that end no later than the
// latest lease of the FinishTx calls of a cycle, with an Extend of each
// (engine.JobCycleParams.Extends): on SQLite a FinishTx's fn holds the one
// writer while it runs, and the heartbeat waits for it. Renewed first, in
// a write committed before the cycle's transaction, each ends after any
// FinishTx's own lease, which its fn must finish within (rule 46), and the
// heartbeat waiting behind it still finds it live.
func (p *pool) aheadOf(calls []*txCall) ([]*slot, []engine.Fenced) {
	var until time.Time
	in := make(map[*slot]bool, len(calls))
	for _, c := range calls {
		in[c.j] = true
		if c.j.c.LeaseUntil.After(until) {
			until = c.j.c.LeaseUntil
		}
	}
	var ahead []*slot
	var fs []engine.Fenced
	for j := range p.running {
		if in[j] || j.idx < 0 || j.settled || j.hold.isDone() || j.c.LeaseUntil.After(until) {
			continue
		}
		f := fence(j.c, engine.FenceExtend).call
		f.Lease = p.opts.Lease.Milliseconds()
		j.ahead, ahead, fs = true, append(ahead, j), append(fs, f)
		j.renewedTo.Store(0)
	}
	return ahead, fs
}

// renewedAhead is JobCycleParams.Renewed for ahead: on the engine's
// goroutine, it notes each lease end the extensions committed.
func renewedAhead(ahead []*slot) func([]engine.Settled) {
	return func(rs []engine.Settled) {
		for i, j := range ahead {
			if i < len(rs) && rs[i].OK {
				j.renewedTo.Store(rs[i].LeaseUntil)
			}
		}
	}
}

// aheadAnswered takes in what a cycle's extensions ahead of its FinishTx
// calls did (none, when their write failed).
func (p *pool) aheadAnswered(ahead []*slot, rs []engine.Settled) {
	for i, j := range ahead {
		j.ahead = false
		if i < len(rs) {
			p.renewed(j, rs[i].OK, fromMillis(rs[i].LeaseUntil))
		}
	}
}
