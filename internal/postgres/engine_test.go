package postgres

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	"github.com/leaseq/leaseq/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testEngine is a migrated Engine on a fresh database, released when the
// test ends.
func testEngine(t *testing.T) (*Engine, *sql.DB) {
	t.Helper()
	db := pgtest.DB(t)
	ctx := context.Background()
	ok, version, err := Handles(ctx, db)
	if err != nil || !ok {
		t.Fatalf("Handles: %v, %q, %v", ok, version, err)
	}
	e := New(db)
	t.Cleanup(e.Release)
	if err := e.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.DatabaseIdentify(ctx); err != nil {
		t.Fatal(err)
	}
	return e, db
}

// fixedQueue is a queue on a clock of its own standing at *now.
func fixedQueue(name string, now *int64) engine.Queue {
	return engine.Queue{Name: name, Clock: engine.Clock{Now: func() int64 { return *now }}}
}

func job(id string, now int64) engine.JobRow {
	return engine.JobRow{ID: id, Qty: 1, Payload: []byte("p"), MaxAttempts: 3, Due: now, Created: now}
}

// TestEngineCalls runs each of the engine's calls once on a real server,
// on the queue's clock: what the root's suite checks in depth, here only
// that the statements run and answer as the calls say.
func TestEngineCalls(t *testing.T) {
	e, _ := testEngine(t)
	ctx := context.Background()
	now := int64(1_000_000)
	q := fixedQueue("q", &now)
	if v, err := e.SchemaVersion(ctx); err != nil || v != SchemaCurrent {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
	if bad, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{job("a", now)}, One: true}); err != nil || bad != -1 {
		t.Fatalf("insert a: %d, %v", bad, err)
	}
	bad, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{job("b", now), job("a", now)}})
	if !errors.Is(err, engine.ErrDuplicate) || bad != 1 {
		t.Fatalf("batch with a taken ID: %d, %v", bad, err)
	}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{job("b", now), job("c", now)}}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: 1000, Max: 2, Share: engine.ShareNone})
	if err != nil || len(cs) != 2 || cs[0].ID != "a" || cs[0].Token != 1 || cs[0].LeaseUntil != now+1000 {
		t.Fatalf("claim: %+v, %v", cs, err)
	}
	fenced := func(kind engine.FenceKind, c engine.ClaimRow) engine.Fenced {
		return engine.Fenced{Kind: kind, ID: c.ID, Owner: c.Owner, Token: c.Token, Lease: 5000, Reason: "r"}
	}
	now += 10
	rs, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: []engine.Fenced{fenced(engine.FenceExtend, cs[0])}})
	if err != nil || !rs[0].OK || rs[0].LeaseUntil != now+5000 {
		t.Fatalf("extend: %+v, %v", rs, err)
	}
	rs, err = e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: []engine.Fenced{
		fenced(engine.FenceFinish, cs[0]), fenced(engine.FenceFail, cs[1]), fenced(engine.FenceFinish, cs[1])}})
	if err != nil || !rs[0].OK || !rs[1].OK || rs[2].OK {
		t.Fatalf("finish, fail, finish again: %+v, %v", rs, err)
	}
	r, err := e.JobOperate(ctx, engine.JobOperateParams{Queue: q, Kind: engine.OpRequeue, ID: "b"})
	if err != nil || !r.Applied {
		t.Fatalf("requeue b: %+v, %v", r, err)
	}
	r, err = e.JobOperate(ctx, engine.JobOperateParams{Queue: q, Kind: engine.OpRequeue, ID: "a"})
	if err != nil || r.Applied || !r.Found || r.Status != "done" || r.Now != now {
		t.Fatalf("requeue a: %+v, %v", r, err)
	}
	checkReads(t, e, q, now)
	now += 10
	if n, err := e.JobPurgeChunk(ctx, engine.JobPurgeChunkParams{Queue: "q", Status: "done", Before: now}); err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{job("a", now)}, One: true}); err != nil {
		t.Fatal(err)
	}
	if s, found, err := e.JobGet(ctx, "q", "a"); err != nil || !found || s.Token != 1 {
		t.Fatalf("a enqueued again after its purge: %+v, %v, %v (want its token kept)", s, found, err)
	}
}

