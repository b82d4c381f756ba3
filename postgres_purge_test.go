package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// TestPostgresPurgeRemembersEveryTokenItDeletes checks rule 21 in docs/rules.md on PostgreSQL against a job that ends while a Purge runs: a
// purged job's ID enqueued again continues its tokens, so every job Purge
// deletes must have its last token remembered, and a job it does not
// remember it must not delete. A trigger makes the purge sleep while it
// remembers the tokens of its chunk; meanwhile another connection finishes
// a second job at an instant before the purge's bound. Were the chunk
// picked again to be deleted, the second job would be deleted with its
// token forgotten, and enqueued again it would hand out token 1 a second
// time.
func TestPostgresPurgeRemembersEveryTokenItDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.DB(t)
	clock := leaseq.NewManualClock(t0)
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"done", "ending"} {
		if err := q.Enqueue(ctx, leaseq.Job{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	done, _, _ := q.Claim(ctx, "w", time.Minute)
	ending, _, _ := q.Claim(ctx, "w", time.Minute)
	clock.Set(ms(10))
	if ok, err := q.Finish(ctx, done); err != nil || !ok {
		t.Fatalf("Finish(%s): %v, %v", done.ID, ok, err)
	}
	for _, stmt := range []string{`CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$`,
		`CREATE TRIGGER slow AFTER INSERT ON leaseq_purged FOR EACH STATEMENT EXECUTE FUNCTION slow()`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	purged := make(chan error, 1)
	go func() {
		_, err := q.Purge(ctx, ms(50), leaseq.StatusDone)
		purged <- err
	}()
	waitForSleep(t, q)
	clock.Set(ms(20))
	if ok, err := q.Finish(ctx, ending); err != nil || !ok {
		t.Fatalf("Finish(%s) while the purge runs: %v, %v", ending.ID, ok, err)
	}
	if err := <-purged; err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"done", "ending"} {
		_, err := q.Get(ctx, id)
		if err == nil {
			continue // not purged: nothing to remember
		}
		if !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, leaseq.Job{ID: id}); err != nil {
			t.Fatal(err)
		}
		c, ok, err := q.Claim(ctx, "w", time.Minute)
		if err != nil || !ok || c.ID != id || c.Token != 2 {
			t.Fatalf("%s purged, enqueued again and claimed: %+v, %v, %v; want token 2, after the purged job's token 1", id, c, ok, err)
		}
	}
}

// waitForSleep waits until a statement of q's database sleeps in pg_sleep.
func waitForSleep(t *testing.T, q *leaseq.Queue) {
	t.Helper()
	for give := time.Now().Add(10 * time.Second); time.Now().Before(give); time.Sleep(time.Millisecond) {
		var sleeping bool
		err := q.DB().QueryRow(`SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event = 'PgSleep')`).Scan(&sleeping)
		if err != nil {
			t.Fatal(err)
		}
		if sleeping {
			return
		}
	}
	t.Fatal("no statement slept within 10s")
}

// TestPostgresEnqueueWaitingForAPurgeKeepsTheFence checks rule 21 on
// PostgreSQL in the one order that needs leaseq_purged_token: the insert
// starts while a Purge of its ID has deleted the job and not yet committed,
// so the insert's snapshot holds neither the deletion nor the remembered
// token; it waits for the purge on the ID's index entry and, once the purge
// commits, writes the job. A trigger holds the purge's transaction open on
// an advisory lock the test holds, until the insert waits for it. Each of
// Enqueue, EnqueueBatch (with a second job, whose tokens start at 1) and
// EnqueueTx in a READ COMMITTED transaction: the new job's first claim gets
// the purged job's last token + 1, and the claim from before the purge is
// refused.
func TestPostgresEnqueueWaitingForAPurgeKeepsTheFence(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"single", "batch", "tx"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			q, db := pgQueue(t, leaseq.Options{})
			if err := q.Enqueue(ctx, leaseq.Job{ID: "x"}); err != nil {
				t.Fatal(err)
			}
			old := mustClaimPG(t, q)
			if ok, err := q.Finish(ctx, old); err != nil || !ok {
				t.Fatalf("Finish: %v, %v", ok, err)
			}
			holder := heldAdvisoryLock(t, db, 727)
			for _, stmt := range []string{`CREATE FUNCTION held() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN PERFORM pg_advisory_xact_lock(727); RETURN NULL; END $$`,
				`CREATE TRIGGER held AFTER INSERT ON leaseq_purged FOR EACH STATEMENT EXECUTE FUNCTION held()`} {
				if _, err := db.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			purged := make(chan error, 1)
			go func() {
				n, err := q.Purge(ctx, time.Now().Add(time.Hour), leaseq.StatusDone)
				if err == nil && n != 1 {
					err = fmt.Errorf("purged %d jobs, want 1", n)
				}
				purged <- err
			}()
			waitForWait(t, db, "advisory")
			jobs := []leaseq.Job{{ID: "x"}}
			if mode != "single" {
				jobs = append(jobs, leaseq.Job{ID: "companion"})
			}
			enqueued := make(chan error, 1)
			go func() { enqueued <- enqueueBy(&fixture{q: q, db: db, ctx: ctx}, mode, jobs) }()
			waitForWait(t, db, "transactionid")
			if _, err := holder.ExecContext(ctx, "SELECT pg_advisory_unlock(727)"); err != nil {
				t.Fatal(err)
			}
			if err := <-purged; err != nil {
				t.Fatalf("Purge: %v", err)
			}
			if err := <-enqueued; err != nil {
				t.Fatalf("%s enqueue that waited for the purge: %v", mode, err)
			}
			cs, err := q.ClaimBatch(ctx, "w2", time.Minute, len(jobs))
			if err != nil || len(cs) != len(jobs) {
				t.Fatalf("ClaimBatch: %+v, %v; want %d claims", cs, err, len(jobs))
			}
			for _, c := range cs {
				if want := map[string]int64{"x": old.Token + 1, "companion": 1}[c.ID]; c.Token != want {
					t.Errorf("%s claimed with token %d; want %d (the purged x had %d)", c.ID, c.Token, want, old.Token)
				}
			}
			if ok, err := q.Finish(ctx, old); err != nil || ok {
				t.Errorf("Finish of the claim from before the purge, %+v: %v, %v; want false, nil", old, ok, err)
			}
		})
	}
}

// heldAdvisoryLock takes the session advisory lock key on a connection of
// db of its own, closed (and the lock with it) when t ends.
func heldAdvisoryLock(t *testing.T, db *sql.DB, key int64) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitForWait waits until a backend of db's database waits for a lock of
// the kind event (pg_stat_activity.wait_event): "advisory", or
// "transactionid" for another transaction's end.
func waitForWait(t *testing.T, db *sql.DB, event string) {
	t.Helper()
	for give := time.Now().Add(30 * time.Second); time.Now().Before(give); time.Sleep(time.Millisecond) {
		var waiting bool
		err := db.QueryRow(`SELECT EXISTS (SELECT FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1)`, event).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
	}
	t.Fatalf("no backend came to wait for a %s lock within 30s", event)
}
