package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// TestClaimSweepsOncePerInstant: in one transaction, claims at the same
// instant run the quarantine sweeps and the promotion once, and a claim at
// a later instant runs them again — so a lease that ends between two claims
// of one shared transaction is swept by the second, exactly as if each claim
// had a transaction of its own.
func TestClaimSweepsOncePerInstant(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e, q, clock := newTestEngine(t, t0, true)
	claim := func(owner string, lease time.Duration) engine.JobClaimParams {
		return engine.JobClaimParams{Queue: q, Owner: owner, Lease: lease.Milliseconds(), Max: 1, Share: engine.ShareCalls}
	}
	// "last" has one attempt; its lease ends at +2ms, after which the
	// sweep must quarantine it. "b", "c" and "d" are there to be claimed.
	enqueue(t, e, q, jobRow("last", 1, clock.Now()))
	if cs, err := e.JobClaim(ctx, claim("w", 2*time.Millisecond)); err != nil || len(cs) != 1 {
		t.Fatalf("claim of last: %v %v", len(cs) == 1, err)
	}
	enqueue(t, e, q, jobRow("b", 0, clock.Now()), jobRow("c", 0, clock.Now()), jobRow("d", 0, clock.Now()))
	// Three claims in one transaction: at +1ms (sweeps), at +2ms (the
	// instant moved: sweeps again, and takes "last"), at +2ms (skips).
	_, err := writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		for _, at := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond} {
			clock.Set(t0.Add(at))
			if _, err := claimTx(ctx, tx, claim("x", time.Minute)); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := get(t, e, q, "last")
	if s.Status != "quarantined" {
		t.Fatalf("last after a claim at its lease end in the same transaction: %+v; want quarantined", s)
	}
	// Within one transaction the memo says when to skip.
	_, err = writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		clock.Set(t0.Add(5 * time.Millisecond))
		first := sweptAt(tx, q.Name, clock.Now())
		again := sweptAt(tx, q.Name, clock.Now())
		other := sweptAt(tx, "other", clock.Now())
		clock.Set(t0.Add(6 * time.Millisecond))
		later := sweptAt(tx, q.Name, clock.Now())
		if first || !again || other || later {
			t.Errorf("sweptAt: first %v, again at the same instant %v, other queue %v, a millisecond later %v; want false, true, false, false",
				first, again, other, later)
		}
		return struct{}{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A new transaction starts with no memo.
	_, err = writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		if sweptAt(tx, q.Name, clock.Now()) {
			t.Error("sweptAt in a new transaction at the instant of the last one: true, want false")
		}
		return struct{}{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
}
