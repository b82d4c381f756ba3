package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: testdata/schema-v1.db is a SQLite file of schema 1; there is
// no earlier PostgreSQL schema to upgrade from.

// Rule 13 in docs/rules.md: a database written by an earlier
// version opens with New, upgraded in one transaction that keeps every row,
// token and attempt count. testdata/schema-v1.db was written by the version
// with schema 1; testdata/README.md lists what it holds.

// v1Columns selects every column version 1 had, in its order. Version 2 has
// them all, so the same query reads a row before and after the upgrade.
const v1Columns = `SELECT seq, id, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, reason, created_at, updated_at FROM leaseq_jobs ORDER BY seq`

// v3Columns selects every column versions 2 and 3 had, in their order.
const v3Columns = `SELECT seq, queue, id, qty, payload, status, owner, token, attempts, max_attempts,
	lease_until, deadline, reason, run_at, priority, due_at, ready, created_at, updated_at FROM leaseq_jobs ORDER BY seq`

// schemaOf selects the database's schema, for showing that nothing changed.
const schemaOf = `SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name`

// copyV1 copies the version-1 database into a directory of the test's own
// and returns the copy's path.
func copyV1(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schema-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawDB opens path with a plain DSN, as a tool outside leaseq would, so the
// test can read a file before any leaseq code touched it.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// userVersion reads PRAGMA user_version.
func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// v1Rows is every row of testdata/schema-v1.db as testdata/README.md
// describes it, written out by hand: the expectation does not come from the
// file it checks. The manual clock stood at t0; v1-done was claimed by
// worker-a (token 1), that lease expired, worker-b claimed it (token 2)
// at 1 s and finished it.
var v1Rows = []leaseq.State{
	{ID: "v1-done", Qty: 1, Payload: []byte("done"), Status: leaseq.StatusDone, Owner: "worker-b", Token: 2,
		Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000), EnqueuedAt: ms(0), UpdatedAt: ms(1000)},
	{ID: "v1-quarantined", Qty: 2, Status: leaseq.StatusQuarantined, Owner: "worker-a", Token: 1,
		Attempts: 1, MaxAttempts: 1, LeaseUntil: ms(1000), EnqueuedAt: ms(0), UpdatedAt: ms(1000),
		Reason: "max attempts reached: 1 of 1, last lease ended at 1767225601000 (unix ms)"},
	{ID: "v1-leased", Qty: 3, Payload: []byte{0, 1, 2}, Status: leaseq.StatusLeased, Owner: "worker-c", Token: 1,
		Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(11_000), Deadline: ms(3_600_000), EnqueuedAt: ms(0), UpdatedAt: ms(1000)},
	{ID: "v1-pending", Qty: 4, Status: leaseq.StatusPending, MaxAttempts: 5, EnqueuedAt: ms(0), UpdatedAt: ms(0)},
}

// upgradedFixture copies the version-1 database, reads it raw, opens it
// with New and checks that every version-1 column of every row is as it
// was, the rows are in the queue "default", and the version is now
// SchemaVersion.
func upgradedFixture(t *testing.T) *fixture {
	t.Helper()
	path := copyV1(t)
	raw := rawDB(t, path)
	if v := userVersion(t, raw); v != 1 {
		t.Fatalf("testdata/schema-v1.db has user_version %d, want 1", v)
	}
	before := dumpQuery(t, raw, v1Columns)
	f := openFixture(t, sqliteEngine, path, leaseq.Options{})
	if after := dumpQuery(t, raw, v1Columns); after != before {
		t.Fatalf("the upgrade changed the version-1 columns:\n got\n%s want\n%s", after, before)
	}
	if v := userVersion(t, raw); v != leaseq.SchemaVersion {
		t.Fatalf("user_version after New: %d, want %d", v, leaseq.SchemaVersion)
	}
	if got := dumpQuery(t, raw, "SELECT DISTINCT queue FROM leaseq_jobs"); !strings.HasSuffix(got, "\n  queue=default\n") {
		t.Fatalf("queues after the upgrade:\n%s want only default", got)
	}
	for _, want := range v1Rows {
		f.wantRow(want)
	}
	if got := listIDs(t, f.q, leaseq.Filter{}); !slices.Equal(got, []string{"v1-done", "v1-quarantined", "v1-leased", "v1-pending"}) {
		t.Fatalf("List after the upgrade: %v, want the four version-1 jobs in their order", got)
	}
	return f
}