// checkReads runs the reads on the queue that TestEngineCalls left: a
// done, b pending, c leased.
func checkReads(t *testing.T, e *Engine, q engine.Queue, now int64) {
	ctx := context.Background()
	if _, found, err := e.JobGet(ctx, "q", "nope"); err != nil || found {
		t.Errorf("get of an unknown ID: %v, %v", found, err)
	}
	page, err := e.JobList(ctx, engine.JobListParams{Queue: "q", AfterID: "a", Limit: 10})
	if err != nil || len(page) != 2 || page[0].ID != "b" || page[1].Status != "pending" {
		t.Errorf("list after a: %+v, %v", page, err)
	}
	if _, err := e.JobList(ctx, engine.JobListParams{Queue: "q", AfterID: "nope", Limit: 10}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("list after an unknown ID: %v", err)
	}
	page, err = e.JobList(ctx, engine.JobListParams{Queue: "q", Status: "done", Limit: 10})
	if err != nil || len(page) != 1 || page[0].ID != "a" {
		t.Errorf("list of done: %+v, %v", page, err)
	}
	st, err := e.QueueStats(ctx, engine.QueueStatsParams{Queue: "q", Now: now})
	if err != nil || st.Counts["pending"] != 2 || st.Claimable["pending"] != 2 || st.Counts["done"] != 1 || !st.OldestReady.Valid {
		t.Errorf("stats: %+v, %v", st, err)
	}
	if _, ok, err := e.JobNextDue(ctx, "q"); err != nil || ok {
		t.Errorf("next due: %v, %v (nothing waits)", ok, err)
	}
	acts, err := e.QueueActivity(ctx, engine.QueueActivityParams{Queue: "q", Since: 0})
	if err != nil || len(acts) == 0 {
		t.Errorf("activity: %+v, %v", acts, err)
	}
	if names, err := e.QueueNames(ctx); err != nil || len(names) != 1 || names[0] != "q" {
		t.Errorf("queue names: %v, %v", names, err)
	}
}

// TestEngineServerClock runs a worker pool's claim and finish on the
// server's clock as cycles (pool_step.sql), a single extend and a batch of
// finishes as statements of their own, and a release.
func TestEngineServerClock(t *testing.T) {
	e, _ := testEngine(t)
	ctx := context.Background()
	clock := e.ServerClock()
	q := engine.Queue{Name: "s", Clock: engine.Clock{Now: func() int64 { return clock.Now().UnixMilli() }, Server: true}}
	now := q.Clock.Now()
	if d := time.Since(time.UnixMilli(now)); d > time.Minute || d < -time.Minute {
		t.Fatalf("server clock %v off the host's by %v", now, d)
	}
	var jobs []engine.JobRow
	for _, id := range []string{"a", "b", "c", "d"} {
		jobs = append(jobs, job(id, now))
	}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	cy, err := e.JobCycle(ctx, engine.JobCycleParams{Queue: q, Owner: "w", Lease: 60_000, Max: 3})
	cs := cy.Claims
	if err != nil || len(cs) != 3 || len(cy.Settled) != 0 || len(cy.Alone) != 0 {
		t.Fatalf("pool claim: %+v, %v", cy, err)
	}
	settle := func(share engine.Sharing, fs ...engine.Fenced) []engine.Settled {
		t.Helper()
		rs, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: fs, Share: share})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	f := func(kind engine.FenceKind, c engine.ClaimRow) engine.Fenced {
		return engine.Fenced{Kind: kind, ID: c.ID, Owner: c.Owner, Token: c.Token, Lease: 120_000}
	}
	// A cycle's finish, a stale one and a release: the release is left to
	// JobSettle, the stale finish is refused and left too.
	stale := f(engine.FenceFinish, cs[0])
	stale.Token++
	results := []engine.Fenced{f(engine.FenceFinish, cs[0]), stale, engine.ReleaseFenced(cs[1].ID, "w", cs[1].Token, 0, "x")}
	cy, err = e.JobCycle(ctx, engine.JobCycleParams{Queue: q, Results: results})
	if err != nil || !cy.Settled[0].OK || cy.Settled[1].OK || cy.Settled[2].OK || !slices.Equal(cy.Alone, []int{1, 2}) || len(cy.Claims) != 0 {
		t.Errorf("pool finish: %+v, %v; want the first accepted, the others alone, no claim", cy, err)
	}
	if rs := settle(engine.ShareCalls, f(engine.FenceExtend, cs[1])); !rs[0].OK || rs[0].LeaseUntil <= cs[1].LeaseUntil {
		t.Errorf("extend: %+v", rs)
	}
	if rs := settle(engine.ShareNone, f(engine.FenceFinish, cs[1]), f(engine.FenceFinish, cs[0]), f(engine.FenceFinish, cs[1])); !rs[0].OK || rs[1].OK || rs[2].OK {
		t.Errorf("finish batch: %+v", rs)
	}
	c := cs[2]
	if rs := settle(engine.ShareCalls, engine.ReleaseFenced(c.ID, c.Owner, c.Token, 0, "back")); !rs[0].OK {
		t.Errorf("release: %+v", rs)
	}
	got, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "v", Lease: 1000, Max: 10, Share: engine.ShareCalls})
	if err != nil || len(got) != 2 || got[0].ID != "c" || got[0].Token != 2 {
		t.Errorf("claim after the release: %+v, %v", got, err)
	}
}

