// Rule numbers in the comments of the tests are those of docs/rules.md.

package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// t0 is the instant every test's ManualClock starts at: the "0ms" of the
// timeline at the top of README.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ms is the instant t0 + n milliseconds.
func ms(n int64) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// fixture is one queue on a fresh database of an engine with a manual
// clock.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	e     testEngine
	path  string // where the database is: its file on SQLite, its URL on PostgreSQL
	db    *sql.DB
	clock *leaseq.ManualClock
	q     *leaseq.Queue
}

// newFixture opens a queue on a fresh database of engine e at t0.
func newFixture(t *testing.T, e testEngine, opts leaseq.Options) *fixture {
	t.Helper()
	return openFixture(t, e, e.fresh(t), opts)
}

// openFixture opens a queue on the database of engine e at path, which may
// exist already, with a manual clock at t0 unless opts has a clock.
func openFixture(t *testing.T, e testEngine, path string, opts leaseq.Options) *fixture {
	t.Helper()
	db := e.open(t, path)
	f := &fixture{t: t, ctx: context.Background(), e: e, path: path, db: db, clock: leaseq.NewManualClock(t0)}
	if opts.Clock == nil {
		opts.Clock = f.clock
	}
	var err error
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
// both. A want with Queue "" means the fixture's queue. A want that leaves
// both EnqueuedAt and UpdatedAt zero does not check those two (no stored row
// has a zero time, so zero can only mean "not said"); tests written before
// the columns existed rely on that, new ones should give both.
func (f *fixture) wantRow(want leaseq.State) {
	f.t.Helper()
	if want.Queue == "" {
		want.Queue = f.q.Name()
	}
	got := f.get(want.ID)
	format := fmtState
	if !want.EnqueuedAt.IsZero() || !want.UpdatedAt.IsZero() {
		format = fmtRow
	}
	if format(got) != format(want) {
		f.t.Fatalf("row %q:\n got  %s\n want %s", want.ID, fmtRow(got), fmtRow(want))
	}
}

// fmtState prints a row with times as milliseconds after t0, so failures
// read like README's timeline. It prints every field of State but the two
// bookkeeping times (see fmtRow), so that a model of the queue that does not
// track them can be compared with it. A Queue of "" prints as the default
// name, which is what "" means everywhere in the API.
func fmtState(s leaseq.State) string {
	if s.Queue == "" {
		s.Queue = leaseq.DefaultName
	}
	return fmt.Sprintf("{queue=%q status=%s owner=%q token=%d attempts=%d/%d lease_until=%s deadline=%s run_at=%s priority=%d qty=%d payload=%q reason=%q kind=%q}",
		s.Queue, s.Status, s.Owner, s.Token, s.Attempts, s.MaxAttempts, relMS(s.LeaseUntil), relMS(s.Deadline),
		relMS(s.RunAt), s.Priority, s.Qty, s.Payload, s.Reason, s.Kind)
}

// fmtRow is fmtState with the enqueue and last-change times: every field
// of State.
func fmtRow(s leaseq.State) string {
	return fmt.Sprintf("%s enqueued=%s updated=%s", fmtState(s), relMS(s.EnqueuedAt), relMS(s.UpdatedAt))
}

// relMS prints t as "+Nms" after t0, or "-" for the zero time.
func relMS(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%+dms", t.Sub(t0).Milliseconds())
}

// dump prints every row of the fixture's queue, for failure messages.
func (f *fixture) dump() string {
	rows, err := f.db.Query(f.e.rebind("SELECT id FROM leaseq_jobs WHERE queue = ?1 ORDER BY seq"), f.q.Name())
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
		out += fmt.Sprintf("  %q %s\n", id, fmtRow(s))
	}
	return out
}

// snapshot prints every column of every row of every queue, and the purged
// IDs' last tokens, so a test can show that a rejected call changed nothing
// at all — not just the row it named, and not just the columns State shows
// (due_at and ready decide what Claim takes next). It selects *, so a column
// added later is covered without a change here. This and dump are the only
// places the tests read the queue's tables directly.
func (f *fixture) snapshot() string {
	f.t.Helper()
	return snapshotDB(f.t, f.db)
}

