package leaseq_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: testdata/schema-v3.db is a SQLite file of schema 3, written
// by the code before job kinds (rule 50); testdata/README.md lists what it
// holds. PostgreSQL's upgrade to its version 6 is in postgres_upgrade_test.go.

// v3t0 is the instant the manual clock stood at when schema-v3.db was
// written.
var v3t0 = time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)

// copyV3 copies the version-3 database into a directory of the test's own
// and returns the copy's path.
func copyV3(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "schema-v3.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v3.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpgradeFromV3: New on testdata/schema-v3.db upgrades it to version 4
// keeping every column of every row; the old jobs have no kind; the live
// lease is still fenced by its token up to its end; a job enqueued after
// the upgrade keeps its kind and is listed by it.
func TestUpgradeFromV3(t *testing.T) {
	path := copyV3(t)
	raw := rawDB(t, path)
	if v := userVersion(t, raw); v != 3 {
		t.Fatalf("testdata/schema-v3.db has user_version %d, want 3", v)
	}
	rows := dumpQuery(t, raw, v3Columns)
	clock := leaseq.NewManualClock(v3t0)
	f := openFixture(t, sqliteEngine, path, leaseq.Options{Clock: clock})
	f.clock = clock
	if v := userVersion(t, raw); v != 4 {
		t.Fatalf("user_version after New: %d, want 4", v)
	}
	if got := dumpQuery(t, raw, v3Columns); got != rows {
		t.Fatalf("the upgrade changed the version-3 columns:\n got\n%s want\n%s", got, rows)
	}
	if got := dumpQuery(t, raw, "SELECT DISTINCT kind FROM leaseq_jobs"); got != "SELECT DISTINCT kind FROM leaseq_jobs\n  kind=\n" {
		t.Fatalf("kinds after the upgrade:\n%s want only \"\"", got)
	}
	at := func(d time.Duration) time.Time { return v3t0.Add(d) }
	// Written out by hand from testdata/README.md.
	f.wantRow(leaseq.State{ID: "default-leased", Payload: []byte{0, 1, 2}, Status: leaseq.StatusLeased, Owner: "worker-a",
		Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: at(10 * time.Second), Deadline: at(time.Hour), Priority: 5,
		EnqueuedAt: at(0), UpdatedAt: at(0)})
	f.wantRow(leaseq.State{ID: "default-pending", Status: leaseq.StatusPending, MaxAttempts: 5, EnqueuedAt: at(0), UpdatedAt: at(0)})
	live := leaseq.Claim{ID: "default-leased", Payload: []byte{0, 1, 2}, Owner: "worker-a", Token: 1, Attempt: 1,
		LeaseUntil: at(10 * time.Second), Deadline: at(time.Hour), Priority: 5}
	stale := live
	stale.Owner = "worker-b"
	clock.Set(at(9999 * time.Millisecond))
	f.refusedEverywhere(f.q, stale, "another owner with the live token")
	if !f.finish(live) {
		t.Fatalf("Finish of the live lease 1 ms before its end: refused; rows:\n%s", f.dump())
	}
	c := f.mustClaim("B", time.Second)
	if c.ID != "default-pending" || c.Kind != "" || !c.EnqueuedAt.Equal(at(0)) || !c.RunAt.IsZero() {
		t.Fatalf("claim after the upgrade: %+v, want default-pending, no kind, enqueued at the file's t0", c)
	}
	f.enqueue(leaseq.Job{ID: "new", Kind: "email"})
	wantKinds(t, f, leaseq.Filter{Kind: "email"}, "new")
	if c := f.mustClaim("B", time.Second); c.ID != "new" || c.Kind != "email" {
		t.Fatalf("claim of the job enqueued after the upgrade: %+v, want new with kind email", c)
	}
	mail := f.queue("mail")
	st, err := mail.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := statsCounts(st), "pending 1, scheduled 1, leased 1, expired 0, done 2, quarantined 1"; got != want {
		t.Fatalf("Stats of mail after the upgrade: %s, want %s", got, want)
	}
}

// TestUpgradeFromV3TwoProcesses: two OS processes call New on the same
// version-3 file at once, and both succeed (rule 13). The parent holds the
// write lock until both children have the file open, so that both are at
// their upgrade when it lets go; then each claims one of the two claimable
// jobs of the default queue with its clock at 20 s: the expired lease
// (priority 5, token 2) and the pending job (token 1).
func TestUpgradeFromV3TwoProcesses(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc to see when a child has the database open")
	}
	path := copyV3(t)
	raw := rawDB(t, path)
	rows := dumpQuery(t, raw, v3Columns)
	lock := (&fixture{t: t, ctx: t.Context(), path: path}).lockFromOutside()
	now := v3t0.Add(20 * time.Second)
	kids := []*procChild{startProcChild(t, path, "P1", now), startProcChild(t, path, "P2", now)}
	for _, k := range kids {
		waitUntil(t, procWait, k.name+" to open the database", func() bool { return hasOpen(k.cmd.Process.Pid, path) })
	}
	lock()
	for _, k := range kids {
		if r := k.next(t, "ready"); r.Err != "" {
			t.Fatalf("child %s: New on the version-3 file: %s", k.name, r.Err)
		}
	}
	if v := userVersion(t, raw); v != 4 {
		t.Fatalf("user_version after both upgrades: %d, want 4", v)
	}
	if got := dumpQuery(t, raw, v3Columns); got != rows {
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
	if len(got) != 2 || got["default-leased"] != 2 || got["default-pending"] != 1 {
		t.Fatalf("claims of the two children: %v, want default-leased token 2 and default-pending token 1", got)
	}
	for _, k := range kids {
		k.stop(t)
	}
}
