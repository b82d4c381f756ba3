package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// t0 is the instant every test's ManualClock starts at: the SPEC timeline's
// "0ms".
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ms is the instant t0 + n milliseconds.
func ms(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// fixture is one queue on a fresh database file with a manual clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	path  string
	db    *sql.DB
	clock *leaseq.ManualClock
	q     *leaseq.Queue
}

// newFixture opens a queue in t.TempDir() at t0.
func newFixture(t *testing.T, opts leaseq.Options) *fixture {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.db")
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, ctx: context.Background(), path: path, db: db, clock: leaseq.NewManualClock(t0)}
	if opts.Clock == nil {
		opts.Clock = f.clock
	}
	f.q, err = leaseq.New(f.ctx, db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// at moves the clock to t0 + n ms.
func (f *fixture) at(n int64) *fixture { f.clock.Set(ms(n)); return f }

// enqueue adds j or fails the test.
func (f *fixture) enqueue(j leaseq.Job) {
	f.t.Helper()
	if err := f.q.Enqueue(f.ctx, j); err != nil {
		f.t.Fatalf("Enqueue(%+v): %v", j, err)
	}
}

// claim claims as owner with lease and fails the test on error.
func (f *fixture) claim(owner string, lease time.Duration) (leaseq.Claim, bool) {
	f.t.Helper()
	c, ok, err := f.q.Claim(f.ctx, owner, lease)
	if err != nil {
		f.t.Fatalf("Claim(%q, %v): %v", owner, lease, err)
	}
	return c, ok
}

// mustClaim claims and fails the test if nothing was claimable.
func (f *fixture) mustClaim(owner string, lease time.Duration) leaseq.Claim {
	f.t.Helper()
	c, ok := f.claim(owner, lease)
	if !ok {
		f.t.Fatalf("Claim(%q, %v) at %s: nothing claimable, want a job; rows:\n%s", owner, lease, f.clock.Now().Format(time.RFC3339Nano), f.dump())
	}
	return c
}

// finish finishes c and fails the test on error.
func (f *fixture) finish(c leaseq.Claim) bool {
	f.t.Helper()
	ok, err := f.q.Finish(f.ctx, c)
	if err != nil {
		f.t.Fatalf("Finish(%+v): %v", c, err)
	}
	return ok
}

// get returns the row of id or fails the test.
func (f *fixture) get(id string) leaseq.State {
	f.t.Helper()
	s, err := f.q.Get(f.ctx, id)
	if err != nil {
		f.t.Fatalf("Get(%q): %v", id, err)
	}
	return s
}

// wantRow fails the test unless the row of want.ID equals want, printing
// both.
func (f *fixture) wantRow(want leaseq.State) {
	f.t.Helper()
	got := f.get(want.ID)
	if fmtState(got) != fmtState(want) {
		f.t.Fatalf("row %q:\n got  %s\n want %s", want.ID, fmtState(got), fmtState(want))
	}
}

// fmtState prints a row with times as milliseconds after t0, so failures
// read like the SPEC timeline.
func fmtState(s leaseq.State) string {
	return fmt.Sprintf("{status=%s owner=%q token=%d attempts=%d/%d lease_until=%s deadline=%s qty=%d payload=%q reason=%q}",
		s.Status, s.Owner, s.Token, s.Attempts, s.MaxAttempts, relMS(s.LeaseUntil), relMS(s.Deadline), s.Qty, s.Payload, s.Reason)
}

// relMS prints t as "+Nms" after t0, or "-" for the zero time.
func relMS(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%+dms", t.Sub(t0).Milliseconds())
}

// dump prints every row of the queue, for failure messages.
func (f *fixture) dump() string {
	rows, err := f.db.Query("SELECT id FROM leaseq_jobs ORDER BY seq")
	if err != nil {
		return err.Error()
	}
	var ids []string
	for rows.Next() {
		var id string
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	out := ""
	for _, id := range ids {
		s, err := f.q.Get(f.ctx, id)
		if err != nil {
			out += fmt.Sprintf("  %q: %v\n", id, err)
			continue
		}
		out += fmt.Sprintf("  %q %s\n", id, fmtState(s))
	}
	return out
}

// snapshot prints every column of every row, so a test can show that a
// rejected call changed nothing at all, not just the row it named.
func (f *fixture) snapshot() string {
	f.t.Helper()
	rows, err := f.db.Query(`SELECT seq, id, qty, hex(payload), status, owner, token, attempts, max_attempts,
		ifnull(lease_until, 'NULL'), ifnull(deadline, 'NULL'), reason, created_at, updated_at
		FROM leaseq_jobs ORDER BY seq`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	out := ""
	for rows.Next() {
		var v [14]string
		p := make([]any, len(v))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			f.t.Fatal(err)
		}
		out += fmt.Sprintln(v)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// unchanged fails the test if the table differs from before.
func (f *fixture) unchanged(before, what string) {
	f.t.Helper()
	if after := f.snapshot(); after != before {
		f.t.Fatalf("%s changed the table:\n got\n%s want\n%s", what, after, before)
	}
}
