package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// This file covers a pool's retention (rule 55 in docs/rules.md) on the
// manual clock: which done and quarantined jobs it purges, before, exactly
// at and after each age, how often, and several pools purging at once.

// doneAt enqueues, claims and finishes id with the clock at n ms after t0.
func (f *fixture) doneAt(id string, at time.Time) {
	f.t.Helper()
	f.clock.Set(at)
	f.enqueue(leaseq.Job{ID: id})
	if !f.finish(f.mustClaim("A", time.Hour)) {
		f.t.Fatalf("Finish of %q refused", id)
	}
}

// failedAt enqueues, claims and fails id at the instant at.
func (f *fixture) failedAt(id string, at time.Time) {
	f.t.Helper()
	f.clock.Set(at)
	f.enqueue(leaseq.Job{ID: id})
	f.fail(f.mustClaim("A", time.Hour), "bad")
}

// gone fails the test unless exactly the IDs in purged are not in the
// queue, of all ids.
func (f *fixture) gone(when string, ids []string, purged ...string) {
	f.t.Helper()
	for _, id := range ids {
		_, err := f.q.Get(f.ctx, id)
		want := !contains(purged, id)
		if got := !errors.Is(err, leaseq.ErrNotFound); got != want || (err != nil && !errors.Is(err, leaseq.ErrNotFound)) {
			f.t.Fatalf("%s: job %q kept %v (%v), want kept %v; rows:\n%s", when, id, got, err, want, f.dump())
		}
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestRetention: by default a pool purges done jobs older than 24h and
// quarantined ones older than 7 days — 1ms older, not exactly as old —
// never pending or leased ones, and at most once a minute.
func TestRetention(t *testing.T) { forEngines(t, testRetention) }

func testRetention(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	day, week := leaseq.RetentionDoneDefault, leaseq.RetentionQuarantinedDefault
	if day != 24*time.Hour || week != 7*24*time.Hour || leaseq.RetentionInterval != time.Minute {
		t.Fatalf("defaults %v, %v, every %v; want 24h, 7 days, a minute", day, week, leaseq.RetentionInterval)
	}
	n := ms(10 * 24 * 3600 * 1000) // when the pool first purges
	f.doneAt("d-older", n.Add(-day-time.Millisecond))
	f.doneAt("d-exactly", n.Add(-day))
	f.doneAt("d-younger", n.Add(-day+time.Millisecond))
	f.doneAt("d-next-minute", n.Add(time.Minute-day-time.Millisecond))
	f.failedAt("q-older", n.Add(-week-time.Millisecond))
	f.failedAt("q-exactly", n.Add(-week))
	f.failedAt("q-younger", n.Add(-week+time.Millisecond))
	f.clock.Set(ms(0))
	f.enqueue(leaseq.Job{ID: "pending", RunAt: n.Add(time.Hour)})
	f.enqueue(leaseq.Job{ID: "leased"})
	f.mustClaim("A", time.Millisecond) // its lease long over by n
	all := []string{"d-older", "d-exactly", "d-younger", "d-next-minute", "q-older", "q-exactly", "q-younger", "pending", "leased"}

	owner := "retention-" + eng.name
	passes := watchPasses(t, "retention", owner)
	f.clock.Set(n)
	runWork(t, f.q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond},
		func(ctx context.Context, c leaseq.Claim) error { <-ctx.Done(); return ctx.Err() })
	passes.at(t, n)
	f.gone("the first purge", all, "d-older", "q-older")
	f.clock.Set(n.Add(time.Minute - time.Millisecond))
	passes.at(t, n.Add(time.Minute-time.Millisecond))
	f.gone("59.999s later", all, "d-older", "q-older")
	f.clock.Set(n.Add(time.Minute))
	passes.at(t, n.Add(time.Minute))
	f.gone("a minute later", all, "d-older", "q-older", "d-exactly", "d-younger", "d-next-minute", "q-exactly", "q-younger")
}

// TestRetentionSettings: ages of one's own replace the defaults; Off keeps
// everything.
func TestRetentionSettings(t *testing.T) { forEngines(t, testRetentionSettings) }

func testRetentionSettings(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	n := ms(30 * 24 * 3600 * 1000)
	f.doneAt("d", n.Add(-2*time.Hour))
	f.failedAt("q", n.Add(-2*time.Hour))
	f.doneAt("d-old", n.Add(-20*24*time.Hour))
	ids := []string{"d", "q", "d-old"}

	// Off: the pool runs a job, and when Work has returned nothing was purged.
	f.clock.Set(n)
	f.enqueue(leaseq.Job{ID: "run"})
	ran := make(chan struct{}, 1)
	w := runWork(t, f.q, leaseq.WorkerOptions{Owner: "off-" + eng.name, Retention: leaseq.Retention{Off: true}},
		func(context.Context, leaseq.Claim) error { ran <- struct{}{}; return nil })
	waitFor(t, ran, "the pool to run a job")
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	f.gone("with retention off", ids)

	owner := "own-" + eng.name
	passes := watchPasses(t, "retention", owner)
	f.clock.Set(n.Add(time.Millisecond))
	runWork(t, f.q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond,
		Retention: leaseq.Retention{Done: time.Hour, Quarantined: 3 * time.Hour}},
		func(context.Context, leaseq.Claim) error { return nil })
	passes.at(t, n.Add(time.Millisecond))
	f.gone("Done 1h, Quarantined 3h", ids, "d", "d-old")
}

