package leaseq_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// minute is the instant t0 + m minutes + s seconds.
func minute(m, s int) time.Time {
	return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// fmtMinutes prints Activity's answer one minute a line, the minute as
// minutes after t0.
func fmtMinutes(ms []leaseq.Minute) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "\n  %+.0fm enqueued=%d done=%d quarantined=%d depth=%d",
			m.Start.Sub(t0).Minutes(), m.Enqueued, m.Done, m.Quarantined, m.Depth)
	}
	return b.String()
}

// depthNow is how many jobs Stats says are waiting or held: the depth that
// Activity works out for the past.
func (f *fixture) depthNow() int {
	f.t.Helper()
	st, err := f.q.Stats(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Pending + st.Scheduled + st.Leased + st.Expired
}

// TestActivityCountsEachMinute plays four minutes of work, some of it
// through a second *sql.DB on the file (another process, as far as the
// queue can tell) and some in another queue, notes the depth Stats gives at
// the end of each minute, and checks that Activity, asked afterwards,
// finds every count and the same depths.
func TestActivityCountsEachMinute(t *testing.T) { forEngines(t, testActivityCountsEachMinute) }

func testActivityCountsEachMinute(t *testing.T, e testEngine) {
	f := newFixture(t, e, leaseq.Options{})
	other := openFixture(t, e, f.path, leaseq.Options{Clock: f.clock})
	neighbour := f.queue("neighbour")
	var depths []int
	endMinute := func(m int) {
		f.clock.Set(minute(m, 59))
		depths = append(depths, f.depthNow())
	}

	f.clock.Set(minute(0, 10))
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		f.enqueue(leaseq.Job{ID: id})
	}
	other.enqueue(leaseq.Job{ID: "late", RunAt: minute(30, 0)}) // scheduled jobs count in the depth
	if err := neighbour.Enqueue(f.ctx, leaseq.Job{ID: "n1"}); err != nil {
		t.Fatal(err)
	}
	endMinute(0)

	f.clock.Set(minute(1, 5))
	a, b, c := f.mustClaim("w", time.Minute), other.mustClaim("w2", time.Minute), f.mustClaim("w", time.Hour)
	f.finish(a)
	other.finish(b)
	if ok, err := f.q.Fail(f.ctx, c, "bad input"); !ok || err != nil {
		t.Fatalf("Fail: %v %v", ok, err)
	}
	f.enqueue(leaseq.Job{ID: "f"})
	endMinute(1)
	endMinute(2) // nothing happens in minute 2

	// Minute 3: a cancel, a job that used up its one attempt and is swept
	// into quarantine by the next claim, and two enqueues.
	f.clock.Set(minute(3, 1))
	if err := other.q.Cancel(f.ctx, "d", "not wanted"); err != nil {
		t.Fatal(err)
	}
	f.enqueue(leaseq.Job{ID: "once", MaxAttempts: 1, Priority: 1})
	if c := f.mustClaim("w", time.Second); c.ID != "once" {
		t.Fatalf("claimed %q, want once", c.ID)
	}
	f.clock.Set(minute(3, 30))
	f.mustClaim("w", time.Minute) // sweeps "once", then claims "e"
	f.enqueue(leaseq.Job{ID: "g"})
	endMinute(3)

	f.clock.Set(minute(4, 20))
	got, err := f.q.Activity(f.ctx, minute(0, 30))
	if err != nil {
		t.Fatal(err)
	}
	want := []leaseq.Minute{
		{Start: minute(0, 0), Enqueued: 6},
		{Start: minute(1, 0), Enqueued: 1, Done: 2, Quarantined: 1},
		{Start: minute(2, 0)},
		{Start: minute(3, 0), Enqueued: 2, Quarantined: 2},
		{Start: minute(4, 0)},
	}
	for i := range want {
		if i < len(depths) {
			want[i].Depth = depths[i]
		} else {
			want[i].Depth = f.depthNow()
		}
	}
	if fmtMinutes(got) != fmtMinutes(want) {
		t.Fatalf("Activity:%s\nwant:%s", fmtMinutes(got), fmtMinutes(want))
	}
	if !got[0].Start.Equal(minute(0, 0)) || got[0].Start.Location() != time.UTC {
		t.Fatalf("first minute starts at %v, want %v in UTC", got[0].Start, minute(0, 0))
	}
}

