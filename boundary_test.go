package leaseq_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Every test here runs on each engine (forEngines in engine_test.go).

// TestTimeline is the README's timeline, step by step.
func TestTimeline(t *testing.T) { forEngines(t, testTimeline) }

func testTimeline(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})

	a := f.at(0).mustClaim("A", time.Second)
	if a.Token != 1 || !a.LeaseUntil.Equal(ms(1000)) {
		t.Fatalf("0ms A claims: got token=%d lease_until=%s, want token=1 lease_until=+1000ms", a.Token, relMS(a.LeaseUntil))
	}
	if c, ok := f.at(999).claim("B", time.Second); ok {
		t.Fatalf("999ms B claims: got %+v, want nothing (A's lease is live)", c)
	}
	b := f.at(1000).mustClaim("B", time.Second)
	if b.Token != 2 || b.ID != "order-7" {
		t.Fatalf("1000ms B claims: got %+v, want order-7 token=2", b)
	}
	if f.at(1001).finish(a) {
		t.Fatalf("1001ms A finishes token=1: got true, want false; rows:\n%s", f.dump())
	}
	f.wantRow(leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "B", Token: 2, Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000)})
	if !f.finish(b) {
		t.Fatalf("1001ms B finishes token=2: got false, want true; rows:\n%s", f.dump())
	}
	f.wantRow(leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusDone, Owner: "B", Token: 2, Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000)})
}

// TestLeaseBoundary is rule 4 at lease_until: live one millisecond
// before, over exactly at and after it — for Finish and for a re-Claim.
func TestLeaseBoundary(t *testing.T) { forEngines(t, testLeaseBoundary) }

func testLeaseBoundary(t *testing.T, eng testEngine) {
	cases := []struct {
		at        int64 // ms; the lease ends at 1000
		finishOK  bool
		reclaimed bool
	}{
		{at: 999, finishOK: true, reclaimed: false},
		{at: 1000, finishOK: false, reclaimed: true},
		{at: 1001, finishOK: false, reclaimed: true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("finish at %dms", tc.at), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})
			a := f.mustClaim("A", time.Second)
			leased := leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
				MaxAttempts: 3, LeaseUntil: ms(1000)}
			got := f.at(tc.at).finish(a)
			if got != tc.finishOK {
				t.Fatalf("Finish at %dms with lease_until=1000ms: got %v, want %v; rows:\n%s", tc.at, got, tc.finishOK, f.dump())
			}
			want := leased
			if tc.finishOK {
				want.Status = leaseq.StatusDone
			}
			f.wantRow(want)
		})
		t.Run(fmt.Sprintf("claim at %dms", tc.at), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})
			f.mustClaim("A", time.Second)
			b, ok := f.at(tc.at).claim("B", time.Second)
			if ok != tc.reclaimed {
				t.Fatalf("Claim at %dms with lease_until=1000ms: got %v (%+v), want %v; rows:\n%s", tc.at, ok, b, tc.reclaimed, f.dump())
			}
			want := leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
				MaxAttempts: 3, LeaseUntil: ms(1000)}
			if tc.reclaimed {
				want.Owner, want.Token, want.Attempts, want.LeaseUntil = "B", 2, 2, ms(tc.at+1000)
			}
			f.wantRow(want)
		})
	}
}

// TestDeadlineBoundary is rule 4 at the deadline: Finish is accepted
// one millisecond before it and refused at and after it. The lease is
// longer than the deadline, so only the deadline decides.
func TestDeadlineBoundary(t *testing.T) { forEngines(t, testDeadlineBoundary) }

func testDeadlineBoundary(t *testing.T, eng testEngine) {
	for _, tc := range []struct {
		at       int64 // ms; the deadline is 1000
		finishOK bool
	}{{999, true}, {1000, false}, {1001, false}} {
		t.Run(fmt.Sprintf("finish at %dms", tc.at), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "order-7", Qty: 3, Deadline: ms(1000)})
			a := f.mustClaim("A", time.Hour)
			got := f.at(tc.at).finish(a)
			if got != tc.finishOK {
				t.Fatalf("Finish at %dms with deadline=1000ms: got %v, want %v; rows:\n%s", tc.at, got, tc.finishOK, f.dump())
			}
			want := leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
				MaxAttempts: 3, LeaseUntil: ms(1000), Deadline: ms(1000)}
			if tc.finishOK {
				want.Status = leaseq.StatusDone
			}
			f.wantRow(want)
		})
	}
}

// TestLeaseCappedAtDeadline is rule 5: lease_until = min(now+lease,
// deadline).
func TestLeaseCappedAtDeadline(t *testing.T) { forEngines(t, testLeaseCappedAtDeadline) }

func testLeaseCappedAtDeadline(t *testing.T, eng testEngine) {
	for _, tc := range []struct {
		name           string
		deadline, now  int64
		lease          time.Duration
		wantLeaseUntil int64
	}{
		{"deadline=100 now=0 lease=1000", 100, 0, time.Second, 100},
		{"lease ends before the deadline", 5000, 0, time.Second, 1000},
		{"lease ends exactly at the deadline", 1000, 0, time.Second, 1000},
		{"one millisecond left", 100, 99, time.Second, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", Deadline: ms(tc.deadline)})
			c := f.at(tc.now).mustClaim("A", tc.lease)
			if !c.LeaseUntil.Equal(ms(tc.wantLeaseUntil)) {
				t.Fatalf("claim: got lease_until %s, want %+dms", relMS(c.LeaseUntil), tc.wantLeaseUntil)
			}
			f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3,
				LeaseUntil: ms(tc.wantLeaseUntil), Deadline: ms(tc.deadline)})
		})
	}
}