// TestRetentionPools: several pools purging at once, on connections of
// their own, delete every job that is due and nothing else, while another
// writer's Enqueue waits for at most a chunk's transaction at a time.
func TestRetentionPools(t *testing.T) { forEngines(t, testRetentionPools) }

func testRetentionPools(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	n := ms(30 * 24 * 3600 * 1000)
	fill := func(prefix string, count int, at time.Time) {
		f.clock.Set(at)
		var jobs []leaseq.Job
		for i := range count {
			jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("%s%04d", prefix, i)})
		}
		f.enqueueBatch(jobs...)
		for left := count; left > 0; {
			cs := f.claimBatch("A", time.Hour, min(left, 1000))
			oks, err := f.q.FinishBatch(f.ctx, cs)
			if err != nil || len(oks) != len(cs) {
				t.Fatalf("FinishBatch: %v", err)
			}
			left -= len(cs)
		}
	}
	fill("due", 1600, n.Add(-25*time.Hour))
	fill("kept", 300, n.Add(-23*time.Hour))
	f.clock.Set(n)
	var pools []*worker
	var passes []*passWatch
	for i := range 3 {
		owner := fmt.Sprintf("pool%d-%s", i, eng.name)
		passes = append(passes, watchPasses(t, "retention", owner))
		q, err := leaseq.New(f.ctx, f.e.open(t, f.path), leaseq.Options{Clock: f.clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		pools = append(pools, runWork(t, q, leaseq.WorkerOptions{Owner: owner, PollInterval: 5 * time.Millisecond},
			func(ctx context.Context, c leaseq.Claim) error { <-ctx.Done(); return ctx.Err() }))
	}
	// A writer enqueues, delayed jobs no pool claims, while the pools purge.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var worst time.Duration
	written := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ; ; written++ {
			select {
			case <-stop:
				return
			default:
			}
			began := time.Now()
			if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: fmt.Sprint("new", written), RunAt: n.Add(time.Hour)}); err != nil {
				t.Errorf("Enqueue during the purges: %v", err)
				return
			}
			worst = max(worst, time.Since(began))
		}
	}()
	for _, p := range passes {
		p.at(t, n)
	}
	close(stop)
	wg.Wait()
	st, err := f.q.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != 300 || st.Scheduled != written {
		t.Fatalf("after the purges: %s; want the 300 done jobs not due and the %d enqueued meanwhile", fmtStats(st), written)
	}
	for i := range 300 {
		f.get(fmt.Sprintf("kept%04d", i))
	}
	// A generous bound: a chunk's transaction is milliseconds; a purge held
	// as one transaction on a loaded machine would be far longer.
	if worst > 5*time.Second {
		t.Fatalf("an Enqueue waited %v while the pools purged", worst)
	}
	t.Logf("%s: 3 pools purged 1600 jobs; %d Enqueues meanwhile, the slowest %v", eng.name, written, worst)
}
