package leaseq

import (
	"math"
	"sync"
	"time"
)

// Clock tells the queue what time it is. Every lease and deadline decision
// reads it, so a test that injects a [ManualClock] can step exactly onto a
// lease boundary instead of sleeping past it.
type Clock interface {
	Now() time.Time
}

// systemClock is the clock used when Options.Clock is nil.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that only moves when told to. It is exported so that
// services embedding leaseq can drive lease expiry in their own tests, one
// millisecond at a time, without sleeping. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
	// moved is closed at the next move, for the worker pools that wait
	// for a lease end by this clock (rule 48): their timers count real
	// time, which this clock does not follow.
	moved chan struct{}
}

// NewManualClock returns a ManualClock that reads t until it is moved.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t, backwards or forwards.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	c.tell()
}

// Advance moves the clock forward by d (backwards if d is negative).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.tell()
}

// tell wakes whoever waits for the clock's next move; c.mu is held.
func (c *ManualClock) tell() {
	if c.moved != nil {
		close(c.moved)
		c.moved = nil
	}
}

// changed is closed at the clock's next move.
func (c *ManualClock) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved == nil {
		c.moved = make(chan struct{})
	}
	return c.moved
}

// movingClock is a clock that tells of its moves: a ManualClock.
type movingClock interface{ changed() <-chan struct{} }

// timeFormat is how instants appear in error messages.
const timeFormat = time.RFC3339Nano

// toMillis is the one place an instant becomes a stored value (rule 8 in
// docs/rules.md): integer Unix milliseconds, truncated, so that what
// is compared is what is stored. Every instant a caller gives is checked
// against minTime..maxTime first (timeProblem); an instant past the int64
// range (only a clock gone wild can give one now) saturates instead of
// wrapping to the other end of time (so does the range's last second,
// some 292 million years from now).
func toMillis(t time.Time) int64 {
	const limit = math.MaxInt64 / 1000 // whole seconds whose milliseconds fit
	switch s := t.Unix(); {
	case s >= limit:
		return math.MaxInt64
	case s < -limit:
		return math.MinInt64
	}
	return t.UnixMilli()
}

// fromMillis turns a stored instant back into a time.Time in UTC.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// fmtMillis prints a stored instant for an error message.
func fmtMillis(ms int64) string { return fromMillis(ms).Format(timeFormat) }
