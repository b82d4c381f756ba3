package leaseq_test

// Tests of what only the PostgreSQL engine has: claims that scale with
// connections (rule 39), the server's clock (rule 40) and its errors
// (rule 41). Every other rule's test runs on both engines (rule 42).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// pgQueue returns a Queue on a fresh PostgreSQL database, closed when the
// test ends.
func pgQueue(t *testing.T, opts leaseq.Options) (*leaseq.Queue, *sql.DB) {
	t.Helper()
	db := pgtest.DB(t)
	q, err := leaseq.New(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q, db
}

// enqueueN enqueues jobs j0000… in batches.
func enqueueN(t *testing.T, q *leaseq.Queue, n int, set func(i int, j *leaseq.Job)) {
	t.Helper()
	for start := 0; start < n; start += 1000 {
		var jobs []leaseq.Job
		for i := start; i < min(n, start+1000); i++ {
			j := leaseq.Job{ID: fmt.Sprintf("j%05d", i)}
			if set != nil {
				set(i, &j)
			}
			jobs = append(jobs, j)
		}
		if err := q.EnqueueBatch(context.Background(), jobs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresClaimersNeverShare: 64 goroutines on 64 connections claim at
// once until the queue is empty. Every job is claimed exactly once, with
// token 1, and no caller sees an error — no deadlock, no serialization
// failure (rule 39).
func TestPostgresClaimersNeverShare(t *testing.T) {
	t.Parallel()
	const jobs, claimers = 2000, 64
	q, db := pgQueue(t, leaseq.Options{})
	db.SetMaxOpenConns(claimers)
	enqueueN(t, q, jobs, nil)
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string][]string{}
	var wg sync.WaitGroup
	for w := range claimers {
		wg.Go(func() {
			owner := fmt.Sprintf("w%02d", w)
			for {
				c, ok, err := q.Claim(ctx, owner, time.Hour)
				if err != nil {
					t.Errorf("%s: Claim: %v", owner, err)
					return
				}
				if !ok {
					return
				}
				if c.Token != 1 {
					t.Errorf("%s claimed %s with token %d, want 1", owner, c.ID, c.Token)
				}
				mu.Lock()
				got[c.ID] = append(got[c.ID], owner)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != jobs {
		t.Fatalf("%d jobs claimed, want %d", len(got), jobs)
	}
	for id, owners := range got {
		if len(owners) != 1 {
			t.Errorf("%s claimed by %v", id, owners)
		}
	}
}

// TestPostgresClaimSkipsLockedRows: a row another transaction holds is
// skipped, not waited for. The claimer takes the next job at once, and
// the held job is claimable again the moment the holder lets go.
func TestPostgresClaimSkipsLockedRows(t *testing.T) {
	t.Parallel()
	q, db := pgQueue(t, leaseq.Options{})
	ctx := context.Background()
	for _, j := range []leaseq.Job{{ID: "first", Priority: 10}, {ID: "second"}} {
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "SELECT 1 FROM leaseq_jobs WHERE id = 'first' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	// A claim that waited for the lock would run into this context's end.
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, ok, err := q.Claim(bounded, "B", time.Minute)
	if err != nil || !ok || c.ID != "second" {
		t.Fatalf("Claim while first is locked: %+v %v %v; want second at once", c, ok, err)
	}
	if _, ok, err := q.Claim(bounded, "B", time.Minute); err != nil || ok {
		t.Fatalf("Claim with only the locked job left: ok %v, err %v; want nothing, at once", ok, err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := q.Claim(bounded, "B", time.Minute); err != nil || !ok || c.ID != "first" {
		t.Fatalf("Claim after the holder let go: %+v %v %v; want first", c, ok, err)
	}
}

// waitForLockWait waits until a backend of db's database waits for a row
// lock, and returns its pid.
func waitForLockWait(t *testing.T, db *sql.DB) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var pid int
		err := db.QueryRow(`SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' LIMIT 1`).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // polling an event, bounded by deadline
	}
	t.Fatal("no backend came to wait for a row lock within 30s")
	return 0
}

// TestPostgresFenceRechecksAfterLockWait: a Finish that waits for a row
// lock held by a claim taking the same job judges the fence again on the
// row the claim committed, so the late worker is refused and the new
// claim's row is left as it is (rule 3 under READ COMMITTED, internal/postgres/doc.go).
func TestPostgresFenceRechecksAfterLockWait(t *testing.T) {
	t.Parallel()
	clock := leaseq.NewManualClock(time.UnixMilli(1_000_000))
	q, db := pgQueue(t, leaseq.Options{Clock: clock})
	ctx := context.Background()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	a, ok, err := q.Claim(ctx, "A", time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// B claims x again at the lease end, in a transaction left open.
	b, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var token int64
	err = b.QueryRowContext(ctx, "SELECT token FROM leaseq_claim('default', 'B', $1, 1000, 1)",
		clock.Now().Add(time.Second).UnixMilli()).Scan(&token)
	if err != nil || token != 2 {
		t.Fatalf("B's claim: token %d, %v", token, err)
	}
	// A finishes at an instant its lease still runs, and waits for B.
	clock.Set(time.UnixMilli(1_000_999))
	done := make(chan error, 1)
	var finished bool
	go func() {
		var err error
		finished, err = q.Finish(ctx, a)
		done <- err
	}()
	waitForLockWait(t, db)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || finished {
		t.Fatalf("A's Finish after B's claim committed: %v %v; want false, nil", finished, err)
	}
	s, err := q.Get(ctx, "x")
	if err != nil || s.Status != leaseq.StatusLeased || s.Owner != "B" || s.Token != 2 {
		t.Fatalf("row after A's refused Finish: %+v %v; want leased to B with token 2", s, err)
	}
}

// serverNow reads the server's clock as the queue does.
func serverNow(t *testing.T, db *sql.DB) time.Time {
	t.Helper()
	var ms int64
	if err := db.QueryRow("SELECT leaseq_now()").Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

// TestPostgresServerClock: without a Clock, the instants a call stores are
// the server's, read while the call ran: an enqueue time, a lease end
// (rule 40).
func TestPostgresServerClock(t *testing.T) {
	t.Parallel()
	q, db := pgQueue(t, leaseq.Options{})
	ctx := context.Background()
	before := serverNow(t, db)
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	c, ok, err := q.Claim(ctx, "A", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	after := serverNow(t, db)
	s, err := q.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	between := func(what string, t0 time.Time) {
		if t0.Before(before) || t0.After(after) {
			t.Errorf("%s %s is not within the server's clock during the calls, %s..%s", what, t0, before, after)
		}
	}
	between("EnqueuedAt", s.EnqueuedAt)
	between("lease start (LeaseUntil - 1h)", c.LeaseUntil.Add(-time.Hour))
	if ok, err := q.Finish(ctx, c); err != nil || !ok {
		t.Fatalf("Finish within the lease: %v %v", ok, err)
	}
	later := serverNow(t, db)
	s, err = q.Get(ctx, "a")
	if err != nil || s.Status != leaseq.StatusDone {
		t.Fatalf("after Finish: %+v %v", s, err)
	}
	if s.UpdatedAt.Before(after) || s.UpdatedAt.After(later) {
		t.Errorf("Finish stored %s, not within the server's clock during it, %s..%s", s.UpdatedAt, after, later)
	}
}

// failNext makes the next n updates (or inserts, with op "INSERT") of
// leaseq_jobs fail with SQLSTATE code, from a trigger: the server undoes
// the statement and the transaction as it would after a real
// serialization failure or deadlock. The count lives in a sequence, which
// a rollback does not undo. tries reports how many statements reached the
// trigger.
func failNext(t *testing.T, db *sql.DB, op, code string, n int) (tries func() int) {
	t.Helper()
	for _, stmt := range []string{
		`CREATE SEQUENCE IF NOT EXISTS fail_tries`,
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION fail_next() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('fail_tries') <= %d THEN
				RAISE EXCEPTION 'injected failure' USING ERRCODE = '%s';
			END IF;
			RETURN NEW;
		END $$`, n, code),
		`DROP TRIGGER IF EXISTS fail_next ON leaseq_jobs`,
		fmt.Sprintf(`CREATE TRIGGER fail_next BEFORE %s ON leaseq_jobs FOR EACH ROW EXECUTE FUNCTION fail_next()`, op),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return func() int {
		var v int
		if err := db.QueryRow(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM fail_tries`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestPostgresRetriesSerializationFailures: a serialization failure or a
// deadlock is retried inside the call, which then succeeds; any other
// error is the caller's at once, with the row untouched (rule 41).
func TestPostgresRetriesSerializationFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, code string
		call       func(q *leaseq.Queue, c leaseq.Claim) error
	}{
		{"finish/40001", "40001", func(q *leaseq.Queue, c leaseq.Claim) error {
			ok, err := q.Finish(ctx, c)
			if err == nil && !ok {
				err = errors.New("refused")
			}
			return err
		}},
		{"finish batch/40P01", "40P01", func(q *leaseq.Queue, c leaseq.Claim) error {
			oks, err := q.FinishBatch(ctx, []leaseq.Claim{c})
			if err == nil && !oks[0] {
				err = errors.New("refused")
			}
			return err
		}},
		{"cancel/40P01", "40P01", func(q *leaseq.Queue, c leaseq.Claim) error { return q.Cancel(ctx, c.ID, "stop") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, db := pgQueue(t, leaseq.Options{})
			if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			c, ok, err := q.Claim(ctx, "A", time.Hour)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			tries := failNext(t, db, "UPDATE", tc.code, 2)
			if err := tc.call(q, c); err != nil {
				t.Fatalf("call through two injected %s failures: %v", tc.code, err)
			}
			if n := tries(); n != 3 {
				t.Errorf("the call reached the table %d times, want 3 (two failures, then success)", n)
			}
		})
	}
	t.Run("enqueue/40001", func(t *testing.T) {
		t.Parallel()
		q, db := pgQueue(t, leaseq.Options{})
		tries := failNext(t, db, "INSERT", "40001", 1)
		if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "b"}, {ID: "c"}}); err != nil {
			t.Fatal(err)
		}
		if n := tries(); n != 4 {
			t.Errorf("inserts reached the table %d times, want 4", n)
		}
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		t.Parallel()
		q, db := pgQueue(t, leaseq.Options{})
		if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		c, ok, err := q.Claim(ctx, "A", time.Hour)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		before := snapshotPG(t, db)
		tries := failNext(t, db, "UPDATE", "22000", 1)
		if ok, err := q.Finish(ctx, c); err == nil {
			t.Fatalf("Finish through an injected data error: %v, nil; want the error", ok)
		}
		if n := tries(); n != 1 {
			t.Errorf("Finish reached the table %d times, want 1", n)
		}
		if after := snapshotPG(t, db); after != before {
			t.Fatalf("a failed Finish changed the table:\n%s\nwant\n%s", after, before)
		}
	})
}

// snapshotPG is every row of the queue's tables, column by column.
func snapshotPG(t *testing.T, db *sql.DB) string {
	t.Helper()
	return dumpQuery(t, db, "SELECT * FROM leaseq_jobs ORDER BY seq") +
		dumpQuery(t, db, "SELECT * FROM leaseq_purged ORDER BY queue, id")
}

// TestPostgresLostConnection: a call whose connection is cut while it waits
// gets an error, and leaves nothing half-done: a batch that had finished
// its first claim when the cut came has finished none (rule 41).
func TestPostgresLostConnection(t *testing.T) {
	t.Parallel()
	clock := leaseq.NewManualClock(time.UnixMilli(1_000_000))
	q, db := pgQueue(t, leaseq.Options{Clock: clock})
	ctx := context.Background()
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a"}, {ID: "b"}}); err != nil {
		t.Fatal(err)
	}
	cs, err := q.ClaimBatch(ctx, "A", time.Hour, 2)
	if err != nil || len(cs) != 2 {
		t.Fatal(cs, err)
	}
	slices.SortFunc(cs, func(x, y leaseq.Claim) int { return strings.Compare(x.ID, y.ID) })
	before := snapshotPG(t, db)
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "SELECT 1 FROM leaseq_jobs WHERE id = 'b' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := q.FinishBatch(ctx, cs)
		done <- err
	}()
	pid := waitForLockWait(t, db)
	if _, err := db.Exec("SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("FinishBatch whose connection was cut: nil error")
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if after := snapshotPG(t, db); after != before {
		t.Fatalf("the cut FinishBatch changed the table:\n%s\nwant\n%s", after, before)
	}
	// The pool replaces the connection; the claims still finish.
	if oks, err := q.FinishBatch(ctx, cs); err != nil || !oks[0] || !oks[1] {
		t.Fatalf("FinishBatch after the cut: %v %v", oks, err)
	}
}
