package leaseqprom_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The module's tests run on SQLite: the collector reads Queue.Stats and the
// outcomes come from Work, both checked on each engine by leaseq's own
// suite.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// open returns the queues named names on a fresh database with a manual
// clock at t0.
func open(t testing.TB, names ...string) (*leaseq.ManualClock, []*leaseq.Queue) {
	t.Helper()
	db, err := leaseq.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := leaseq.NewManualClock(t0)
	var qs []*leaseq.Queue
	for _, name := range names {
		q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: name, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		qs = append(qs, q)
	}
	return clock, qs
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jobsText is the exposition of leaseq_jobs for the queues and counts
// given, in the order pending, scheduled, leased, expired, done,
// quarantined.
func jobsText(counts map[string][6]int) string {
	var b strings.Builder
	b.WriteString("# HELP leaseq_jobs Jobs of the queue by status, as Queue.Stats counts them at the scrape.\n# TYPE leaseq_jobs gauge\n")
	for q, n := range counts {
		for _, s := range []string{"done", "expired", "leased", "pending", "quarantined", "scheduled"} {
			v := map[string]int{"pending": n[0], "scheduled": n[1], "leased": n[2], "expired": n[3], "done": n[4], "quarantined": n[5]}[s]
			fmt.Fprintf(&b, "leaseq_jobs{queue=%q,status=%q} %d\n", q, s, v)
		}
	}
	return b.String()
}

// TestCollectorCounts: a scrape reports every status of every queue as
// Stats counts it at that instant of the queue's clock, and a later scrape
// sees the queue as it is then.
func TestCollectorCounts(t *testing.T) {
	clock, qs := open(t, "default", "mail")
	ctx := context.Background()
	q, mail := qs[0], qs[1]
	must(t, q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d", RunAt: t0.Add(time.Hour)}, {ID: "e"}}))
	must(t, mail.Enqueue(ctx, leaseq.Job{ID: "m"}))
	_, _, err := q.Claim(ctx, "w", time.Second) // a, expired at +1 s
	must(t, err)
	c2, _, err := q.Claim(ctx, "w", time.Minute)
	must(t, err)
	c3, _, err := q.Claim(ctx, "w", time.Minute)
	must(t, err)
	if ok, err := q.Finish(ctx, c2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := q.Fail(ctx, c3, "x"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	col := leaseqprom.NewCollector(q, mail)
	want := jobsText(map[string][6]int{"default": {1, 1, 1, 0, 1, 1}, "mail": {1, 0, 0, 0, 0, 0}})
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "leaseq_jobs"); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(time.Second)) // a's lease is over: expired
	want = jobsText(map[string][6]int{"default": {1, 1, 0, 1, 1, 1}, "mail": {1, 0, 0, 0, 0, 0}})
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "leaseq_jobs"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n != 16 {
		t.Fatalf("%d series, want 16 (six statuses, paused and scrape error, of two queues)", n)
	}
	// leaseq_paused: 1 while paused, 0 once resumed.
	paused := func(d, m int) string {
		return fmt.Sprintf("# HELP leaseq_paused 1 while the queue is paused (Queue.Pause), else 0.\n# TYPE leaseq_paused gauge\n"+
			"leaseq_paused{queue=\"default\"} %d\nleaseq_paused{queue=\"mail\"} %d\n", d, m)
	}
	if err := testutil.CollectAndCompare(col, strings.NewReader(paused(0, 0)), "leaseq_paused"); err != nil {
		t.Fatal(err)
	}
	must(t, mail.Pause(ctx))
	if err := testutil.CollectAndCompare(col, strings.NewReader(paused(0, 1)), "leaseq_paused"); err != nil {
		t.Fatal(err)
	}
	must(t, mail.Resume(ctx))
	if err := testutil.CollectAndCompare(col, strings.NewReader(paused(0, 0)), "leaseq_paused"); err != nil {
		t.Fatal(err)
	}
}

// fillDone adds n done jobs to queue q, in SQL (as many Finish calls would
// leave them, counted by the schema's triggers), so that a test can have
// 200,000 of them in seconds.
func fillDone(t testing.TB, db *sql.DB, queue string, n int) {
	t.Helper()
	ms := t0.UnixMilli()
	_, err := db.Exec(`INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, due_at, created_at, updated_at)
		WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?2)
		SELECT ?1, 'done' || n, 0, x'', 'pending', 3, ?3, ?3, ?3 FROM i`, queue, n, ms)
	must(t, err)
	_, err = db.Exec(`UPDATE leaseq_jobs SET status = 'done' WHERE queue = ?1 AND status = 'pending' AND id LIKE 'done%'`, queue)
	must(t, err)
}

// TestCollectorAt200kDone: with 200,000 done jobs the scrape reports them
// (from the counts the schema keeps, not by reading them: see the plan
// tests of leaseq's stats statement and BenchmarkScrape for its cost).
func TestCollectorAt200kDone(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 200,000 rows")
	}
	_, qs := open(t, "default")
	fillDone(t, qs[0].DB(), "default", 200_000)
	must(t, qs[0].Enqueue(context.Background(), leaseq.Job{ID: "p"}))
	want := jobsText(map[string][6]int{"default": {1, 0, 0, 0, 200_000, 0}})
	if err := testutil.CollectAndCompare(leaseqprom.NewCollector(qs[0]), strings.NewReader(want), "leaseq_jobs"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkScrape is one scrape of a queue with 1,000 and with 200,000 done
// jobs beside 100 pending ones: the two cost the same.
func BenchmarkScrape(b *testing.B) {
	for _, done := range []int{1_000, 200_000} {
		b.Run(fmt.Sprint("done=", done), func(b *testing.B) {
			_, qs := open(b, "default")
			fillDone(b, qs[0].DB(), "default", done)
			jobs := make([]leaseq.Job, 100)
			for i := range jobs {
				jobs[i] = leaseq.Job{ID: fmt.Sprint("p", i)}
			}
			must(b, qs[0].EnqueueBatch(context.Background(), jobs))
			reg := prometheus.NewRegistry()
			must(b, reg.Register(leaseqprom.NewCollector(qs[0])))
			b.ResetTimer()
			for b.Loop() {
				if _, err := reg.Gather(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOutcomes: a pool's outcomes are counted by queue, kind and what the
// queue made of the result — a refused finish as refused — and its runs
// and waits land in the histograms.
func TestOutcomes(t *testing.T) {
	clock, qs := open(t, "default")
	q := qs[0]
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	onOutcome, err := leaseqprom.NewOutcomes(reg)
	must(t, err)
	if _, err := leaseqprom.NewOutcomes(reg); err == nil {
		t.Fatal("NewOutcomes registered its metrics twice on one registry")
	}
	must(t, q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a", Kind: "email"}, {ID: "b", Kind: "email"}, {ID: "c", Kind: "sms"},
		{ID: "d"}}))
	clock.Set(t0.Add(2 * time.Second))
	m := leaseq.NewMux()
	m.Handle("email", func(ctx context.Context, c leaseq.Claim) error {
		if c.ID == "b" {
			_ = q.Cancel(ctx, c.ID, "operator") // the finish that follows is refused
		}
		return nil
	})
	m.Handle("", func(context.Context, leaseq.Claim) error { return errors.New("again") })
	done := make(chan struct{}, 4)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go q.Work(wctx, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, Lease: time.Hour, Backoff: func(int) time.Duration { return time.Hour },
		OnOutcome: func(o leaseq.Outcome) { onOutcome(o); done <- struct{}{} }}, m.ServeJob)
	for range 4 {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("no outcome within 30s")
		}
	}
	want := `# HELP leaseq_outcomes_total Handler runs by what the queue made of their result.
# TYPE leaseq_outcomes_total counter
leaseq_outcomes_total{kind="",outcome="released",queue="default"} 1
leaseq_outcomes_total{kind="email",outcome="finished",queue="default"} 1
leaseq_outcomes_total{kind="email",outcome="refused",queue="default"} 1
leaseq_outcomes_total{kind="sms",outcome="failed",queue="default"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "leaseq_outcomes_total"); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	must(t, err)
	for _, f := range fams {
		if f.GetName() != "leaseq_wait_seconds" && f.GetName() != "leaseq_run_seconds" {
			continue
		}
		counts := map[string]uint64{}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			counts[m.GetLabel()[0].GetValue()] = h.GetSampleCount()
			if f.GetName() == "leaseq_wait_seconds" && h.GetSampleSum() != 2*float64(h.GetSampleCount()) {
				t.Errorf("wait of kind %q: sum %v over %d runs, want 2 s each (the clock stood at +2 s)", m.GetLabel()[0].GetValue(), h.GetSampleSum(), h.GetSampleCount())
			}
		}
		if counts["email"] != 2 || counts["sms"] != 1 || counts[""] != 1 {
			t.Errorf("%s sample counts by kind: %v", f.GetName(), counts)
		}
	}
}
