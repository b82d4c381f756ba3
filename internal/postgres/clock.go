package postgres

import (
	"context"
	"sync"
	"time"
)

// serverClock is a Queue's clock when it has none of its own: PostgreSQL
// keeps time on the database server (rule 40 in docs/rules.md). The
// statements that judge leases read the server's clock themselves (their
// now argument is NULL), and so do the transactions of the calls that store
// an instant of their own (txNow). This is for the rest: the enqueue time
// and the validation of an Enqueue's deadline, Stats' split of due and
// scheduled jobs, and how long a worker's timers run. It is this host's
// clock corrected by the server's offset from it, measured by a reading of
// the server's clock, so that these uses cost no round trip each; it lags
// the server's by up to a round trip. Only the first reading (New takes it)
// is waited for; after that a reading older than serverClockRefresh is
// renewed in the background while the last estimate goes on serving, so
// that no call waits for a connection for it — a *sql.DB whose only connection
// the caller holds (EnqueueTx) has none to give, and a server that stopped
// answering would hold every caller up. Until the server has been read
// once, and while it cannot be, the host's clock stands in (a call that
// then writes fails on the same unreachable server).
type serverClock struct {
	e          *Engine
	mu         sync.Mutex
	offset     time.Duration // server minus host
	read       time.Time     // when offset was measured; zero: never
	refreshing bool          // a reading runs in the background
}

// Bounds of serverClock's readings of the server.
const (
	serverClockRefresh = time.Second
	serverClockWait    = 5 * time.Second
)

// Now is the estimate of the server's clock.
func (c *serverClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.read.IsZero():
		c.measured(c.measure())
	case time.Since(c.read) >= serverClockRefresh && !c.refreshing:
		c.refreshing = true
		go func() {
			ms, after, err := c.measure()
			c.mu.Lock()
			defer c.mu.Unlock()
			c.refreshing = false
			c.measured(ms, after, err)
		}()
	}
	return time.Now().Add(c.offset)
}

// measure reads the server's clock, and the host's just after.
func (c *serverClock) measure() (ms int64, after time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), serverClockWait)
	defer cancel()
	ms, err = c.e.now(ctx)
	return ms, time.Now(), err
}

// measured keeps a reading taken without error; c.mu is held.
func (c *serverClock) measured(ms int64, after time.Time, err error) {
	if err == nil {
		// Against the host's clock after the reading, never before it:
		// the estimate then lags the server's clock (by the reply's
		// trip and the millisecond the reading was truncated to) and
		// never runs ahead of it, so a worker's timer for a lease end
		// fires at the end or just after, not before it.
		c.offset = fromMillis(ms).Sub(after)
		c.read = after
	}
}
