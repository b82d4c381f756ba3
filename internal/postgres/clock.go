package postgres

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// serverClock is a Queue's clock when it has none of its own: PostgreSQL
// keeps time on the database server (rule 40 in docs/rules.md). The
// statements that judge leases read the server's clock themselves (their
// now argument is NULL), and so do the transactions of the calls that store
// an instant of their own (txNow). This is for the rest: the enqueue time
// and the validation of an Enqueue's deadline, Stats' split of due and
// scheduled jobs, and how long a worker's timers run.
//
// It is this host's clock corrected by the server's offset from it,
// measured by readings of the server's clock, so that these uses cost no
// round trip each. A reading lags the server's clock by the time its
// answer took to come back (the offset it gives is the true one or less),
// so the estimate takes the largest offset of the readings of the last
// serverClockSpan: one slow answer, on a loaded host, would otherwise make
// every worker's lease timers fire as much later until the next reading
// (the chaos test's pool on the server's clock saw handlers' contexts end
// up to 115 ms after their leases). A server clock set back is followed
// once the readings from before it are older than the span.
//
// Only the first reading (New takes it) is waited for; after that a reading
// older than serverClockRefresh is renewed in the background while the
// last estimate goes on serving — sooner, from serverClockRetry on and
// doubling, while the best reading's answer took more than
// serverClockTight (a process's first reading, taken as the server came
// back from a restart, once made its timers fire 192 ms late; a server
// always that far away costs a few readings more at the start) — so that
// no call waits for a connection for it: a *sql.DB whose only connection
// the caller holds (EnqueueTx) has none to give, and a server that stopped
// answering would hold every caller up. Until the server has been read
// once, and while it cannot be, the host's clock stands in (a call that
// then writes fails on the same unreachable server).
type serverClock struct {
	e          *Engine
	mu         sync.Mutex
	offset     time.Duration // server minus host: the largest of readings
	next       time.Duration // how old the last reading may be before the next
	read       time.Time     // when the last reading was taken; zero: never
	readings   []clockReading
	refreshing bool // a reading runs in the background
}

// clockReading is one reading of the server's offset, when it was taken
// (the host's clock), and how long its answer took: the true offset is at
// most that (and the millisecond the reading was truncated to) more.
type clockReading struct {
	offset time.Duration
	at     time.Time
	trip   time.Duration
}

// Bounds of serverClock's readings of the server.
const (
	serverClockRefresh = time.Second
	serverClockRetry   = 20 * time.Millisecond
	serverClockTight   = 5 * time.Millisecond
	serverClockWait    = 5 * time.Second
	serverClockSpan    = 10 * time.Second
)

// Now is the estimate of the server's clock.
func (c *serverClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.read.IsZero():
		c.measured(c.measure())
	case time.Since(c.read) >= c.next && !c.refreshing:
		c.refreshing = true
		go func() {
			ms, before, after, err := c.measure()
			c.mu.Lock()
			defer c.mu.Unlock()
			c.refreshing = false
			c.measured(ms, before, after, err)
		}()
	}
	return time.Now().Add(c.offset)
}

// measure reads the server's clock, and the host's just before and just
// after.
func (c *serverClock) measure() (ms int64, before, after time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), serverClockWait)
	defer cancel()
	before = time.Now()
	ms, err = c.e.now(ctx)
	return ms, before, time.Now(), err
}

// measured keeps a reading taken without error; c.mu is held.
func (c *serverClock) measured(ms int64, before, after time.Time, err error) {
	if err == nil {
		// Against the host's clock after the reading, never before it:
		// the estimate then lags the server's clock (by the reply's
		// trip and the millisecond the reading was truncated to) and
		// never runs ahead of it (unless the server's clock was set back
		// within the span), so a worker's timer for a lease end fires at
		// the end or just after, not before it.
		c.read = after
		c.readings = append(slices.DeleteFunc(c.readings, func(r clockReading) bool {
			return after.Sub(r.at) > serverClockSpan
		}), clockReading{fromMillis(ms).Sub(after), after, after.Sub(before)})
		best := slices.MaxFunc(c.readings, func(a, b clockReading) int { return cmp.Compare(a.offset, b.offset) })
		c.offset = best.offset
		if best.trip > serverClockTight {
			c.next = min(max(2*c.next, serverClockRetry), serverClockRefresh)
		} else {
			c.next = serverClockRefresh
		}
	}
}
