package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// notifyWait bounds one notification's statement: a server that does not
// answer delays other processes' wake-ups, never this one's calls.
const notifyWait = 5 * time.Second

// notifyGap is the least time between two rounds of notifications: the
// changes of a busy queue gather into one NOTIFY per gap, which keeps
// them a small share of its statements (Enqueue's throughput with them is
// at least 0.9 of it without: rule 56), and costs a wake-up at most this
// much.
const notifyGap = 2 * time.Millisecond

// notifier sends the notifications of rule 56: announce marks a queue as
// changed, and one goroutine at a time sends a NOTIFY for each queue
// marked since its last one. While a NOTIFY is under way the changes of
// many calls gather into the next, so a burst of Enqueues costs a few
// notifications, not one each, and no commit of the queue's own waits for
// NOTIFY's lock.
type notifier struct {
	mu      sync.Mutex
	dirty   map[string]bool // by queue: whether a Change is among its announcements
	sending bool
	idle    *sync.Cond // broadcast when the sender stops
}

// cond is n.idle, made on first use; n.mu is held.
func (n *notifier) cond() *sync.Cond {
	if n.idle == nil {
		n.idle = sync.NewCond(&n.mu)
	}
	return n.idle
}

// flushNotifications waits until the notifications announced so far are
// sent: the last Queue to close does, so that a process that enqueues and
// exits still wakes the others.
func (e *Engine) flushNotifications() {
	n := &e.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.sending {
		n.cond().Wait()
	}
}

// announce marks queue changed and starts the sender if none runs.
func (e *Engine) announce(queue string, change bool) {
	n := &e.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dirty == nil {
		n.dirty = make(map[string]bool)
	}
	n.dirty[queue] = n.dirty[queue] || change
	if !n.sending {
		n.sending = true
		go e.sendNotifications()
	}
}

// sendNotifications sends what announce marked until nothing is left. A
// failed NOTIFY is dropped: the pools it would have woken still poll.
func (e *Engine) sendNotifications() {
	n := &e.notify
	for {
		n.mu.Lock()
		dirty := n.dirty
		n.dirty = nil
		if len(dirty) == 0 {
			n.sending = false
			n.cond().Broadcast()
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		for queue, change := range dirty {
			payload := engine.NotifyWake + queue
			if change {
				payload = engine.NotifyChange + queue
			}
			ctx, cancel := context.WithTimeout(context.Background(), notifyWait)
			e.db.ExecContext(ctx, stmt("notify"), engine.NotifyChannel, payload)
			cancel()
		}
		time.Sleep(notifyGap)
	}
}

// WatchStart listens through p.Listener for the caller, a running pool;
// without a Listener the pools poll, and it does nothing. Each payload
// names what changed (engine.Wakers.Notified); "" (the Listener
// reconnected) wakes every pool once, since notifications may have been
// missed.
func (e *Engine) WatchStart(p engine.WatchParams) (stop func()) {
	if p.Listener == nil {
		return func() {}
	}
	return p.Listener.Listen(engine.NotifyChannel, e.wake.Notified)
}
