package leaseq_test

import (
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestTimeline is the SPEC timeline, step by step.
func TestTimeline(t *testing.T) {
	f := newFixture(t, leaseq.Options{})
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
