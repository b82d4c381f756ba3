package leaseq

import (
	"math"
	"testing"
	"time"
)

// Tests of the arithmetic on instants at the ends of their range.

// TestIdleWaitFarAhead: an idle pool sleeps PollInterval when the next due
// instant is centuries ahead, where the wait in nanoseconds would overflow a
// Duration (it wrapped, and the pool slept 1ms at a time: it spun), and at
// least 1ms for one that is due.
func TestIdleWaitFarAhead(t *testing.T) {
	now := toMillis(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	poll := time.Second
	cases := []struct {
		name     string
		due, now int64
		want     time.Duration
	}{
		{"due now", now, now, time.Millisecond},
		{"overdue", now - 1, now, time.Millisecond},
		{"1ms ahead", now + 1, now, time.Millisecond},
		{"999ms ahead", now + 999, now, 999 * time.Millisecond},
		{"at the poll", now + 1000, now, poll},
		{"a day ahead", now + 86_400_000, now, poll},
		{"300 years ahead", now + 300*365*86_400_000, now, poll},
		{"year 9999", toMillis(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)), now, poll},
		{"the difference overflows", math.MaxInt64, math.MinInt64 + 1, poll},
	}
	for _, c := range cases {
		if got := idleWait(c.due, c.now, poll); got != c.want {
			t.Errorf("%s: idleWait = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestToMillisSaturates: an instant past the int64 millisecond range (only
// a clock gone wild gives one, every argument is checked first) becomes the
// end of the range it is past, never a value at the other end.
func TestToMillisSaturates(t *testing.T) {
	cases := []struct {
		t    time.Time
		want int64
	}{
		{time.UnixMilli(math.MaxInt64/1000*1000 - 1), math.MaxInt64/1000*1000 - 1},
		{time.UnixMilli(math.MaxInt64 - 807), math.MaxInt64}, // the range's last second is its end
		{time.Unix(math.MaxInt64, 0), math.MaxInt64},
		{time.Unix(math.MaxInt64/1000+1, 0), math.MaxInt64},
		{time.Unix(math.MinInt64, 0), math.MinInt64},
		{time.Unix(-math.MaxInt64/1000-1, 0), math.MinInt64},
		{time.UnixMilli(-math.MaxInt64/1000*1000 + 5), -math.MaxInt64/1000*1000 + 5},
		{time.Time{}, time.Time{}.UnixMilli()},
	}
	for _, c := range cases {
		if got := toMillis(c.t); got != c.want {
			t.Errorf("toMillis(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}

// TestWorkerOptionsFloors: the shortest options Work accepts are 1ms each,
// and a 2ms lease with its default heartbeat of 1ms; a lease of 1ms has no
// heartbeat that fits.
func TestWorkerOptionsFloors(t *testing.T) {
	ms := time.Millisecond
	for _, opts := range []WorkerOptions{
		{Owner: "w", Lease: 2 * ms},
		{Owner: "w", Lease: 2 * ms, Heartbeat: ms},
		{Owner: "w", Heartbeat: ms, PollInterval: ms, DrainTimeout: ms},
		{Owner: "w", Concurrency: MaxCount},
	} {
		if why := workerOptionsProblem(opts); why != "" {
			t.Errorf("%+v: %s, want accepted", opts, why)
		}
		if d := opts.withDefaults(); d.Heartbeat < ms || d.Heartbeat >= d.Lease {
			t.Errorf("%+v: default heartbeat %v, want from 1ms to under the lease %v", opts, d.Heartbeat, d.Lease)
		}
	}
	for _, opts := range []WorkerOptions{
		{Owner: "w", Lease: ms},
		{Owner: "w", Lease: 2 * ms, Heartbeat: 2 * ms},
		{Owner: "w", Lease: 2*ms - 1},
	} {
		if why := workerOptionsProblem(opts); why == "" {
			t.Errorf("%+v: accepted, want refused", opts)
		}
	}
}