// snapshotDB is snapshot for any database holding the queue's tables, of
// either engine: it has no placeholders.
func snapshotDB(t *testing.T, db *sql.DB) string {
	t.Helper()
	out := ""
	for _, query := range []string{
		"SELECT * FROM leaseq_jobs ORDER BY seq",
		"SELECT * FROM leaseq_purged ORDER BY queue, id",
	} {
		out += dumpQuery(t, db, query)
	}
	return out
}

// dumpQuery prints the rows of query, one line each, column by column with
// its name; a BLOB (bytea) prints quoted, NULL as NULL. A query with
// arguments is written with ?1, ?2 … and passed through the engine's
// rebind.
func dumpQuery(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	out := query + "\n"
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			t.Fatal(err)
		}
		line := " "
		for i, c := range cols {
			switch x := v[i].(type) {
			case nil:
				line += fmt.Sprintf(" %s=NULL", c)
			case []byte:
				line += fmt.Sprintf(" %s=%q", c, x)
			default:
				line += fmt.Sprintf(" %s=%v", c, x)
			}
		}
		out += line + "\n"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
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

// queue opens another Queue named name on the fixture's database and clock,
// closed when the test ends.
func (f *fixture) queue(name string) *leaseq.Queue {
	f.t.Helper()
	q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: name, Clock: f.clock})
	if err != nil {
		f.t.Fatalf("New(Name %q): %v", name, err)
	}
	f.t.Cleanup(func() { q.Close() })
	return q
}

// fencedCall is one of the calls that change a claimed job and are fenced
// like Finish (rules 3 and 17–19 in docs/rules.md), reduced to its
// answer.
type fencedCall struct {
	name string
	call func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error)
}

// fencedCalls are Finish, Extend, ExtendBatch (of the one claim), Release,
// Fail and Snooze with ordinary arguments.
// Extend and ExtendBatch must also hand back the claim they were given when
// they refuse; the check is here so every test of the fence makes it.
var fencedCalls = []fencedCall{
	{"Finish", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		return q.Finish(ctx, c)
	}},
	{"Extend", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		got, ok, err := q.Extend(ctx, c, 5*time.Second)
		if !ok && fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c) {
			return ok, fmt.Errorf("refused Extend returned %+v, want the claim unchanged %+v", got, c)
		}
		return ok, err
	}},
	{"ExtendBatch", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		got, oks, err := q.ExtendBatch(ctx, []leaseq.Claim{c}, 5*time.Second)
		if err != nil {
			return false, err
		}
		if !oks[0] && fmt.Sprintf("%+v", got[0]) != fmt.Sprintf("%+v", c) {
			return false, fmt.Errorf("refused ExtendBatch returned %+v, want the claim unchanged %+v", got[0], c)
		}
		return oks[0], nil
	}},
	{"Release", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		return q.Release(ctx, c, 0, "released by the test")
	}},
	{"Fail", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		return q.Fail(ctx, c, "failed by the test")
	}},
	{"Snooze", func(ctx context.Context, q *leaseq.Queue, c leaseq.Claim) (bool, error) {
		return q.Snooze(ctx, c, 0, "snoozed by the test")
	}},
}

// refusedEverywhere calls every fenced call with c on q at the fixture's
// clock and fails the test unless each returns false with a nil error and
// leaves the whole database as it was.
func (f *fixture) refusedEverywhere(q *leaseq.Queue, c leaseq.Claim, why string) {
	f.t.Helper()
	before := f.snapshot()
	for _, fc := range fencedCalls {
		ok, err := fc.call(f.ctx, q, c)
		if ok || err != nil {
			f.t.Fatalf("%s (%s) at %s: got %v, %v; want false, nil; rows:\n%s",
				fc.name, why, relMS(f.clock.Now()), ok, err, f.dump())
		}
		f.unchanged(before, fmt.Sprintf("refused %s (%s)", fc.name, why))
	}
}

// fmtStats prints Stats with OldestReady as milliseconds after t0.
func fmtStats(st leaseq.Stats) string {
	return fmt.Sprintf("{pending=%d scheduled=%d leased=%d expired=%d done=%d quarantined=%d oldest_ready=%s}",
		st.Pending, st.Scheduled, st.Leased, st.Expired, st.Done, st.Quarantined, relMS(st.OldestReady))
}
