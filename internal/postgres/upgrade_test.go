package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/leaseq/leaseq/internal/engine"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// v5Columns selects every column of schema version 5, in its order.
const v5Columns = `SELECT seq, queue, id, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, reason, run_at, priority, due_at, ready, created_at, updated_at FROM leaseq_jobs ORDER BY seq`

// oldSchema creates on db the schema of version v as testdata's
// schema-v<v>.sql (that version's script, kept as it was) creates it, with
// its version row.
func oldSchema(t *testing.T, db *sql.DB, v int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("schema-v%d.sql", v)))
	if err != nil {
		t.Fatal(err)
	}
	stmts := append([]string{stmt("schema_table")}, SplitSQL(string(b))...)
	for _, s := range append(stmts, fmt.Sprintf("INSERT INTO leaseq_schema (version) VALUES (%d)", v)) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("the version-%d script: %v\n%s", v, err, s)
		}
	}
}

// v5Database fills db with the schema of version 5, as testdata/schema-v5.sql
// (the script of that version, kept as it was) creates it, and a done, a
// leased and a pending job of queue q written by that version's claim.
func v5Database(t *testing.T, db *sql.DB) {
	t.Helper()
	oldSchema(t, db, 5)
	for _, s := range []string{
		`INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, run_at, priority, due_at, ready, created_at, updated_at)
		 VALUES ('q', 'done', 1, 'd', 'pending', 3, NULL, 0, 1000, 1, 1000, 1000),
		        ('q', 'leased', 2, '', 'pending', 3, NULL, 5, 1000, 1, 1000, 1000),
		        ('q', 'pending', 3, '', 'pending', 3, 1500, 0, 1500, 0, 1000, 1000)`,
		// The version-5 claim function returns the version-5 columns.
		"SELECT * FROM leaseq_claim('q', 'w', 1200, 10000, 2)",
		"UPDATE leaseq_jobs SET status = 'done' WHERE id = 'done'",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestEngineMigrateFromV5: a database of schema version 5 is upgraded to 6
// (rule 50: the kind) by two engines on two pools at once, as by two hosts
// starting together: both succeed, every version-5 column of every row is
// as it was, the old jobs have no kind, and the claim functions of version
// 6 (one claim alone, and a worker pool's step) answer with the kind, the
// enqueue time and run_at.
func TestEngineMigrateFromV5(t *testing.T) {
	url := pgtest.URL(t)
	db := openURL(t, url)
	v5Database(t, db)
	before := dump(t, db, v5Columns)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		other := openURL(t, url)
		e := New(other)
		t.Cleanup(e.Release)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = e.SchemaMigrate(context.Background()) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migration %d from version 5: %v", i, err)
		}
	}
	e := New(db)
	t.Cleanup(e.Release)
	ctx := context.Background()
	if v, err := e.SchemaVersion(ctx); err != nil || v != SchemaCurrent {
		t.Fatalf("version after the upgrade: %d, %v; want %d", v, err, SchemaCurrent)
	}
	if after := dump(t, db, v5Columns); after != before {
		t.Fatalf("the upgrade changed rows:\n got\n%s want\n%s", after, before)
	}
	if got := dump(t, db, "SELECT DISTINCT kind FROM leaseq_jobs"); got != "kind=\n" {
		t.Fatalf("kinds after the upgrade: %q, want only ''", got)
	}
	now := int64(20_000)
	q := fixedQueue("q", &now)
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{kindJob("k1", now, "mail")}, One: true}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w2", Lease: 1000, Max: 3})
	if err != nil || len(cs) != 3 {
		t.Fatalf("claim after the upgrade: %+v, %v", cs, err)
	}
	want := []engine.ClaimRow{{ID: "leased", Token: 2, Created: 1000}, {ID: "pending", Token: 1, Created: 1000, RunAt: sql.NullInt64{Int64: 1500, Valid: true}},
		{ID: "k1", Token: 1, Created: 20_000, Kind: "mail"}}
	for i, w := range want {
		if c := cs[i]; c.ID != w.ID || c.Token != w.Token || c.Created != w.Created || c.RunAt != w.RunAt || c.Kind != w.Kind {
			t.Errorf("claim %d after the upgrade: %+v, want %+v", i, c, w)
		}
	}
	server := engine.Queue{Name: "s", Clock: engine.Clock{Now: func() int64 { return 0 }, Server: true}}
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: server, Jobs: []engine.JobRow{kindJob("k2", 0, "sms"), kindJob("k3", 0, "")}}); err != nil {
		t.Fatal(err)
	}
	cy, err := e.JobCycle(ctx, engine.JobCycleParams{Queue: server, Owner: "pool", Lease: 60_000, Max: 2})
	cs = cy.Claims
	if err != nil || len(cs) != 2 || cs[0].Kind != "sms" || cs[1].Kind != "" || cs[0].Created == 0 {
		t.Fatalf("a pool step's claim after the upgrade: %+v, %v; want k2 (sms) and k3", cs, err)
	}
}

