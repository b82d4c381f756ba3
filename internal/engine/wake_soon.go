package engine

import (
	"sync"
	"time"
)

// Looking again (rule 45 in docs/rules.md): a call that writes in the
// caller's own transaction (EnqueueTx) cannot see the caller's commit, so
// a wake-up at its return would find nothing yet. SignalSoon wakes the
// idle workers at once and then again every few milliseconds for a moment,
// so that a job the caller commits within LookAgainFor is claimed within
// LookAgainMax of its commit, not after the pool's PollInterval.

// How long, and how often at most apart, SignalSoon looks again: 1ms apart
// for the first lookAgainFast looks (most callers commit at once), then
// growing to LookAgainMax.
const (
	LookAgainFor  = 150 * time.Millisecond
	LookAgainMax  = 5 * time.Millisecond
	lookAgainFast = 20
)

// soonKey is one queue of one engine's Wakers that is being looked at
// again.
type soonKey struct {
	w    *Wakers
	name string
}

var (
	soonMu sync.Mutex
	soon   = map[soonKey]time.Time{} // until when, by queue
)

// SignalSoon is Signal for queue name now and again over the next
// LookAgainFor, 1ms apart at first and then at most LookAgainMax apart. Calls
// while it looks again extend the time; one goroutine per queue does the
// looking.
func (w *Wakers) SignalSoon(name string) {
	w.Signal(name)
	k := soonKey{w, name}
	soonMu.Lock()
	_, running := soon[k]
	soon[k] = time.Now().Add(LookAgainFor)
	soonMu.Unlock()
	if !running {
		go w.lookAgain(k)
	}
}

// lookAgain signals k's queue until the time SignalSoon set has passed.
func (w *Wakers) lookAgain(k soonKey) {
	gap := time.Millisecond
	for n := 1; ; n++ {
		if n > lookAgainFast {
			gap = min(gap+time.Millisecond, LookAgainMax)
		}
		time.Sleep(gap)
		soonMu.Lock()
		over := time.Now().After(soon[k])
		if over {
			delete(soon, k)
		}
		soonMu.Unlock()
		if over {
			return
		}
		w.Signal(k.name)
	}
}