// TestEngineInsertTx writes jobs in a caller's transaction under the
// savepoint, which a taken ID rolls back leaving the transaction usable,
// and refuses a transaction on another database.
func TestEngineInsertTx(t *testing.T) {
	e, db := testEngine(t)
	ctx := context.Background()
	now := int64(1_000_000)
	q := fixedQueue("t", &now)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	p := engine.JobInsertTxParams{Queue: q, Jobs: []engine.JobRow{job("a", now)}}
	if bad, err := e.JobInsertTx(ctx, tx, p); err != nil || bad != -1 {
		t.Fatalf("insert tx: %d, %v", bad, err)
	}
	p.Jobs = []engine.JobRow{job("b", now), job("a", now)}
	if bad, err := e.JobInsertTx(ctx, tx, p); !errors.Is(err, engine.ErrDuplicate) || bad != 1 {
		t.Fatalf("insert tx of a taken ID: %d, %v", bad, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after the refused insert: %v", err)
	}
	if _, found, _ := e.JobGet(ctx, "t", "b"); found {
		t.Error("b was written by a refused call")
	}
	other := pgtest.DB(t)
	otx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer otx.Rollback()
	if _, err := e.JobInsertTx(ctx, otx, engine.JobInsertTxParams{Queue: q, Jobs: []engine.JobRow{job("x", now)}}); !errors.Is(err, engine.ErrInvalid) {
		t.Errorf("insert tx on another database: %v", err)
	}
}

// TestStatementIndexes: every index a statement's header names is one the
// schema creates, so that the plan tests read names that exist.
func TestStatementIndexes(t *testing.T) {
	_, db := testEngine(t)
	rows, err := db.Query("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		have[name] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range engine.Names(statements.All()) {
		for _, index := range strings.Split(statements.All()[name].Index, ", ") {
			if index != "" && !have[index] {
				t.Errorf("%s.sql relies on index %q, which the schema does not create (it has %v)", name, index, have)
			}
		}
	}
}

// TestEngineMigrateOlder: a schema of an older version is upgraded and its
// version row replaced by the current one; a newer one is refused.
func TestEngineMigrateOlder(t *testing.T) {
	e, db := testEngine(t)
	ctx := context.Background()
	if _, err := db.Exec("UPDATE leaseq_schema SET version = 4"); err != nil {
		t.Fatal(err)
	}
	e.migrated = false
	if err := e.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n, v int
	if err := db.QueryRow("SELECT count(*), max(version) FROM leaseq_schema").Scan(&n, &v); err != nil || n != 1 || v != SchemaCurrent {
		t.Fatalf("after the upgrade: %d rows, version %d, %v", n, v, err)
	}
	if _, err := db.Exec("UPDATE leaseq_schema SET version = 99"); err != nil {
		t.Fatal(err)
	}
	e.migrated = false
	if err := e.SchemaMigrate(ctx); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a newer schema: %v", err)
	}
}

