package postgres

import (
	"context"
	"database/sql"
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
const notifyGap = 5 * time.Millisecond

// notifyLinger is how many empty rounds the sender waits for more before it
// ends: on a pool without a limit of open connections, a queue in steady
// use keeps one connection for its notifications rather than taking one
// from the pool (and, past the pool's idle connections, a new one from the
// server) every round. A pool with a limit gets it back after each round
// (keepConn).
const notifyLinger = 100

// notifier sends the notifications of rule 56: announce marks a queue as
// changed, and one goroutine at a time sends a NOTIFY for each queue
// marked since its last round, on a connection it takes from the pool
// (and keeps between rounds only where that costs no call a wait:
// keepConn). While a round is under way, and for notifyGap after it, the
// changes of many calls gather into the next, so a burst of Enqueues costs a few notifications,
// not one each, and no commit of the queue's own waits for NOTIFY's lock.
type notifier struct {
	mu       sync.Mutex
	dirty    map[string]bool // by queue: whether a Change is among its announcements
	running  bool            // the sender's goroutine runs
	inFlight bool            // it is sending a round
	settled  *sync.Cond      // broadcast after each of its rounds, empty or not
	kick     chan struct{}   // wakes a sender that waits for announcements
}

// cond is n.settled, made on first use; n.mu is held.
func (n *notifier) cond() *sync.Cond {
	if n.settled == nil {
		n.settled = sync.NewCond(&n.mu)
	}
	return n.settled
}

// flushNotifications waits until the notifications announced so far are
// sent: every Queue's Close does, so that a process that enqueues and
// exits still wakes the others.
func (e *Engine) flushNotifications() {
	n := &e.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	for n.inFlight || len(n.dirty) > 0 {
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
	if n.kick == nil {
		n.kick = make(chan struct{}, 1)
	}
	select {
	case n.kick <- struct{}{}:
	default:
	}
	if !n.running {
		n.running = true
		go e.sendNotifications(n.kick)
	}
}

// sendNotifications sends what announce marked: a round at once when it
// comes after a quiet spell, then at most one every notifyGap while more
// keeps coming, until nothing came for notifyLinger gaps. A failed NOTIFY
// is dropped (its connection too): the pools it would have woken still
// poll.
func (e *Engine) sendNotifications(kick <-chan struct{}) {
	n := &e.notify
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for empty := 0; ; {
		n.mu.Lock()
		dirty := n.dirty
		n.dirty = nil
		if len(dirty) == 0 {
			empty++
			n.cond().Broadcast()
			if empty > notifyLinger {
				n.running = false
				n.mu.Unlock()
				return
			}
			n.mu.Unlock()
			select {
			case <-kick:
			case <-time.After(notifyGap):
			}
			continue
		}
		empty = 0
		n.inFlight = true
		n.mu.Unlock()
		conn = e.sendRound(conn, dirty)
		n.mu.Lock()
		n.inFlight = false
		n.cond().Broadcast()
		n.mu.Unlock()
		conn = e.keepConn(conn)
		time.Sleep(notifyGap) // what comes meanwhile gathers into one round
	}
}

// keepConn is the sender's connection to keep while it waits for more
// announcements: conn itself on a pool without a limit of open
// connections, where holding it makes no call wait (the pool opens
// another), and otherwise none, conn given back to the pool, so that the
// sender holds one of a limited pool only while its NOTIFY runs. Kept on a
// pool of one connection, it made every Enqueue wait for the sender's
// linger: 40 Enqueues in a row took 10 s.
func (e *Engine) keepConn(conn *sql.Conn) *sql.Conn {
	if conn == nil || e.db.Stats().MaxOpenConnections == 0 {
		return conn
	}
	conn.Close()
	return nil
}

// sendRound sends one NOTIFY per queue of dirty on conn (taken from the
// pool when nil) and returns the connection to keep, nil after a failure.
func (e *Engine) sendRound(conn *sql.Conn, dirty map[string]bool) *sql.Conn {
	ctx, cancel := context.WithTimeout(context.Background(), notifyWait)
	defer cancel()
	for queue, change := range dirty {
		payload := engine.NotifyWake + queue
		if change {
			payload = engine.NotifyChange + queue
		}
		var err error
		if conn == nil {
			conn, err = e.db.Conn(ctx)
		}
		if err == nil {
			_, err = conn.ExecContext(ctx, stmt("notify"), engine.NotifyChannel, payload)
		}
		if err != nil && conn != nil {
			conn.Close()
			conn = nil
		}
	}
	return conn
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
