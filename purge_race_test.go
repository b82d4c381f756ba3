package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestPurgeRacingEnqueueKeepsTheFence checks rule 21 against the closest
// race there is: a Purge deleting a finished job while its ID is enqueued
// again, in a loop that stops at the first answer other than ErrDuplicate,
// so that the enqueue runs into the purge's deletion in every round. The new
// job's first claim must get the purged job's last token + 1 and the claim
// from before the purge must not finish it, whichever call won. Each of
// Enqueue, EnqueueBatch and EnqueueTx races its own rounds.
func TestPurgeRacingEnqueueKeepsTheFence(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		for _, mode := range []string{"single", "batch", "tx"} {
			t.Run(mode, func(t *testing.T) {
				f := newFixture(t, e, leaseq.Options{})
				const rounds = 100
				reused := 0
				for round := range rounds {
					if !purgeRaceRound(t, f, mode, fmt.Sprintf("r%d", round)) {
						reused++
					}
				}
				if reused > 0 {
					t.Errorf("%d of %d rounds: the job enqueued again handed out a token the purged job had handed out", reused, rounds)
				}
			})
		}
	})
}

// purgeRaceRound runs one round on the ID id and reports whether the fence
// held; a failure other than a reused token fails t at once.
func purgeRaceRound(t *testing.T, f *fixture, mode, id string) bool {
	t.Helper()
	f.enqueue(leaseq.Job{ID: id})
	old := f.mustClaim("worker-a", time.Minute)
	if !f.finish(old) {
		t.Fatalf("Finish(%+v) refused", old)
	}
	purged := make(chan error, 1)
	start := make(chan struct{})
	go func() {
		<-start
		_, err := f.q.Purge(f.ctx, ms(1), leaseq.StatusDone)
		purged <- err
	}()
	close(start)
	jobs := []leaseq.Job{{ID: id}}
	if mode != "single" {
		jobs = append(jobs, leaseq.Job{ID: id + "/companion"})
	}
	for give := time.Now().Add(30 * time.Second); ; {
		err := enqueueBy(f, mode, jobs)
		if err == nil {
			break
		}
		if !errors.Is(err, leaseq.ErrDuplicate) || time.Now().After(give) {
			t.Fatalf("%s enqueue of %s while a purge runs: %v", mode, id, err)
		}
	}
	if err := <-purged; err != nil {
		t.Fatal(err)
	}
	cs, err := f.q.ClaimBatch(f.ctx, "worker-b", time.Minute, len(jobs))
	if err != nil || len(cs) != len(jobs) {
		t.Fatalf("ClaimBatch after the race: %+v, %v; want %d claims", cs, err, len(jobs))
	}
	held := true
	for _, c := range cs {
		if c.ID == id && c.Token != old.Token+1 {
			t.Logf("%s: %s enqueued again while purged, claimed with token %d; want %d, after the purged job's %d", mode, id, c.Token, old.Token+1, old.Token)
			held = false
		}
	}
	if ok, err := f.q.Finish(f.ctx, old); err != nil || ok {
		t.Logf("%s: Finish of the claim from before the purge, %+v: %v, %v; want false, nil", mode, old, ok, err)
		held = false
	}
	for _, c := range cs {
		f.finish(c)
	}
	return held
}

// enqueueBy enqueues jobs with the call mode names: Enqueue (one job),
// EnqueueBatch, or EnqueueTx in a transaction of its own, committed when the
// call succeeds.
func enqueueBy(f *fixture, mode string, jobs []leaseq.Job) error {
	switch mode {
	case "single":
		return f.q.Enqueue(f.ctx, jobs[0])
	case "batch":
		return f.q.EnqueueBatch(f.ctx, jobs)
	}
	tx, err := f.db.BeginTx(f.ctx, nil)
	if err != nil {
		return err
	}
	if err := f.q.EnqueueTx(f.ctx, tx, jobs...); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

// TestPostgresEnqueueTxRepeatableReadAfterPurge checks rule 21 where
// EnqueueTx runs in a caller's REPEATABLE READ transaction whose snapshot
// was taken before a purge of the ID committed: it cannot read the token
// the purge remembered, so the insert fails as a serialization failure
// (the caller runs its transaction again) instead of starting the ID's
// tokens over. Run again, the enqueue continues the purged job's tokens.
func TestPostgresEnqueueTxRepeatableReadAfterPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, db := pgQueue(t, leaseq.Options{})
	if err := q.Enqueue(ctx, leaseq.Job{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	old := mustClaimPG(t, q)
	if ok, err := q.Finish(ctx, old); err != nil || !ok {
		t.Fatalf("Finish: %v, %v", ok, err)
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("SELECT count(*) FROM leaseq_jobs"); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	if n, err := q.Purge(ctx, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("Purge: %d, %v; want 1", n, err)
	}
	err = q.EnqueueTx(ctx, tx, leaseq.Job{ID: "r1"})
	var se interface{ SQLState() string }
	if !errors.As(err, &se) || se.SQLState() != "40001" {
		t.Fatalf("EnqueueTx in a snapshot from before the purge: %v; want a serialization failure", err)
	}
	tx.Rollback()
	tx, err = db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if c := mustClaimPG(t, q); c.Token != old.Token+1 {
		t.Fatalf("claimed %+v; want token %d, after the purged job's %d", c, old.Token+1, old.Token)
	}
}