// TestEngineOutcomeReads runs the reads by which a call cut short finds out
// what it did: a row's mark of each fenced call (settledRows), a batch's
// rows (written) and a transaction's fate (committed).
func TestEngineOutcomeReads(t *testing.T) {
	e, _ := testEngine(t)
	ctx := context.Background()
	now := int64(1_000_000)
	q := fixedQueue("o", &now)
	jobs := []engine.JobRow{job("a", now), job("b", now)}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.written(ctx, jobArrays(q, jobs), 1); err != nil || !ok {
		t.Errorf("written of the batch: %v, %v", ok, err)
	}
	if ok, err := e.written(ctx, jobArrays(q, []engine.JobRow{job("z", now)}), 1); err != nil || ok {
		t.Errorf("written of a job never enqueued: %v, %v", ok, err)
	}
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: 1000, Max: 2})
	if err != nil || len(cs) != 2 {
		t.Fatal(cs, err)
	}
	ext := engine.Fenced{Kind: engine.FenceExtend, ID: cs[0].ID, Owner: "w", Token: cs[0].Token, Lease: 2000}
	fin := engine.Fenced{Kind: engine.FenceFinish, ID: cs[1].ID, Owner: "w", Token: cs[1].Token}
	rs, err := e.settledRows(ctx, "o", []engine.Fenced{ext, fin})
	if err != nil || rs[0].OK || rs[1].OK {
		t.Errorf("before the calls: %+v, %v", rs, err)
	}
	now += 5
	if _, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: []engine.Fenced{ext, fin}}); err != nil {
		t.Fatal(err)
	}
	rs, err = e.settledRows(ctx, "o", []engine.Fenced{ext, fin, fin})
	if err != nil || !rs[0].OK || rs[0].LeaseUntil != now+2000 || !rs[1].OK || rs[2].OK {
		t.Errorf("after the calls: %+v, %v", rs, err)
	}
	a, err := tryTx(ctx, e, func(context.Context, engine.Execer) (int, error) { return 7, nil })
	if err != nil || a.out != 7 {
		t.Fatal(a, err)
	}
	if done, err := e.committed(ctx, a.mark, a.xid, a.start); err != nil || !done {
		t.Errorf("committed of a committed transaction: %v, %v", done, err)
	}
}

// TestEngineCycles: pools cycling at once on the server's clock, each
// cycle finishing the last one's claims and claiming again, claim and
// finish every job exactly once.
func TestEngineCycles(t *testing.T) {
	e, _ := testEngine(t)
	ctx := context.Background()
	clock := e.ServerClock()
	q := engine.Queue{Name: "p", Clock: engine.Clock{Now: func() int64 { return clock.Now().UnixMilli() }, Server: true}}
	now := q.Clock.Now()
	var jobs []engine.JobRow
	for i := range 200 {
		jobs = append(jobs, job(string(rune('A'+i/26))+string(rune('a'+i%26)), now))
	}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	var alone atomic.Int64
	for w := range 8 {
		go func() {
			n := 0
			var results []engine.Fenced
			for {
				cy, err := e.JobCycle(ctx, engine.JobCycleParams{Queue: q, Results: results, Owner: string(rune('0' + w)), Lease: 60_000, Max: 3})
				for _, r := range cy.Settled {
					if r.OK {
						n++
					}
				}
				// What the cycle left (a row another step held) is settled
				// alone, as Work does.
				for _, i := range cy.Alone {
					rs, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: results[i : i+1], Share: engine.ShareCalls})
					if err == nil && rs[0].OK {
						n++
						alone.Add(1)
					}
				}
				if err != nil || len(cy.Claims) == 0 {
					done <- n
					return
				}
				results = results[:0]
				for _, c := range cy.Claims {
					results = append(results, engine.Fenced{Kind: engine.FenceFinish, ID: c.ID, Owner: c.Owner, Token: c.Token})
				}
			}
		}()
	}
	total := 0
	for range 8 {
		total += <-done
	}
	st, err := e.QueueStats(ctx, engine.QueueStatsParams{Queue: "p", Now: q.Clock.Now()})
	if total != len(jobs) || err != nil || st.Counts["done"] != len(jobs) {
		t.Errorf("%d finishes accepted, stats %+v, %v; want %d done", total, st, err, len(jobs))
	}
	t.Logf("%d of %d finishes settled alone", alone.Load(), len(jobs))
}