// TestEngineMigrateFromV6: a database of schema version 6, as
// testdata/schema-v6.sql (that version's script, kept as it was) creates
// it, is upgraded to the current version by two engines at once. Every row is as it was, the
// trigger leaseq_purged_token is version 7's (no planner settings of its
// own), and it still keeps the fence: an ID purged under version 6 and
// enqueued again continues the remembered token (rule 21).
func TestEngineMigrateFromV6(t *testing.T) {
	url := pgtest.URL(t)
	db := openURL(t, url)
	oldSchema(t, db, 6)
	for _, s := range []string{
		`INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, run_at, priority, due_at, ready, created_at, updated_at, kind)
		 VALUES ('q', 'old', 1, 'd', 'pending', 3, NULL, 0, 1000, 1, 1000, 1000, 'mail')`,
		"INSERT INTO leaseq_purged (queue, id, token) VALUES ('q', 'gone', 5)"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("the version-6 database: %v\n%s", err, s)
		}
	}
	const all = "SELECT * FROM leaseq_jobs ORDER BY seq"
	before := dump(t, db, all)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		e := New(openURL(t, url))
		t.Cleanup(e.Release)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = e.SchemaMigrate(context.Background()) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migration %d from version 6: %v", i, err)
		}
	}
	e := New(db)
	t.Cleanup(e.Release)
	ctx := context.Background()
	if v, err := e.SchemaVersion(ctx); err != nil || v != SchemaCurrent {
		t.Fatalf("version after the upgrade: %d, %v; want %d", v, err, SchemaCurrent)
	}
	if after := dump(t, db, all); after != before {
		t.Fatalf("the upgrade changed rows:\n got\n%s want\n%s", after, before)
	}
	if got := dump(t, db, "SELECT proconfig FROM pg_proc WHERE proname = 'leaseq_purged_token'"); got != "proconfig=NULL\n" {
		t.Fatalf("leaseq_purged_token after the upgrade: %q; want no settings of its own", got)
	}
	now := int64(20_000)
	q := fixedQueue("q", &now)
	if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{job("gone", now)}, One: true}); err != nil {
		t.Fatal(err)
	}
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: 1000, Max: 2})
	if err != nil || len(cs) != 2 || cs[0].ID != "old" || cs[0].Token != 1 || cs[1].ID != "gone" || cs[1].Token != 6 {
		t.Fatalf("claims after the upgrade: %+v, %v; want old with token 1, gone with token 6 (after the purged 5)", cs, err)
	}
}

// TestEngineMigrateFromV7: a database of schema version 7, as
// testdata/schema-v7.sql (that version's script, kept as it was) creates
// it, is upgraded: its rows stay as they were, leaseq_sweep gets version
// 8's enable_seqscan = off (kept since), and a claim, which sweeps, still
// works.
func TestEngineMigrateFromV7(t *testing.T) {
	url := pgtest.URL(t)
	db := openURL(t, url)
	oldSchema(t, db, 7)
	if _, err := db.Exec(`INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, run_at, priority, due_at, ready, created_at, updated_at)
		VALUES ('q', 'later', 1, 'd', 'pending', 3, 5000, 0, 5000, 0, 1000, 1000)`); err != nil {
		t.Fatal(err)
	}
	const all = "SELECT * FROM leaseq_jobs ORDER BY seq"
	before := dump(t, db, all)
	e := upgraded(t, db, 7)
	ctx := context.Background()
	if after := dump(t, db, all); after != before {
		t.Fatalf("the upgrade changed rows:\n got\n%s want\n%s", after, before)
	}
	want := "proconfig={plan_cache_mode=force_generic_plan,enable_seqscan=off}\n"
	if got := dump(t, db, "SELECT proconfig FROM pg_proc WHERE proname = 'leaseq_sweep'"); got != want {
		t.Fatalf("leaseq_sweep's settings after the upgrade: %q; want %q", got, want)
	}
	now := int64(6000) // 'later' came due at 5000: the claim's sweep promotes it
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: fixedQueue("q", &now), Owner: "w", Lease: 1000, Max: 1})
	if err != nil || len(cs) != 1 || cs[0].ID != "later" {
		t.Fatalf("claim after the upgrade: %+v, %v; want the job that came due", cs, err)
	}
}

