package postgres

import (
	"errors"
	"testing"
	"time"
)

// TestServerClockKeepsItsBestReading: the server clock's estimate takes
// the largest offset of the readings of the last serverClockSpan, since a
// reading whose answer came back slowly gives an offset too small by as
// much (a worker's lease timers would fire that much late); a server clock
// set back is followed once the readings from before are older than the
// span; and while the best reading's answer took more than
// serverClockTight, the next reading comes sooner than a second: after
// serverClockRetry, doubling.
func TestServerClockKeepsItsBestReading(t *testing.T) {
	base := time.UnixMilli(1_800_000_000_000)
	ms := time.Millisecond
	var c serverClock
	steps := []struct {
		name            string
		after, off, rtt time.Duration // when the reading came back, its offset, how long it took
		err             error
		want, next      time.Duration
	}{
		{"a first reading that took 190 ms", 0, -190 * ms, 190 * ms, nil, -190 * ms, serverClockRetry},
		{"another as slow", 20 * ms, -190 * ms, 190 * ms, nil, -190 * ms, 2 * serverClockRetry},
		{"a quick one", 60 * ms, 0, ms, nil, 0, serverClockRefresh},
		{"a slow answer (30 ms)", time.Second, -30 * ms, 30 * ms, nil, 0, serverClockRefresh},
		{"a failed reading changes nothing", 2 * time.Second, 0, 0, errors.New("no answer"), 0, serverClockRefresh},
		{"the server's clock set back 500 ms", 5 * time.Second, -500 * ms, ms, nil, 0, serverClockRefresh},
		{"the span still holds the quick reading (exactly 10 s old)", serverClockSpan + 60*ms, -500 * ms, ms, nil,
			0, serverClockRefresh},
		{"the quick reading older than the span", serverClockSpan + 61*ms, -500 * ms, ms, nil, -30 * ms,
			serverClockRefresh},
		{"the slow one older too", serverClockSpan + time.Second + ms, -500 * ms, ms, nil, -500 * ms,
			serverClockRefresh},
	}
	for _, s := range steps {
		after := base.Add(s.after)
		c.measured(after.Add(s.off).UnixMilli(), after.Add(-s.rtt), after, s.err)
		if c.offset != s.want || c.next != s.next {
			t.Errorf("%s: offset %v, next reading after %v; want %v, %v", s.name, c.offset, c.next, s.want, s.next)
		}
	}
}