// TestActivityRequeueCountsAsWaiting shows the limit Minute.Depth documents:
// a job quarantined and requeued within the window leaves no trace of its
// quarantine, so the depth walked back counts it as waiting all along.
func TestActivityRequeueCountsAsWaiting(t *testing.T) {
	forEngines(t, testActivityRequeueCountsAsWaiting)
}

func testActivityRequeueCountsAsWaiting(t *testing.T, e testEngine) {
	f := newFixture(t, e, leaseq.Options{})
	f.clock.Set(minute(0, 0))
	f.enqueue(leaseq.Job{ID: "a"})
	f.clock.Set(minute(1, 0))
	c := f.mustClaim("w", time.Minute)
	if ok, err := f.q.Fail(f.ctx, c, "x"); !ok || err != nil {
		t.Fatalf("Fail: %v %v", ok, err)
	}
	f.clock.Set(minute(2, 0))
	if err := f.q.Requeue(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	got, err := f.q.Activity(f.ctx, minute(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []leaseq.Minute{
		{Start: minute(0, 0), Enqueued: 1, Depth: 1},
		{Start: minute(1, 0), Depth: 1}, // it was quarantined then; the row no longer says so
		{Start: minute(2, 0), Depth: 1},
	}
	if fmtMinutes(got) != fmtMinutes(want) {
		t.Fatalf("Activity:%s\nwant:%s", fmtMinutes(got), fmtMinutes(want))
	}
}

// TestActivityFutureStampsFallInTheLastMinute: a row stamped after now (by
// a process whose clock runs ahead, here the same clock stepped back) is
// counted in the minute that holds now, so the depth walk still adds up.
func TestActivityFutureStampsFallInTheLastMinute(t *testing.T) {
	forEngines(t, testActivityFutureStampsFallInTheLastMinute)
}

func testActivityFutureStampsFallInTheLastMinute(t *testing.T, e testEngine) {
	f := newFixture(t, e, leaseq.Options{})
	f.clock.Set(minute(5, 0))
	f.enqueue(leaseq.Job{ID: "ahead"})
	f.clock.Set(minute(3, 10))
	got, err := f.q.Activity(f.ctx, minute(2, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []leaseq.Minute{
		{Start: minute(2, 0), Depth: 0},
		{Start: minute(3, 0), Enqueued: 1, Depth: 1},
	}
	if fmtMinutes(got) != fmtMinutes(want) {
		t.Fatalf("Activity:%s\nwant:%s", fmtMinutes(got), fmtMinutes(want))
	}
}

// TestActivityRefusesItsSpan: since must be at most MaxActivitySpan before
// now and not after it; the bounds themselves are accepted.
func TestActivityRefusesItsSpan(t *testing.T) { forEngines(t, testActivityRefusesItsSpan) }

func testActivityRefusesItsSpan(t *testing.T, e testEngine) {
	f := newFixture(t, e, leaseq.Options{})
	now := minute(24*60+30, 0)
	f.clock.Set(now)
	for _, tc := range []struct {
		since time.Time
		ok    bool
		n     int
	}{
		{now, true, 1},
		{now.Add(-leaseq.MaxActivitySpan), true, 24*60 + 1},
		{now.Add(time.Millisecond), false, 0},
		{now.Add(-leaseq.MaxActivitySpan - time.Millisecond), false, 0},
		{time.Time{}, false, 0},
	} {
		got, err := f.q.Activity(f.ctx, tc.since)
		switch {
		case tc.ok && err != nil:
			t.Errorf("Activity(%v): %v", tc.since, err)
		case tc.ok && len(got) != tc.n:
			t.Errorf("Activity(%v): %d minutes, want %d", tc.since, len(got), tc.n)
		case !tc.ok && !errors.Is(err, leaseq.ErrInvalid):
			t.Errorf("Activity(%v): %v, want ErrInvalid", tc.since, err)
		}
	}
	f.q.Close()
	if _, err := f.q.Activity(f.ctx, now); !errors.Is(err, leaseq.ErrClosed) {
		t.Fatalf("Activity after Close: %v, want ErrClosed", err)
	}
}
