package leaseq

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestClaimSweepsOncePerInstant: in one transaction, claims at the same
// instant run the quarantine sweeps and the promotion once, and a claim at
// a later instant runs them again — so a lease that ends between two claims
// of one shared transaction is swept by the second, exactly as if each claim
// had a transaction of its own.
func TestClaimSweepsOncePerInstant(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := NewManualClock(t0)
	q, err := New(ctx, db, Options{Clock: clock, DisableGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// "last" has one attempt; its lease ends at +2ms, after which the
	// sweep must quarantine it. "b", "c" and "d" are there to be claimed.
	if err := q.Enqueue(ctx, Job{ID: "last", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := q.Claim(ctx, "w", 2*time.Millisecond); err != nil || !ok {
		t.Fatalf("claim of last: %v %v", ok, err)
	}
	if err := q.EnqueueBatch(ctx, []Job{{ID: "b"}, {ID: "c"}, {ID: "d"}}); err != nil {
		t.Fatal(err)
	}
	// Three claims in one transaction: at +1ms (sweeps), at +2ms (the
	// instant moved: sweeps again, and takes "last"), at +2ms (skips).
	err = q.e.(*store).writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		for _, at := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 2 * time.Millisecond} {
			clock.Set(t0.Add(at))
			if _, err := q.claimTx(ctx, tx, "x", time.Minute, 1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := q.Get(ctx, "last")
	if err != nil || s.Status != StatusQuarantined {
		t.Fatalf("last after a claim at its lease end in the same transaction: %+v %v; want quarantined", s, err)
	}
	// Within one transaction the memo says when to skip.
	err = q.e.(*store).writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		clock.Set(t0.Add(5 * time.Millisecond))
		first := sweptAt(tx, q.name, q.now())
		again := sweptAt(tx, q.name, q.now())
		other := sweptAt(tx, "other", q.now())
		clock.Set(t0.Add(6 * time.Millisecond))
		later := sweptAt(tx, q.name, q.now())
		if first || !again || other || later {
			t.Errorf("sweptAt: first %v, again at the same instant %v, other queue %v, a millisecond later %v; want false, true, false, false",
				first, again, other, later)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A new transaction starts with no memo.
	err = q.e.(*store).writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		if sweptAt(tx, q.name, q.now()) {
			t.Error("sweptAt in a new transaction at the instant of the last one: true, want false")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
