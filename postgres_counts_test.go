package leaseq_test

// Tests of the PostgreSQL engine's counters of done and quarantined jobs
// (leaseq_counts in internal/postgres/sql/schema.sql).

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// TestPostgresClaimStormNeverBlocks checks rule 39 in docs/rules.md
// where every claim's quarantine sweep moves rows: 32 claimers on the
// server's clock take jobs of one attempt with a 2ms lease and abandon
// three of four of them (finishing the fourth), so claims find leases
// ended and quarantine them, and each sweep, finish and claim changes the
// counts Stats reads. No claim may wait for a row another transaction
// holds: sampled throughout, no claim waits for a transaction or a tuple
// lock (pg_blocking_pids of every claim is empty), and the server counts
// no deadlock. Stats then agrees with the rows. Without leaseq_claim's
// advisory locks, FOR UPDATE SKIP LOCKED waits when the row version a claim
// read is updated by a transaction that commits as it looks and the next
// version is held by another claimer (internal/postgres/sql/schema.sql says how), which
// claims with 2ms leases meet often.
// LEASEQ_CLAIM_STORM sets how long the storm lasts (default 3s).
func TestPostgresClaimStormNeverBlocks(t *testing.T) {
	t.Parallel()
	length := 3 * time.Second
	if s := os.Getenv("LEASEQ_CLAIM_STORM"); s != "" {
		var err error
		if length, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	const claimers = 32
	url := pgtest.URL(t)
	watch := openPostgres(t, url)
	watch.SetMaxOpenConns(1)
	deadlocksBefore := serverDeadlocks(t, watch)
	db := openPostgres(t, url)
	db.SetMaxOpenConns(claimers + 4)
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var claims, onCounts, other, samples atomic.Int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			c, o, who := blockedClaims(t, watch)
			samples.Add(1)
			if o > 0 {
				other.Add(1)
			}
			if c > 0 {
				onCounts.Add(1)
			}
			if c+o > 0 && onCounts.Load()+other.Load() <= 3 {
				t.Logf("claims blocked: %s", who)
			}
		}
	})
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := range claimers {
		wg.Go(func() { storm(t, q, fmt.Sprintf("w%02d", w), &next, &claims, stop) })
	}
	time.Sleep(length) // the storm's length: what is measured is counted, not timed
	close(stop)
	wg.Wait()
	sampler.Wait()
	q.Close()
	db.Close() // its backends end, and report their statistics as they do
	deadlocks := serverDeadlocks(t, watch) - deadlocksBefore
	t.Logf("%v: %d claims, %d deadlocks; of %d samples, %d with a claim waiting for a row of leaseq_counts, %d for another row",
		length, claims.Load(), deadlocks, samples.Load(), onCounts.Load(), other.Load())
	if deadlocks != 0 || onCounts.Load() != 0 || other.Load() != 0 {
		t.Errorf("%d deadlocks, %d samples with a claim waiting for a counter, %d for another row; want none",
			deadlocks, onCounts.Load(), other.Load())
	}
	var rows int
	if err := watch.QueryRow("SELECT count(*) FROM leaseq_counts").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d counter rows", rows) // ended backends' rows are folded as new backends count
	wantCountsMatchRows(t, url)
}

// storm claims as owner until stop, enqueueing 100 jobs whenever it finds
// none, and finishes one claim of four.
func storm(t *testing.T, q *leaseq.Queue, owner string, next, claims *atomic.Int64, stop chan struct{}) {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		c, ok, err := q.Claim(ctx, owner, 2*time.Millisecond)
		if err != nil {
			t.Errorf("%s: Claim: %v", owner, err)
			return
		}
		if !ok {
			var jobs []leaseq.Job
			for range 100 {
				jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("j%07d", next.Add(1)), MaxAttempts: 1})
			}
			if err := q.EnqueueBatch(ctx, jobs); err != nil {
				t.Errorf("%s: EnqueueBatch: %v", owner, err)
				return
			}
			continue
		}
		claims.Add(1)
		if i%4 == 0 {
			if _, err := q.Finish(ctx, c); err != nil {
				t.Errorf("%s: Finish: %v", owner, err)
				return
			}
		}
	}
}