// TestEngineMigrateFromV8: a database of schema version 8 with jobs done
// and counted by the trigger row by row is upgraded: its rows and counts
// stay as they were, the trigger gets version 9's leaseq.counted condition,
// and a pool step's finishes on it are counted once each, by the step.
func TestEngineMigrateFromV8(t *testing.T) {
	url := pgtest.URL(t)
	db := openURL(t, url)
	oldSchema(t, db, 8)
	if _, err := db.Exec(`INSERT INTO leaseq_jobs (queue, id, qty, payload, status, owner, token, attempts, max_attempts, lease_until, due_at, ready, created_at, updated_at)
		VALUES ('s', 'a', 1, 'd', 'leased', 'w', 1, 1, 3, 9000000000000, 0, 0, 0, 0),
		       ('s', 'b', 1, 'd', 'leased', 'w', 1, 1, 3, 9000000000000, 0, 0, 0, 0),
		       ('s', 'c', 1, 'd', 'leased', 'w', 1, 1, 3, 9000000000000, 0, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE leaseq_jobs SET status = 'done' WHERE id = 'a'`); err != nil { // counted by version 8's trigger
		t.Fatal(err)
	}
	const all = "SELECT * FROM leaseq_jobs ORDER BY seq"
	const counts = "SELECT status, sum(n) FROM leaseq_counts GROUP BY status ORDER BY status"
	before, countsBefore := dump(t, db, all), dump(t, db, counts)
	e := upgraded(t, db, 8)
	ctx := context.Background()
	if after, countsAfter := dump(t, db, all), dump(t, db, counts); after != before || countsAfter != countsBefore {
		t.Fatalf("the upgrade changed rows or counts:\n got\n%s%s want\n%s%s", after, countsAfter, before, countsBefore)
	}
	if got := dump(t, db, "SELECT pg_get_triggerdef(oid) LIKE '%leaseq.counted%' AS counted FROM pg_trigger WHERE tgname = 'leaseq_counts_update'"); got != "counted=true\n" {
		t.Fatalf("leaseq_counts_update after the upgrade: %q; want version 9's condition", got)
	}
	server := engine.Queue{Name: "s", Clock: engine.Clock{Now: func() int64 { return 0 }, Server: true}}
	cy, err := e.JobCycle(ctx, engine.JobCycleParams{Queue: server, Owner: "w", Lease: 1000, Results: []engine.Fenced{
		{Kind: engine.FenceFinish, ID: "b", Owner: "w", Token: 1}, {Kind: engine.FenceFinish, ID: "c", Owner: "w", Token: 1}}})
	if err != nil || !cy.Settled[0].OK || !cy.Settled[1].OK {
		t.Fatalf("pool step after the upgrade: %+v, %v; want both finishes accepted", cy, err)
	}
	if got := dump(t, db, counts); got != "status=done sum=3\n" {
		t.Fatalf("counts after the step: %q; want 3 done", got)
	}
}

// upgraded migrates db, of schema version from, to SchemaCurrent with an
// Engine released when t ends, and returns the Engine.
func upgraded(t *testing.T, db *sql.DB, from int) *Engine {
	t.Helper()
	e := New(db)
	t.Cleanup(e.Release)
	ctx := context.Background()
	if err := e.SchemaMigrate(ctx); err != nil {
		t.Fatalf("migration from version %d: %v", from, err)
	}
	if v, err := e.SchemaVersion(ctx); err != nil || v != SchemaCurrent {
		t.Fatalf("version after the upgrade: %d, %v; want %d", v, err, SchemaCurrent)
	}
	return e
}

// openURL opens the database at url, closed when t ends.
func openURL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fmtVal prints a scanned value: NULL, bytes as a quoted string.
func fmtVal(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprint(v)
}

// kindJob is job with a kind.
func kindJob(id string, now int64, kind string) engine.JobRow {
	j := job(id, now)
	j.Kind = kind
	return j
}

// dump prints every row of query, one line each.
func dump(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, c := range cols {
			out += c + "=" + fmtVal(vals[i]) + " "
		}
		out = out[:len(out)-1] + "\n"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
