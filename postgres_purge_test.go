package leaseq_test

import (
	"context"
	"errors"
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