// TestPoolStepCountsOnce: a pool step counts its accepted finishes once,
// by itself, and the trigger none of them; a refused finish counts
// nothing; the job its claim's sweep quarantines, and a job finished later
// in the same transaction by another statement, are counted by the
// trigger, as the setting that holds it off ends with the finishes.
func TestPoolStepCountsOnce(t *testing.T) {
	e, db := testEngine(t)
	ctx := context.Background()
	clock := e.ServerClock()
	q := engine.Queue{Name: "c", Clock: engine.Clock{Now: func() int64 { return clock.Now().UnixMilli() }, Server: true}}
	now := q.Clock.Now()
	last := job("x", now)
	last.MaxAttempts = 1
	jobs := []engine.JobRow{job("a", now), job("b", now), job("c", now), job("d", now), last}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: 60_000, Max: 3})
	if err != nil || len(cs) != 3 {
		t.Fatalf("claim: %+v, %v", cs, err)
	}
	// x's lease ended with its one attempt spent: the step's sweep
	// quarantines it.
	if _, err := db.Exec(`UPDATE leaseq_jobs SET status = 'leased', owner = 'v', token = 1, attempts = 1, lease_until = 0 WHERE id = 'x'`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ids, owners, tokens := []string{cs[0].ID, cs[1].ID, cs[2].ID}, []string{"w", "w", "w"}, []int64{cs[0].Token, cs[1].Token, cs[2].Token + 1}
	rows, err := tx.QueryContext(ctx, stmt("pool_step"), "c", ids, owners, tokens, []string{"w"}, []int64{60_000}, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	var finished, claimed int
	for rows.Next() {
		var req int
		var seq int64
		var id, owner string
		var qty, token int64
		var payload []byte
		var attempts, priority, maxAttempts int
		var leaseUntil, deadline, created, runAt sql.NullInt64
		var kind string
		if err := rows.Scan(&req, &seq, &id, &owner, &qty, &payload, &token, &attempts, &leaseUntil, &deadline, &priority, &kind, &created, &runAt, &maxAttempts); err != nil {
			t.Fatal(err)
		}
		if req == 0 {
			finished++
		} else {
			claimed++
		}
	}
	if err := rows.Err(); err != nil || finished != 2 || claimed != 1 {
		t.Fatalf("step: %d finished, %d claimed, %v; want 2 and 1 (the third finish has a stale token)", finished, claimed, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE leaseq_jobs SET status = 'done' WHERE id = $1`, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	const counts = "SELECT status, sum(n) FROM leaseq_counts GROUP BY status ORDER BY status"
	const rowsByStatus = "SELECT status, count(*) AS sum FROM leaseq_jobs WHERE status IN ('done', 'quarantined') GROUP BY status ORDER BY status"
	want := "status=done sum=3\nstatus=quarantined sum=1\n"
	if got, rows := dump(t, db, counts), dump(t, db, rowsByStatus); got != want || rows != want {
		t.Fatalf("counts %q, rows %q; want both %q", got, rows, want)
	}
}