// TestUpgradeFromV1: every row survives the upgrade unchanged; the fence
// still refuses the claims that were stale before it and accepts the live
// one until its lease end; the upgraded jobs are claimed, purged and
// enqueued again like any others.
func TestUpgradeFromV1(t *testing.T) {
	staleDone := leaseq.Claim{ID: "v1-done", Owner: "worker-a", Token: 1, Attempt: 1, LeaseUntil: ms(1000)}
	finishedDone := leaseq.Claim{ID: "v1-done", Owner: "worker-b", Token: 2, Attempt: 2, LeaseUntil: ms(2000)}
	live := leaseq.Claim{ID: "v1-leased", Qty: 3, Payload: []byte{0, 1, 2}, Owner: "worker-c", Token: 1, Attempt: 1,
		LeaseUntil: ms(11_000), Deadline: ms(3_600_000)}
	t.Run("stale claims refused", func(t *testing.T) {
		f := upgradedFixture(t)
		f.at(1500).refusedEverywhere(f.q, staleDone, "worker-a's claim from before the upgrade")
		f.refusedEverywhere(f.q, finishedDone, "worker-b's claim of a job it finished before the upgrade")
		quarantined := leaseq.Claim{ID: "v1-quarantined", Owner: "worker-a", Token: 1}
		f.refusedEverywhere(f.q, quarantined, "claim of a job quarantined before the upgrade")
	})
	t.Run("live lease finished 1 ms before its end", func(t *testing.T) {
		f := upgradedFixture(t)
		if !f.at(10_999).finish(live) {
			t.Fatalf("Finish of worker-c's live lease at 10.999 s: refused; rows:\n%s", f.dump())
		}
		want := v1Rows[2]
		want.Status, want.UpdatedAt = leaseq.StatusDone, ms(10_999)
		f.wantRow(want)
	})
	t.Run("live lease extended and released", func(t *testing.T) {
		f := upgradedFixture(t)
		e := f.at(10_999).extend(live, time.Second)
		if !e.LeaseUntil.Equal(ms(11_999)) {
			t.Fatalf("Extend at 10.999 s by 1 s: lease until %s, want +11999ms", relMS(e.LeaseUntil))
		}
		f.at(11_500).release(e, 0, "after the upgrade")
		wantClaim(t, f.mustClaim("B", time.Second), "v1-pending", 1, 1, ms(12_500)) // due since 0
		wantClaim(t, f.mustClaim("B", time.Second), "v1-leased", 2, 2, ms(12_500))
	})
	t.Run("claims after the upgrade", func(t *testing.T) {
		f := upgradedFixture(t)
		// At 0 only v1-pending is claimable; v1-leased's lease is live.
		wantClaim(t, f.mustClaim("B", time.Hour), "v1-pending", 1, 1, ms(3_600_000))
		f.at(10_999).nothingClaimable("worker-c's lease is live until 11 s")
		f.at(11_000).refusedEverywhere(f.q, live, "worker-c's lease ended at 11 s")
		wantClaim(t, f.mustClaim("B", time.Second), "v1-leased", 2, 2, ms(12_000))
		if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "v1-done"}); !errors.Is(err, leaseq.ErrDuplicate) {
			t.Fatalf("Enqueue of an upgraded ID: %v, want ErrDuplicate", err)
		}
		// The upgraded done job purges with its token remembered.
		if n := f.purge(ms(11_000)); n != 1 {
			t.Fatalf("Purge of the upgraded done job: %d, want 1", n)
		}
		f.enqueue(leaseq.Job{ID: "v1-done", Priority: 5})
		wantClaim(t, f.mustClaim("B", time.Second), "v1-done", 3, 1, ms(12_000))
		f.refusedEverywhere(f.q, finishedDone, "worker-b's claim from before the upgrade and the purge")
	})
	t.Run("other queue names see none of the upgraded jobs", func(t *testing.T) {
		f := upgradedFixture(t)
		other := f.queue("other")
		if got := listIDs(t, other, leaseq.Filter{}); len(got) != 0 {
			t.Fatalf("queue other after the upgrade lists %v, want nothing", got)
		}
	})
}