// serverDeadlocks is the count of deadlocks the server has detected in the
// database of db. A backend reports its statistics at the latest when it
// ends, so the count is read once db's is the database's only backend: the
// caller has closed every other pool on it.
func serverDeadlocks(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	for give := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var others int
		err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others)
		if err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(give) {
			t.Fatalf("%d other backends still on the database after 10s", others)
		}
	}
	var n int64
	err := db.QueryRow("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blockedClaims samples the claim statements of db's database that wait
// for a lock another backend holds, in one snapshot of the server's locks:
// a lock not granted, other than one to extend a table's file (no wait for
// a row). It counts those that wait on a counter: holding a tuple lock on a
// row of leaseq_counts, as a waiter for a row of it does while it waits;
// the others; and says who waits for what (pg_blocking_pids, read just
// after the snapshot).
func blockedClaims(t *testing.T, db *sql.DB) (onCounts, other int, who string) {
	var w sql.NullString
	err := db.QueryRow(`WITH locks AS MATERIALIZED (SELECT pid, locktype, relation, granted FROM pg_locks),
	claims AS (
		SELECT a.pid, pg_blocking_pids(a.pid) AS by,
			(SELECT string_agg(l.locktype, ',') FROM locks l
			 WHERE l.pid = a.pid AND NOT l.granted AND l.locktype <> 'extend') AS waits,
			EXISTS (SELECT FROM locks l WHERE l.pid = a.pid AND l.locktype = 'tuple'
				AND l.relation = 'leaseq_counts'::regclass) AS on_counts
		FROM pg_stat_activity a
		WHERE a.datname = current_database() AND (a.query LIKE '%leaseq_claim%' OR a.query LIKE '%leaseq_sweep%') AND a.state = 'active'),
	blocked AS (SELECT * FROM claims WHERE waits IS NOT NULL)
		SELECT count(*) FILTER (WHERE on_counts), count(*) FILTER (WHERE NOT on_counts),
			string_agg(pid || ' (' || coalesce(waits, '') || CASE WHEN on_counts THEN ', on a row of leaseq_counts' ELSE '' END || ') by ' ||
				coalesce((SELECT string_agg(b.pid || ' (' || b.state || ': ' || left(regexp_replace(b.query, '\s+', ' ', 'g'), 120) || ')', ', ')
				 FROM pg_stat_activity b WHERE b.pid = ANY (blocked.by)), 'none left'), '; ')
		FROM blocked`).Scan(&onCounts, &other, &w)
	if err != nil {
		t.Error(err)
	}
	return onCounts, other, w.String
}

// wantCountsMatchRows fails t unless Stats of the default queue at url
// counts the done and quarantined jobs its rows hold.
func wantCountsMatchRows(t *testing.T, url string) {
	t.Helper()
	db := openPostgres(t, url)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var done, quarantined int
	err = db.QueryRow(`SELECT count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'quarantined')
		FROM leaseq_jobs WHERE queue = $1`, leaseq.DefaultName).Scan(&done, &quarantined)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != done || st.Quarantined != quarantined {
		t.Errorf("Stats: %d done, %d quarantined; the rows: %d, %d", st.Done, st.Quarantined, done, quarantined)
	}
}

// leaseqCountV3 is the counting trigger's function of schema version 3 on
// PostgreSQL, whose rows were shards by the job's seq.
const leaseqCountV3 = `CREATE OR REPLACE FUNCTION leaseq_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR OLD.status IN ('done', 'quarantined') THEN
    UPDATE leaseq_counts SET n = n - 1
    WHERE queue = OLD.queue AND status = OLD.status AND shard = OLD.seq % 64;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.status IN ('done', 'quarantined') THEN
    INSERT INTO leaseq_counts AS c (queue, status, shard, n) VALUES (NEW.queue, NEW.status, NEW.seq % 64, 1)
    ON CONFLICT (queue, status, shard) DO UPDATE SET n = c.n + 1;
  END IF;
  RETURN NULL;
END $$`

// TestPostgresUpgradeV3KeepsCounts checks rule 13 for PostgreSQL's schema
// version 3, whose counters were shards by seq: a database it wrote, with
// done and quarantined jobs counted in those shards, opens upgraded with
// its counts kept, and they stay right as jobs finish and are purged.
func TestPostgresUpgradeV3KeepsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	old := openPostgres(t, url)
	clock := leaseq.NewManualClock(t0)
	q, err := leaseq.New(ctx, old, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{leaseqCountV3,
		`DROP TRIGGER leaseq_purged_token ON leaseq_jobs`, `DROP FUNCTION leaseq_purged_token()`,
		`DROP FUNCTION leaseq_count_add(text, text, bigint)`, `UPDATE leaseq_schema SET version = 3`} {
		if _, err := old.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	enqueueN(t, q, 10, nil)
	for i := range 10 {
		c, ok, err := q.Claim(ctx, "w", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Claim: %v, %v", ok, err)
		}
		if i < 6 {
			_, err = q.Finish(ctx, c)
		} else {
			_, err = q.Fail(ctx, c, "bad")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var shards int
	if err := old.QueryRow("SELECT count(*) FROM leaseq_counts WHERE shard < 64").Scan(&shards); err != nil || shards == 0 {
		t.Fatalf("version 3's shards: %d rows, %v; want the old trigger's rows", shards, err)
	}
	q.Close()
	old.Close()

	db := openPostgres(t, url)
	q, err = leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var v int
	if err := db.QueryRow("SELECT version FROM leaseq_schema").Scan(&v); err != nil || v != leaseq.PGSchemaCurrent {
		t.Fatalf("schema version after New: %d, %v; want %d", v, err, leaseq.PGSchemaCurrent)
	}
	if st, err := q.Stats(ctx); err != nil || st.Done != 6 || st.Quarantined != 4 {
		t.Fatalf("Stats after the upgrade: %s, %v; want 6 done, 4 quarantined", fmtStats(st), err)
	}
	c, _, _ := q.Claim(ctx, "w", time.Minute) // none left
	if c.ID != "" {
		t.Fatalf("claimed %+v; want nothing left", c)
	}
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a"}, {ID: "b"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c := mustClaimPG(t, q)
		if ok, err := q.Finish(ctx, c); err != nil || !ok {
			t.Fatalf("Finish: %v, %v", ok, err)
		}
	}
	clock.Advance(time.Millisecond)
	if n, err := q.Purge(ctx, clock.Now(), leaseq.StatusDone); err != nil || n != 8 {
		t.Fatalf("Purge: %d, %v; want 8", n, err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Done != 0 || st.Quarantined != 4 {
		t.Fatalf("Stats after the purge: %s, %v; want 0 done, 4 quarantined", fmtStats(st), err)
	}
	wantCountsMatchRows(t, url)
}

// mustClaimPG claims a job of q or fails t.
func mustClaimPG(t *testing.T, q *leaseq.Queue) leaseq.Claim {
	t.Helper()
	c, ok, err := q.Claim(context.Background(), "w", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Claim: %v, %v", ok, err)
	}
	return c
}

// TestPostgresStalledClaimLeavesSweeps checks rule 39 in docs/rules.md
// for a claimer that stops before its COMMIT (a paused process, a lost
// network): its transaction holds the rows it took, and nothing that
// stops the other claims' sweeps. One claims job a as a Claim's
// transaction does and leaves the transaction open; job b comes due, and
// a Claim elsewhere promotes and takes it.
func TestPostgresStalledClaimLeavesSweeps(t *testing.T) {
	t.Parallel()
	clock := leaseq.NewManualClock(t0)
	q, db := pgQueue(t, leaseq.Options{Clock: clock})
	ctx := context.Background()
	err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a"}, {ID: "b", RunAt: t0.Add(time.Second)}})
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Rollback()
	var id string
	err = stalled.QueryRowContext(ctx, "SELECT id FROM ("+leaseq.PGClaimSQL+") c",
		leaseq.DefaultName, "stalled", t0.UnixMilli(), 60_000, 1).Scan(&id)
	if err != nil || id != "a" {
		t.Fatalf("the stalled claim: %q, %v; want a", id, err)
	}
	clock.Advance(time.Second)
	c, ok, err := q.Claim(ctx, "w", time.Minute)
	if err != nil || !ok || c.ID != "b" {
		t.Fatalf("Claim beside the stalled one: %+v, %v, %v; want b, the job that came due", c, ok, err)
	}
}
