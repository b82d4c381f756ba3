package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
	"github.com/leaseq/leaseq/internal/postgres"
)

// TestPostgresPlans: on PostgreSQL every statement of every call is a range
// scan of an index, never a scan of leaseq_jobs, on a table shaped like a
// busy queue's — mostly done jobs, many scheduled, live leases, a few ready.
// The plans are the server's own, of the statements as the calls run them
// (the statements inside leaseq_claim included), reported by auto_explain
// as notices on the test's one connection.
func TestPostgresPlans(t *testing.T) {
	url := pgtest.URL(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	ctx := context.Background()
	clock := leaseq.NewManualClock(time.UnixMilli(1_000_000_000))
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	fillPlanShape(t, db, clock)

	// One connection, so the session's settings apply to every call.
	db.SetMaxOpenConns(1)
	for _, stmt := range []string{
		"LOAD 'auto_explain'",
		"SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on",
		"SET auto_explain.log_level = notice",
		"SET client_min_messages = notice",
		"VACUUM ANALYZE leaseq_jobs", // as autovacuum keeps a live table: statistics, and the visibility map index-only scans need
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, call := range planCalls(q, clock) {
		mu.Lock()
		plans = nil
		mu.Unlock()
		if err := call.run(ctx); err != nil {
			t.Fatalf("%s: %v", call.name, err)
		}
		mu.Lock()
		got := strings.Join(plans, "\n")
		mu.Unlock()
		if got == "" {
			t.Fatalf("%s: no plan was reported", call.name)
		}
		if seqScan.MatchString(got) {
			t.Errorf("%s scans leaseq_jobs:\n%s", call.name, got)
		}
		for _, ix := range call.indexes {
			if !slices.ContainsFunc(strings.Split(ix, "|"), func(ix string) bool { return strings.Contains(got, ix) }) {
				t.Errorf("%s does not use %s:\n%s", call.name, ix, got)
			}
		}
	}
}

var seqScan = regexp.MustCompile(`Seq Scan on leaseq_jobs\b`)

// fillPlanShape fills the queue, directly in SQL, with 100,000 jobs done two
// days ago and 500 in the last hour, 2,000 live leases (some near their deadline), 5,000 jobs scheduled for
// tomorrow, and 20 ready ones: a busy queue's shape, in which what is live
// is a few percent of the table.
func fillPlanShape(t *testing.T, db *sql.DB, clock *leaseq.ManualClock) {
	t.Helper()
	now := clock.Now().UnixMilli()
	insert := `INSERT INTO leaseq_jobs (queue, id, qty, payload, status, owner, token, attempts, max_attempts,
		lease_until, deadline, run_at, priority, due_at, ready, created_at, updated_at)
		SELECT 'default', $1 || i, 0, '', $2, $3, $4::integer, $4::integer, 3, $5::bigint, $6::bigint, $7::bigint, 0, $8::bigint, $9::integer, $10::bigint, $11::bigint
		FROM generate_series(1, $12::integer) AS i`
	const day = 86400000
	for _, shape := range [][]any{
		{"done", "done", "A", 1, now - 2*day, nil, nil, now - 2*day, 0, now - 2*day - 1000, now - 2*day, 100000},
		{"recent", "done", "A", 1, now - 60000, nil, nil, now - 60000, 0, now - 120000, now - 60000, 500},
		{"live", "leased", "A", 1, now + 60000, now + 120000, nil, now + 60000, 0, now - 1000, now - 1000, 2000},
		{"later", "pending", "", 0, nil, nil, now + day, now + day, 0, now, now, 5000},
		{"ready", "pending", "", 0, nil, now + 3600000, nil, now, 1, now, now, 20},
	} {
		if _, err := db.Exec(insert, shape...); err != nil {
			t.Fatal(err)
		}
	}
	// Rule 50: one job in 50 has a kind, for List by kind.
	if _, err := db.Exec(`UPDATE leaseq_jobs SET kind = 'mail' WHERE seq % 50 = 0`); err != nil {
		t.Fatal(err)
	}
}

// planCall is one call whose statements' plans are checked, and the
// indexes they must use between them.
type planCall struct {
	name    string
	run     func(context.Context) error
	indexes []string
}

// headerIndexes are the indexes the headers of the engine's statements of
// names say they rely on (internal/postgres/sql/*.sql, "-- index:").
func headerIndexes(names ...string) []string {
	var ix []string
	for _, name := range names {
		st, ok := postgres.Statements()[name]
		if !ok || st.Index == "" {
			panic("postgres statement " + name + " has no index: header")
		}
		ix = append(ix, strings.Split(st.Index, ", ")...)
	}
	return ix
}

// planCalls are the calls whose plans are checked, with the indexes their
// statements' headers name (a few are looser, and say why).
func planCalls(q *leaseq.Queue, clock *leaseq.ManualClock) []planCall {
	var c leaseq.Claim
	claim := func(ctx context.Context) error {
		var ok bool
		var err error
		c, ok, err = q.Claim(ctx, "A", time.Minute)
		if err == nil && !ok {
			err = fmt.Errorf("nothing claimed")
		}
		return err
	}
	fenced := func(f func(ctx context.Context) (bool, error)) func(context.Context) error {
		return func(ctx context.Context) error {
			if err := claim(ctx); err != nil {
				return err
			}
			_, err := f(ctx)
			return err
		}
	}
	return []planCall{
		{"enqueue", func(ctx context.Context) error { return q.Enqueue(ctx, leaseq.Job{ID: "new"}) }, nil},
		{"claim", claim, headerIndexes("sweep", "claim")},
		{"finish", func(ctx context.Context) error { _, err := q.Finish(ctx, c); return err }, headerIndexes("finish")},
		{"extend", fenced(func(ctx context.Context) (bool, error) { _, ok, err := q.Extend(ctx, c, time.Minute); return ok, err }), headerIndexes("extend")},
		{"release", fenced(func(ctx context.Context) (bool, error) { return q.Release(ctx, c, time.Second, "r") }), headerIndexes("release")},
		{"fail", fenced(func(ctx context.Context) (bool, error) { return q.Fail(ctx, c, "f") }), headerIndexes("fail")},
		{"snooze", fenced(func(ctx context.Context) (bool, error) { return q.Snooze(ctx, c, time.Second, "s") }), headerIndexes("snooze")},
		{"finish batch", fenced(func(ctx context.Context) (bool, error) {
			oks, err := q.FinishBatch(ctx, []leaseq.Claim{c, c})
			return oks[0], err
		}), headerIndexes("finish_many")},
		{"finish tx", fenced(func(ctx context.Context) (bool, error) {
			return q.FinishTx(ctx, c, func(context.Context, leaseq.Tx) error { return nil })
		}), headerIndexes("fence_check")},
		{"cancel", func(ctx context.Context) error { return q.Cancel(ctx, "ready19", "stop") }, headerIndexes("cancel")},
		// A few quarantined jobs: the planner may take them from
		// leaseq_jobs_finished rather than by ID; either is a short range.
		{"requeue", func(ctx context.Context) error { return q.Requeue(ctx, "ready19") }, nil},
		{"get", func(ctx context.Context) error { _, err := q.Get(ctx, "ready18"); return err }, headerIndexes("get")},
		{"stats", func(ctx context.Context) error { _, err := q.Stats(ctx); return err }, headerIndexes("stats")},
		{"list one status", func(ctx context.Context) error {
			_, err := q.List(ctx, leaseq.Filter{Status: leaseq.StatusQuarantined, Limit: 10})
			return err
		}, []string{"leaseq_jobs_status|leaseq_jobs_finished"}},
		{"list every status", func(ctx context.Context) error {
			_, err := q.List(ctx, leaseq.Filter{AfterID: "done50000", Limit: 10})
			return err
		}, headerIndexes("list_all")},
		{"list by kind", func(ctx context.Context) error {
			_, err := q.List(ctx, leaseq.Filter{Kind: "mail", AfterID: "done50000", Limit: 10})
			return err
		}, []string{"leaseq_jobs_kind"}},
		{"list by kind and status", func(ctx context.Context) error {
			_, err := q.List(ctx, leaseq.Filter{Kind: "mail", Status: leaseq.StatusLeased, Limit: 10})
			return err
		}, []string{"leaseq_jobs_kind"}},
		{"activity", func(ctx context.Context) error {
			_, err := q.Activity(ctx, clock.Now().Add(-time.Hour))
			return err
		}, headerIndexes("activity")},
		{"queues", func(ctx context.Context) error { _, err := leaseq.Queues(ctx, q.DB()); return err }, nil},
		{"purge", func(ctx context.Context) error {
			_, err := q.Purge(ctx, clock.Now().Add(-time.Hour), leaseq.StatusDone, leaseq.StatusQuarantined)
			return err
		}, headerIndexes("purge")},
		// Rule 54: leaseq_paused is a row per paused queue, read by key.
		{"pause", q.Pause, nil},
		{"paused claim", func(ctx context.Context) error { _, _, err := q.Claim(ctx, "A", time.Minute); return err }, nil},
		{"resume", q.Resume, nil},
		// Last: the pool's claims and finishes may still be in flight on
		// the one connection after Work returned.
		{"periodic and retention", func(ctx context.Context) error { return planTimed(ctx, q) }, append(headerIndexes("slot_insert")[:1], headerIndexes("purge_due")...)},
	}
}

// planTimed runs a pool's first periodic and retention passes: the read
// of a Periodic seen before (an old slot's job is there), the insert of the
// latest slot's job, and retention's read of what is due (nothing: the
// done jobs are younger than its age).
func planTimed(ctx context.Context, q *leaseq.Queue) error {
	if err := q.Enqueue(ctx, leaseq.Job{ID: "tick@1970-01-01T00:00:00Z"}); err != nil {
		return err
	}
	passed := map[string]chan struct{}{"periodic": make(chan struct{}), "retention": make(chan struct{})}
	for loop, ch := range passed {
		var once sync.Once
		defer leaseq.OnTimedPass(loop, "plans", func(time.Time) { once.Do(func() { close(ch) }) })()
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Work(wctx, leaseq.WorkerOptions{Owner: "plans", PollInterval: time.Hour,
			Periodic:  []leaseq.Periodic{{Name: "tick", Schedule: leaseq.Every(time.Minute)}},
			Retention: leaseq.Retention{Done: 72 * time.Hour}}, func(context.Context, leaseq.Claim) error { return nil })
	}()
	for _, ch := range passed {
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			stop()
			return fmt.Errorf("no periodic and retention passes within 20s")
		}
	}
	stop()
	return <-done
}