// TestUpgradeFailureKeepsV1: an upgrade that fails part way leaves version 1
// whole — its rows, its indexes, its version. The failure is induced by a
// table that takes the name the upgrade sets the old table aside under;
// by then the upgrade has already dropped the old indexes, which must come
// back with the rollback.
func TestUpgradeFailureKeepsV1(t *testing.T) {
	path := copyV1(t)
	raw := rawDB(t, path)
	if _, err := raw.Exec("CREATE TABLE leaseq_jobs_v1 (x)"); err != nil {
		t.Fatal(err)
	}
	rows, schema := dumpQuery(t, raw, v1Columns), dumpQuery(t, raw, schemaOf)
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if q, err := leaseq.New(context.Background(), db, leaseq.Options{}); err == nil {
		q.Close()
		t.Fatal("New succeeded although the upgrade could not set the old table aside")
	}
	if v := userVersion(t, raw); v != 1 {
		t.Fatalf("user_version after the failed upgrade: %d, want 1", v)
	}
	if got := dumpQuery(t, raw, v1Columns); got != rows {
		t.Fatalf("rows after the failed upgrade:\n%s want\n%s", got, rows)
	}
	if got := dumpQuery(t, raw, schemaOf); got != schema {
		t.Fatalf("schema after the failed upgrade:\n%s want\n%s", got, schema)
	}
	// Once the obstacle is gone the upgrade goes through.
	if _, err := raw.Exec("DROP TABLE leaseq_jobs_v1"); err != nil {
		t.Fatal(err)
	}
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Clock: leaseq.NewManualClock(t0)})
	if err != nil {
		t.Fatalf("New after the obstacle was removed: %v", err)
	}
	defer q.Close()
	if got := dumpQuery(t, raw, v1Columns); got != rows {
		t.Fatalf("rows after the upgrade:\n%s want\n%s", got, rows)
	}
}

// TestUpgradeNewerVersionRefused: a database of a later schema version is
// ErrInvalid, and New writes nothing to it.
func TestUpgradeNewerVersionRefused(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	later := leaseq.SchemaVersion + 1
	if _, err := f.db.Exec(fmt.Sprintf("PRAGMA user_version = %d", later)); err != nil {
		t.Fatal(err)
	}
	before, schema := f.snapshot(), dumpQuery(t, f.db, schemaOf)
	q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: "later"})
	if q != nil {
		t.Fatalf("New on schema version %d returned a queue", later)
	}
	wantErrSays(t, err, leaseq.ErrInvalid, fmt.Sprint(later))
	f.unchanged(before, "New on a newer schema")
	if got := dumpQuery(t, f.db, schemaOf); got != schema || userVersion(t, f.db) != later {
		t.Fatalf("schema after the refused New:\n%s want\n%s", got, schema)
	}
}

