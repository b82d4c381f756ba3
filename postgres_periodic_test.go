package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestPostgresSlotWaitingForAPurge: a pool offers a slot whose done job a
// Purge has deleted and not yet committed (a trigger holds the purge's
// transaction open on an advisory lock the test holds); the slot insert
// waits for the purge on the ID's index entry, and once the purge commits
// it must not write the slot's job again (rule 53).
func TestPostgresSlotWaitingForAPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := leaseq.NewManualClock(at10(0, 0, 0))
	q, db := pgQueue(t, leaseq.Options{Clock: clock})
	s0 := "tick@2026-01-01T10:00:00Z"
	if err := q.Enqueue(ctx, leaseq.Job{ID: s0}); err != nil {
		t.Fatal(err)
	}
	c := mustClaimPG(t, q)
	if ok, err := q.Finish(ctx, c); err != nil || !ok {
		t.Fatalf("Finish: %v, %v", ok, err)
	}
	holder := heldAdvisoryLock(t, db, 728)
	for _, stmt := range []string{`CREATE FUNCTION held() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(728); RETURN NULL; END $$`,
		`CREATE TRIGGER held AFTER INSERT ON leaseq_purged FOR EACH STATEMENT EXECUTE FUNCTION held()`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	purged := make(chan error, 1)
	go func() {
		n, err := q.Purge(ctx, at10(1, 0, 0), leaseq.StatusDone)
		if err == nil && n != 1 {
			err = fmt.Errorf("purged %d jobs, want 1", n)
		}
		purged <- err
	}()
	waitForWait(t, db, "advisory")
	owner := "slot-purge"
	passes := watchPasses(t, "periodic", owner)
	clock.Set(at10(0, 30, 0))
	runWork(t, q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond, Retention: leaseq.Retention{Off: true},
		Periodic: []leaseq.Periodic{{Name: "tick", Schedule: leaseq.Every(time.Minute)}}},
		func(context.Context, leaseq.Claim) error { return nil })
	waitForWait(t, db, "transactionid")
	if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock(728)"); err != nil {
		t.Fatal(err)
	}
	if err := <-purged; err != nil {
		t.Fatalf("Purge: %v", err)
	}
	passes.at(t, at10(0, 30, 0))
	if s, err := q.Get(ctx, s0); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("Get(%q) after the purge the slot insert waited for: %s, %v; want ErrNotFound", s0, fmtRow(s), err)
	}
}