// TestUpgradeTwoProcesses: two OS processes call New on the same version-1
// file at once, and both succeed (rule 13). The parent holds the write lock
// until both children have the file open, so that both are at their
// upgrade when it lets go; then each claims one of the two claimable jobs
// with its clock at 20 s.
func TestUpgradeTwoProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to see when a child has the database open")
	}
	path := copyV1(t)
	raw := rawDB(t, path)
	rows := dumpQuery(t, raw, v1Columns)
	lock := (&fixture{t: t, ctx: context.Background(), path: path}).lockFromOutside()
	kids := []*procChild{startProcChild(t, path, "P1", ms(20_000)), startProcChild(t, path, "P2", ms(20_000))}
	for _, k := range kids {
		waitUntil(t, procWait, k.name+" to open the database", func() bool { return hasOpen(k.cmd.Process.Pid, path) })
	}
	lock()
	for _, k := range kids {
		if r := k.next(t, "ready"); r.Err != "" {
			t.Fatalf("child %s: New on the version-1 file: %s", k.name, r.Err)
		}
	}
	if v := userVersion(t, raw); v != leaseq.SchemaVersion {
		t.Fatalf("user_version after both upgrades: %d, want %d", v, leaseq.SchemaVersion)
	}
	if got := dumpQuery(t, raw, v1Columns); got != rows {
		t.Fatalf("rows after two concurrent upgrades:\n%s want\n%s", got, rows)
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.stdin, "claim\n"); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]int64{}
	for _, k := range kids {
		r := k.next(t, "claim")
		if r.Err != "" || !r.Claimed {
			t.Fatalf("child %s: claim after the upgrade: %+v", k.name, r)
		}
		got[r.ID] = r.Token
	}
	if len(got) != 2 || got["v1-pending"] != 1 || got["v1-leased"] != 2 {
		t.Fatalf("claims of the two children: %v, want v1-pending token 1 and v1-leased token 2", got)
	}
	for _, k := range kids {
		k.stop(t)
	}
}

// hasOpen reports whether process pid has the file at path open.
func hasOpen(pid int, path string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestUpgradeFromV2: testdata/schema-v2.db, written by the version-2 code
// (see testdata/README.md), opens with every row as it was, and its done
// and quarantined jobs are counted in leaseq_counts from then on: Stats
// after the upgrade, and after a Finish and a purge, agree with the rows.
func TestUpgradeFromV2(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "schema-v2.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v2.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if v := userVersion(t, raw); v != 2 {
		t.Fatalf("testdata/schema-v2.db has user_version %d, want 2", v)
	}
	rows := dumpQuery(t, raw, v3Columns)
	f := openFixture(t, sqliteEngine, path, leaseq.Options{Clock: leaseq.NewManualClock(time.Date(2026, 6, 1, 0, 0, 1, 0, time.UTC))})
	if v := userVersion(t, raw); v != leaseq.SchemaVersion {
		t.Fatalf("user_version after New: %d, want %d", v, leaseq.SchemaVersion)
	}
	if got := dumpQuery(t, raw, v3Columns); got != rows {
		t.Fatalf("the upgrade changed rows:\n got\n%s want\n%s", got, rows)
	}
	mail := f.queue("mail")
	for _, tc := range []struct {
		q    *leaseq.Queue
		want string
	}{{f.q, "pending 1, scheduled 1, leased 1, expired 0, done 2, quarantined 1"},
		{mail, "pending 1, scheduled 1, leased 1, expired 0, done 2, quarantined 1"}} {
		st, err := tc.q.Stats(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := statsCounts(st); got != tc.want {
			t.Fatalf("Stats of %s after the upgrade: %s, want %s", tc.q.Name(), got, tc.want)
		}
	}
	c := f.mustClaim("worker-b", time.Minute) // default-leased, the one pending job claimable
	if !f.finish(c) {
		t.Fatalf("Finish of %s refused", c.ID)
	}
	if n := f.purge(time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC), leaseq.StatusQuarantined); n != 1 {
		t.Fatalf("Purge of the quarantined job: %d", n)
	}
	st, err := f.q.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statsCounts(st), "pending 0, scheduled 1, leased 1, expired 0, done 3, quarantined 0"; got != want {
		t.Fatalf("Stats after a Finish and a purge: %s, want %s", got, want)
	}
}

// statsCounts prints the counts of st.
func statsCounts(st leaseq.Stats) string {
	return fmt.Sprintf("pending %d, scheduled %d, leased %d, expired %d, done %d, quarantined %d",
		st.Pending, st.Scheduled, st.Leased, st.Expired, st.Done, st.Quarantined)
}
