package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/leaseq/leaseq"
)

// TestIdleClaimTakesNoWriteLock and TestIdleAfterRolledBackClaim hold
// SQLite's write lock, or a reader, from another connection and run on
// SQLite only; every other test here runs on each engine (forEngines in
// engine_test.go).

// This file covers which job a Claim takes and when: named queues, delayed
// jobs, priorities and the idle Claim (rules 14–16 and 23 in docs/rules.md), and what Stats and List report about it.

// claimOrder claims one job at a time at the fixture's clock until nothing
// is claimable and returns the IDs in the order they came.
func (f *fixture) claimOrder() []string {
	f.t.Helper()
	var ids []string
	for {
		c, ok := f.claim("W", time.Hour)
		if !ok {
			return ids
		}
		ids = append(ids, c.ID)
	}
}

// listIDs returns the IDs of one List page of q.
func listIDs(t *testing.T, q *leaseq.Queue, flt leaseq.Filter) []string {
	t.Helper()
	page, err := q.List(context.Background(), flt)
	if err != nil {
		t.Fatalf("List(%+v): %v", flt, err)
	}
	ids := []string{}
	for _, s := range page {
		ids = append(ids, s.ID)
	}
	return ids
}

// stats returns q's Stats or fails the test.
func stats(t *testing.T, q *leaseq.Queue) leaseq.Stats {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// TestNamedQueuesIndependent: two queues on one database each see, claim,
// count, list, cancel and purge only their own jobs, and the same ID may be
// in both (rule 14).
func TestNamedQueuesIndependent(t *testing.T) { forEngines(t, testNamedQueuesIndependent) }

func testNamedQueuesIndependent(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{Name: "alpha"})
	beta := f.queue("beta")
	if f.q.Name() != "alpha" || beta.Name() != "beta" {
		t.Fatalf("names %q and %q, want alpha and beta", f.q.Name(), beta.Name())
	}
	f.enqueue(leaseq.Job{ID: "x", Qty: 1})
	for _, j := range []leaseq.Job{{ID: "x", Qty: 2}, {ID: "y", Qty: 3}} {
		if err := beta.Enqueue(f.ctx, j); err != nil {
			t.Fatalf("beta: Enqueue(%+v): %v", j, err)
		}
	}
	if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "x"}); !errors.Is(err, leaseq.ErrDuplicate) {
		t.Fatalf("alpha: second x: %v, want ErrDuplicate", err)
	}
	if err := beta.Enqueue(f.ctx, leaseq.Job{ID: "x"}); !errors.Is(err, leaseq.ErrDuplicate) {
		t.Fatalf("beta: second x: %v, want ErrDuplicate", err)
	}
	f.wantRow(leaseq.State{ID: "x", Queue: "alpha", Qty: 1, Status: leaseq.StatusPending, MaxAttempts: 3,
		EnqueuedAt: ms(0), UpdatedAt: ms(0)})
	if s, err := beta.Get(f.ctx, "x"); err != nil || s.Queue != "beta" || s.Qty != 2 {
		t.Fatalf("beta: Get(x) = %s, %v; want beta's x with qty 2", fmtRow(s), err)
	}
	if _, err := f.q.Get(f.ctx, "y"); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("alpha: Get(y) of beta's job: %v, want ErrNotFound", err)
	}
	if got := fmtStats(stats(t, f.q)); got != fmtStats(leaseq.Stats{Pending: 1, OldestReady: ms(0)}) {
		t.Fatalf("alpha: Stats %s, want one pending", got)
	}
	if got := fmtStats(stats(t, beta)); got != fmtStats(leaseq.Stats{Pending: 2, OldestReady: ms(0)}) {
		t.Fatalf("beta: Stats %s, want two pending", got)
	}
	if got := fmt.Sprint(listIDs(t, f.q, leaseq.Filter{})); got != "[x]" {
		t.Fatalf("alpha: List %s, want [x]", got)
	}
	if got := fmt.Sprint(listIDs(t, beta, leaseq.Filter{})); got != "[x y]" {
		t.Fatalf("beta: List %s, want [x y]", got)
	}
	if _, err := f.q.List(f.ctx, leaseq.Filter{AfterID: "y"}); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("alpha: List after beta's y: %v, want ErrNotFound", err)
	}

	c := f.mustClaim("A", time.Second)
	if c.ID != "x" || c.Qty != 1 || c.Token != 1 {
		t.Fatalf("alpha: claim %+v, want its own x", c)
	}
	f.nothingClaimable("alpha has no other job; beta's are not alpha's")
	f.finish(c)
	if s, _ := beta.Get(f.ctx, "x"); s.Status != leaseq.StatusPending {
		t.Fatalf("beta's x after alpha's x was finished: %s, want pending", fmtRow(s))
	}
	if err := f.q.Cancel(f.ctx, "y", "no"); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("alpha: Cancel of beta's y: %v, want ErrNotFound", err)
	}
	if err := beta.Cancel(f.ctx, "x", "no"); err != nil {
		t.Fatal(err)
	}
	f.wantRow(leaseq.State{ID: "x", Qty: 1, Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1,
		MaxAttempts: 3, LeaseUntil: ms(1000), EnqueuedAt: ms(0), UpdatedAt: ms(0)})

	f.at(10)
	if n := f.purge(ms(10), leaseq.StatusQuarantined); n != 0 {
		t.Fatalf("alpha: Purge of quarantined jobs deleted %d, want 0 (only beta has one)", n)
	}
	if n, err := beta.Purge(f.ctx, ms(10), leaseq.StatusDone); err != nil || n != 0 {
		t.Fatalf("beta: Purge of done jobs: %d, %v; want 0 (only alpha has one)", n, err)
	}
	if n := f.purge(ms(10)); n != 1 {
		t.Fatalf("alpha: Purge of done jobs deleted %d, want 1", n)
	}
	if got := fmt.Sprint(listIDs(t, beta, leaseq.Filter{})); got != "[x y]" {
		t.Fatalf("beta after alpha's purge: List %s, want [x y]", got)
	}
	bc, ok, err := beta.Claim(f.ctx, "B", time.Second)
	if err != nil || !ok || bc.ID != "y" {
		t.Fatalf("beta: claim %+v %v %v, want y", bc, ok, err)
	}
}

// TestDefaultQueueName: Name "" is the queue "default", the same queue as
// one named so explicitly.
func TestDefaultQueueName(t *testing.T) { forEngines(t, testDefaultQueueName) }

func testDefaultQueueName(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	if f.q.Name() != leaseq.DefaultName || leaseq.DefaultName != "default" {
		t.Fatalf("Name() = %q, want %q", f.q.Name(), "default")
	}
	f.enqueue(leaseq.Job{ID: "a"})
	named := f.queue("default")
	if s, err := named.Get(f.ctx, "a"); err != nil || s.Queue != "default" {
		t.Fatalf("Get through Name \"default\": %s, %v", fmtRow(s), err)
	}
}

// TestQueueNameInvalid: queue names follow the rules of job IDs; New
// refuses any other with ErrInvalid and writes nothing.
func TestQueueNameInvalid(t *testing.T) { forEngines(t, testQueueNameInvalid) }

func testQueueNameInvalid(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	before := f.snapshot()
	for _, name := range []string{strings.Repeat("q", leaseq.MaxIDLen+1), "a\x00b", "\x00", "caf\xe9", "\xff\xfe"} {
		q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: name})
		if !errors.Is(err, leaseq.ErrInvalid) || q != nil {
			t.Fatalf("New(Name %q): got %v, %v; want nil and ErrInvalid", name, q, err)
		}
	}
	f.unchanged(before, "refused New")
	for _, name := range []string{strings.Repeat("q", leaseq.MaxIDLen), "orders/eu-west", "заказы", " "} {
		q := f.queue(name)
		if err := q.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
			t.Fatalf("queue %q: Enqueue: %v", name, err)
		}
		if s, err := q.Get(f.ctx, "a"); err != nil || s.Queue != name {
			t.Fatalf("queue %q: Get: %s, %v", name, fmtRow(s), err)
		}
	}
}

// TestRunAtBoundary: a job delayed to 500 is not claimable at 499 and is
// at 500 (rule 15).
func TestRunAtBoundary(t *testing.T) { forEngines(t, testRunAtBoundary) }

func testRunAtBoundary(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "later", Qty: 1, RunAt: ms(500)})
	f.wantRow(leaseq.State{ID: "later", Qty: 1, Status: leaseq.StatusPending, MaxAttempts: 3, RunAt: ms(500),
		EnqueuedAt: ms(0), UpdatedAt: ms(0)})
	before := f.snapshot()
	f.at(499).nothingClaimable("delayed until 500")
	if cs := f.claimBatch("Z", time.Second, 10); len(cs) != 0 {
		t.Fatalf("ClaimBatch at 499: %+v, want nothing", cs)
	}
	f.unchanged(before, "Claims before run_at")
	wantClaim(t, f.at(500).mustClaim("A", time.Second), "later", 1, 1, ms(1500))

	t.Run("run_at not after now is at once", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.at(1000)
		f.enqueue(leaseq.Job{ID: "past", RunAt: ms(900)})
		f.enqueue(leaseq.Job{ID: "now", RunAt: ms(1000)})
		if got := fmt.Sprint(f.claimOrder()); got != "[past now]" {
			t.Fatalf("claims at 1000: %s, want [past now]", got)
		}
	})
	t.Run("claimed in one batch when due", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", RunAt: ms(500)})
		f.enqueue(leaseq.Job{ID: "b", RunAt: ms(501)})
		f.enqueue(leaseq.Job{ID: "c"})
		if cs := f.at(500).claimBatch("A", time.Second, 10); len(cs) != 2 || cs[0].ID != "a" || cs[1].ID != "c" {
			t.Fatalf("ClaimBatch at 500: %+v, want a and c", cs)
		}
		if cs := f.claimBatch("A", time.Second, 10); len(cs) != 0 {
			t.Fatalf("second ClaimBatch at 500: %+v, want nothing (b is due at 501)", cs)
		}
		if cs := f.at(501).claimBatch("A", time.Second, 10); len(cs) != 1 || cs[0].ID != "b" {
			t.Fatalf("ClaimBatch at 501: %+v, want b", cs)
		}
	})
	t.Run("delayed past its deadline is quarantined", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", RunAt: ms(500), Deadline: ms(600)})
		f.at(600).nothingClaimable("its deadline passed before anyone claimed it")
		f.wantReason(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, MaxAttempts: 3, RunAt: ms(500),
			Deadline: ms(600), EnqueuedAt: ms(0), UpdatedAt: ms(600)}, "deadline")
	})
}

// TestRunAtDeadline: RunAt at or after the deadline is ErrInvalid, nothing
// written; 1 ms before it is accepted, and the claim's lease is capped at
// the deadline.
func TestRunAtDeadline(t *testing.T) { forEngines(t, testRunAtDeadline) }

func testRunAtDeadline(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	before := f.snapshot()
	for _, runAt := range []int64{1000, 1001, 5000} {
		err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "a", RunAt: ms(runAt), Deadline: ms(1000)})
		wantErrSays(t, err, leaseq.ErrInvalid, "RunAt")
		err = f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "ok"}, {ID: "a", RunAt: ms(runAt), Deadline: ms(1000)}})
		wantErrSays(t, err, leaseq.ErrInvalid, "RunAt", "jobs[1]")
		f.unchanged(before, fmt.Sprintf("Enqueue with RunAt %d, deadline 1000", runAt))
	}
	f.enqueue(leaseq.Job{ID: "a", RunAt: ms(999), Deadline: ms(1000)})
	f.at(998).nothingClaimable("delayed until 999")
	wantClaim(t, f.at(999).mustClaim("A", time.Hour), "a", 1, 1, ms(1000))
}

// TestPriorityOrder: higher priority first; among equals, enqueue order
// here since all were due at once (rule 16). ClaimBatch hands them out in
// the same order.
func TestPriorityOrder(t *testing.T) { forEngines(t, testPriorityOrder) }

func testPriorityOrder(t *testing.T, eng testEngine) {
	jobs := []leaseq.Job{{ID: "p0"}, {ID: "m100", Priority: -100}, {ID: "p100", Priority: 100},
		{ID: "p5", Priority: 5}, {ID: "p5b", Priority: 5}, {ID: "m1", Priority: -1}}
	want := "[p100 p5 p5b p0 m1 m100]"
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(jobs...)
	if got := fmt.Sprint(f.claimOrder()); got != want {
		t.Fatalf("claim order %s, want %s", got, want)
	}
	f = newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(jobs...)
	var got []string
	for _, c := range f.claimBatch("A", time.Second, 10) {
		got = append(got, c.ID)
	}
	if fmt.Sprint(got) != want {
		t.Fatalf("ClaimBatch order %v, want %s", got, want)
	}
	for _, c := range f.claimBatch("A", time.Second, 10) {
		t.Fatalf("second ClaimBatch got %+v, want nothing", c)
	}
}

// TestPriorityRange: -100..100 are accepted, -101 and 101 are ErrInvalid
// with nothing written.
func TestPriorityRange(t *testing.T) { forEngines(t, testPriorityRange) }

func testPriorityRange(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	before := f.snapshot()
	for _, p := range []int{-101, 101, -1 << 40, 1 << 40} {
		wantErrSays(t, f.q.Enqueue(f.ctx, leaseq.Job{ID: "a", Priority: p}), leaseq.ErrInvalid, "Priority")
		f.unchanged(before, fmt.Sprintf("Enqueue with priority %d", p))
	}
	for _, p := range []int{leaseq.MinPriority, leaseq.MaxPriority} {
		id := fmt.Sprint("p", p)
		f.enqueue(leaseq.Job{ID: id, Priority: p})
		if s := f.get(id); s.Priority != p {
			t.Fatalf("row %s, want priority %d", fmtRow(s), p)
		}
	}
	if leaseq.MinPriority != -100 || leaseq.MaxPriority != 100 {
		t.Fatalf("priority range %d..%d, want -100..100", leaseq.MinPriority, leaseq.MaxPriority)
	}
}

// TestPriorityExpiredLease: a lease of a high-priority job that ended is
// taken before pending jobs of lower priority that have waited longer.
func TestPriorityExpiredLease(t *testing.T) { forEngines(t, testPriorityExpiredLease) }

func testPriorityExpiredLease(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "hi", Priority: 10})
	f.mustClaim("A", time.Second)
	f.enqueue(leaseq.Job{ID: "lo1"})
	f.enqueue(leaseq.Job{ID: "lo2"})
	if c := f.at(999).mustClaim("B", time.Hour); c.ID != "lo1" {
		t.Fatalf("claim at 999: %s, want lo1 (hi's lease is live)", c.ID)
	}
	wantClaim(t, f.at(1000).mustClaim("B", time.Hour), "hi", 2, 2, ms(1000+3600_000))
	if got := fmt.Sprint(f.claimOrder()); got != "[lo2]" {
		t.Fatalf("then: %s, want [lo2]", got)
	}
}

// TestPriorityDelayedBecomesDue: a delayed high-priority job goes first the
// moment it is due, ahead of lower ones enqueued before it.
func TestPriorityDelayedBecomesDue(t *testing.T) { forEngines(t, testPriorityDelayedBecomesDue) }

func testPriorityDelayedBecomesDue(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "lo1"})
	f.enqueue(leaseq.Job{ID: "lo2"})
	f.enqueue(leaseq.Job{ID: "hi", Priority: 50, RunAt: ms(500)})
	if c := f.at(499).mustClaim("A", time.Hour); c.ID != "lo1" {
		t.Fatalf("claim at 499: %s, want lo1 (hi is not due)", c.ID)
	}
	if got := fmt.Sprint(f.at(500).claimOrder()); got != "[hi lo2]" {
		t.Fatalf("claims at 500: %s, want [hi lo2]", got)
	}
}

// TestPriorityReleased: a released job keeps its priority; once its delay
// is over it goes before the lower ones again.
func TestPriorityReleased(t *testing.T) { forEngines(t, testPriorityReleased) }

func testPriorityReleased(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "hi", Priority: 1})
	f.enqueue(leaseq.Job{ID: "lo1"})
	f.enqueue(leaseq.Job{ID: "lo2"})
	f.release(f.mustClaim("A", time.Second), 100*time.Millisecond, "later")
	if c := f.at(99).mustClaim("B", time.Hour); c.ID != "lo1" {
		t.Fatalf("claim at 99: %s, want lo1", c.ID)
	}
	if got := fmt.Sprint(f.at(100).claimOrder()); got != "[hi lo2]" {
		t.Fatalf("claims at 100: %s, want [hi lo2]", got)
	}
}

// TestIdleClaimTakesNoWriteLock: with nothing claimable and nothing due for
// quarantine, Claim and ClaimBatch answer from a read (rule 23): while
// another connection holds the write lock they return "nothing" at once,
// inside a context far shorter than the lock wait. With something to do
// they wait for the lock like any writer, and give up with their context.
func TestIdleClaimTakesNoWriteLock(t *testing.T) {
	idle := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"empty queue", func(f *fixture) {}},
		{"only delayed jobs, live leases, finished jobs and other queues' jobs", func(f *fixture) {
			f.enqueue(leaseq.Job{ID: "done"})
			f.finish(f.mustClaim("A", time.Hour))
			f.enqueue(leaseq.Job{ID: "failed"})
			f.fail(f.mustClaim("A", time.Hour), "bad")
			f.enqueue(leaseq.Job{ID: "leased", Deadline: ms(50_000)})
			f.mustClaim("A", time.Hour)
			f.enqueue(leaseq.Job{ID: "spent", MaxAttempts: 1})
			f.mustClaim("A", 20*time.Second) // due for quarantine at 20s, not before
			f.enqueue(leaseq.Job{ID: "delayed", RunAt: ms(10_000)})
			f.enqueue(leaseq.Job{ID: "delayed-hi", RunAt: ms(10_000), Deadline: ms(20_000), Priority: 100})
			if err := f.queue("other").Enqueue(f.ctx, leaseq.Job{ID: "elsewhere"}); err != nil {
				f.t.Fatal(err)
			}
			f.at(9_999)
		}},
	}
	busy := []struct {
		name  string
		setup func(f *fixture)
	}{
		{"a pending job", func(f *fixture) { f.enqueue(leaseq.Job{ID: "a"}) }},
		{"a delayed job just due", func(f *fixture) {
			f.enqueue(leaseq.Job{ID: "a", RunAt: ms(500)})
			f.at(500)
		}},
		{"a lease that just ended", func(f *fixture) {
			f.enqueue(leaseq.Job{ID: "a"})
			f.mustClaim("A", time.Second)
			f.at(1000)
		}},
		{"a lease due for quarantine only", func(f *fixture) {
			f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 1})
			f.mustClaim("A", time.Second)
			f.at(1000)
		}},
	}
	for _, noGroup := range []bool{false, true} {
		mode := "group commit"
		if noGroup {
			mode = "no group commit"
		}
		for _, tc := range idle {
			t.Run(mode+"/idle: "+tc.name, func(t *testing.T) {
				f := newFixture(t, sqliteEngine, leaseq.Options{DisableGroupCommit: noGroup})
				tc.setup(f)
				before := f.snapshot()
				f.lockFromOutside()
				ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second) // under the 5 s busy timeout
				defer cancel()
				var wg sync.WaitGroup
				errs := make(chan error, 16)
				for i := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if i%2 == 0 {
							c, ok, err := f.q.Claim(ctx, fmt.Sprint("W", i), time.Second)
							if ok || err != nil {
								errs <- fmt.Errorf("Claim: got %+v, %v, %v; want nothing and no error", c, ok, err)
							}
							return
						}
						cs, err := f.q.ClaimBatch(ctx, fmt.Sprint("W", i), time.Second, 5)
						if len(cs) != 0 || err != nil {
							errs <- fmt.Errorf("ClaimBatch: got %+v, %v; want nothing and no error", cs, err)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatalf("with the write lock held elsewhere: %v", err)
				}
				f.unchanged(before, "idle Claims")
			})
		}
		for _, tc := range busy {
			t.Run(mode+"/waits: "+tc.name, func(t *testing.T) {
				f := newFixture(t, sqliteEngine, leaseq.Options{DisableGroupCommit: noGroup})
				tc.setup(f)
				before := f.snapshot()
				release := f.lockFromOutside()
				ctx, cancel := context.WithTimeout(f.ctx, 200*time.Millisecond)
				defer cancel()
				if c, ok, err := f.q.Claim(ctx, "B", time.Second); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Claim with the write lock held elsewhere: got %+v, %v, %v; want it to wait until its context ends", c, ok, err)
				}
				ctx, cancel = context.WithTimeout(f.ctx, 200*time.Millisecond)
				defer cancel()
				if cs, err := f.q.ClaimBatch(ctx, "B", time.Second, 5); !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("ClaimBatch with the write lock held elsewhere: got %+v, %v; want it to wait until its context ends", cs, err)
				}
				release()
				f.unchanged(before, "Claims that waited and gave up")
				f.claim("B", time.Second) // and once the lock is free, it goes through
				if after := f.snapshot(); after == before {
					t.Fatalf("a Claim with something to do changed nothing once the lock was free; rows:\n%s", f.dump())
				}
			})
		}
	}
}

// TestStats: Stats counted by hand at instants on each side of a run_at
// and of a lease end (Stats in README's API).
func TestStats(t *testing.T) { forEngines(t, testStats) }

func testStats(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	if got, want := fmtStats(stats(t, f.q)), fmtStats(leaseq.Stats{}); got != want {
		t.Fatalf("empty queue: %s, want %s", got, want)
	}
	f.enqueue(leaseq.Job{ID: "l"})
	f.mustClaim("A", time.Second) // l leased until 1000
	f.enqueue(leaseq.Job{ID: "s", RunAt: ms(500)})
	f.at(100)
	f.enqueue(leaseq.Job{ID: "p"})
	f.enqueue(leaseq.Job{ID: "d", Priority: 5})
	f.finish(f.mustClaim("A", time.Second))
	f.enqueue(leaseq.Job{ID: "x", Priority: 5})
	f.fail(f.mustClaim("A", time.Second), "bad")
	if err := f.queue("other").Enqueue(f.ctx, leaseq.Job{ID: "elsewhere"}); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		at    int64
		claim int // claims to make after checking, each taking the head
		want  leaseq.Stats
	}{
		{100, 0, leaseq.Stats{Pending: 1, Scheduled: 1, Leased: 1, Done: 1, Quarantined: 1, OldestReady: ms(100)}},
		{499, 0, leaseq.Stats{Pending: 1, Scheduled: 1, Leased: 1, Done: 1, Quarantined: 1, OldestReady: ms(100)}},
		{500, 0, leaseq.Stats{Pending: 2, Leased: 1, Done: 1, Quarantined: 1, OldestReady: ms(100)}},
		{999, 0, leaseq.Stats{Pending: 2, Leased: 1, Done: 1, Quarantined: 1, OldestReady: ms(100)}},
		// l's lease ends: expired, and claimable since 1000. Claim p.
		{1000, 1, leaseq.Stats{Pending: 2, Expired: 1, Done: 1, Quarantined: 1, OldestReady: ms(100)}},
		// s has been claimable since its run_at. Claim it.
		{1000, 1, leaseq.Stats{Pending: 1, Leased: 1, Expired: 1, Done: 1, Quarantined: 1, OldestReady: ms(500)}},
		// Only the ended lease is left, claimable since its end. Claim it.
		{1000, 1, leaseq.Stats{Leased: 2, Expired: 1, Done: 1, Quarantined: 1, OldestReady: ms(1000)}},
		{1000, 0, leaseq.Stats{Leased: 3, Done: 1, Quarantined: 1}},
	}
	for i, s := range steps {
		f.at(s.at)
		if got, want := fmtStats(stats(t, f.q)), fmtStats(s.want); got != want {
			t.Fatalf("step %d at %d: Stats %s,\nwant %s; rows:\n%s", i, s.at, got, want, f.dump())
		}
		for range s.claim {
			f.mustClaim("B", time.Second)
		}
	}

	t.Run("oldest ready is max(enqueue, run_at) and a release's due time", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.at(2000)
		f.enqueue(leaseq.Job{ID: "past", RunAt: ms(1500)}) // due since its enqueue, 2000
		f.enqueue(leaseq.Job{ID: "future", RunAt: ms(2500)})
		if got := relMS(stats(t, f.q).OldestReady); got != "+2000ms" {
			t.Fatalf("OldestReady with a job enqueued at 2000 with run_at 1500: %s, want +2000ms", got)
		}
		f.mustClaim("A", time.Hour) // takes past
		if got := relMS(stats(t, f.at(2499).q).OldestReady); got != "-" {
			t.Fatalf("OldestReady at 2499 with only a job due at 2500: %s, want none", got)
		}
		if got := relMS(stats(t, f.at(2600).q).OldestReady); got != "+2500ms" {
			t.Fatalf("OldestReady at 2600 with a job due at 2500: %s, want +2500ms", got)
		}
		c := f.mustClaim("A", time.Hour) // takes future
		f.at(2700).release(c, 300*time.Millisecond, "later")
		if got := fmtStats(stats(t, f.at(2999).q)); got != fmtStats(leaseq.Stats{Scheduled: 1, Leased: 1}) {
			t.Fatalf("at 2999 with a release due at 3000: %s", got)
		}
		if got := fmtStats(stats(t, f.at(3000).q)); got != fmtStats(leaseq.Stats{Pending: 1, Leased: 1, OldestReady: ms(3000)}) {
			t.Fatalf("at 3000 with a release due at 3000: %s", got)
		}
	})
}

// TestList: pages in enqueue order across statuses and within one, by
// AfterID; the limits of Filter (List in README's API).
func TestList(t *testing.T) { forEngines(t, testList) }

func testList(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	for i := range 7 {
		f.enqueue(leaseq.Job{ID: fmt.Sprint("j", i), Qty: i})
	}
	// Claims take j0, j1, j2, j3 in order: j0 done, j1 leased, j2 failed,
	// j3 leased; j4 is cancelled, j5 and j6 stay pending.
	f.finish(f.mustClaim("A", time.Hour))
	f.mustClaim("A", time.Hour)
	f.fail(f.mustClaim("A", time.Hour), "bad")
	f.mustClaim("A", time.Hour)
	f.cancel("j4", "stop")

	for _, tc := range []struct {
		flt  leaseq.Filter
		want string
	}{
		{leaseq.Filter{}, "[j0 j1 j2 j3 j4 j5 j6]"},
		{leaseq.Filter{Limit: 3}, "[j0 j1 j2]"},
		{leaseq.Filter{Limit: 3, AfterID: "j2"}, "[j3 j4 j5]"},
		{leaseq.Filter{Limit: 3, AfterID: "j5"}, "[j6]"},
		{leaseq.Filter{Limit: 3, AfterID: "j6"}, "[]"},
		{leaseq.Filter{Status: leaseq.StatusPending}, "[j5 j6]"},
		{leaseq.Filter{Status: leaseq.StatusPending, AfterID: "j5"}, "[j6]"},
		{leaseq.Filter{Status: leaseq.StatusPending, AfterID: "j1"}, "[j5 j6]"}, // AfterID of another status
		{leaseq.Filter{Status: leaseq.StatusLeased}, "[j1 j3]"},
		{leaseq.Filter{Status: leaseq.StatusLeased, Limit: 1}, "[j1]"},
		{leaseq.Filter{Status: leaseq.StatusLeased, Limit: 1, AfterID: "j1"}, "[j3]"},
		{leaseq.Filter{Status: leaseq.StatusLeased, Limit: 1, AfterID: "j3"}, "[]"},
		{leaseq.Filter{Status: leaseq.StatusDone}, "[j0]"},
		{leaseq.Filter{Status: leaseq.StatusQuarantined}, "[j2 j4]"},
		{leaseq.Filter{Status: leaseq.StatusQuarantined, AfterID: "j3"}, "[j4]"},
	} {
		if got := fmt.Sprint(listIDs(t, f.q, tc.flt)); got != tc.want {
			t.Fatalf("List(%+v): %s, want %s", tc.flt, got, tc.want)
		}
	}
	page, err := f.q.List(f.ctx, leaseq.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range page {
		if got, want := fmtRow(s), fmtRow(f.get(s.ID)); got != want {
			t.Fatalf("List's row of %s:\n %s\nGet's:\n %s", s.ID, got, want)
		}
	}

	for _, flt := range []leaseq.Filter{{Limit: -1}, {Limit: leaseq.MaxListLimit + 1}, {Status: "bogus"}, {Status: "Pending"}} {
		if _, err := f.q.List(f.ctx, flt); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("List(%+v): %v, want ErrInvalid", flt, err)
		}
	}
	if _, err := f.q.List(f.ctx, leaseq.Filter{AfterID: "nope"}); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("List after an unknown ID: %v, want ErrNotFound", err)
	}

	t.Run("default and largest page", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		jobs := make([]leaseq.Job, leaseq.MaxListLimit+5)
		for i := range jobs {
			jobs[i] = leaseq.Job{ID: fmt.Sprintf("j%04d", i)}
		}
		f.enqueueBatch(jobs...)
		if got := listIDs(t, f.q, leaseq.Filter{}); len(got) != 100 || got[0] != "j0000" || got[99] != "j0099" {
			t.Fatalf("List with Limit 0: %d jobs, want the first 100", len(got))
		}
		got := listIDs(t, f.q, leaseq.Filter{Limit: leaseq.MaxListLimit})
		if len(got) != 1000 || got[999] != "j0999" {
			t.Fatalf("List with Limit 1000: %d jobs, want the first 1000", len(got))
		}
		if got := listIDs(t, f.q, leaseq.Filter{Limit: leaseq.MaxListLimit, AfterID: "j0999"}); len(got) != 5 {
			t.Fatalf("the page after j0999: %d jobs, want 5", len(got))
		}
	})
}

// TestIdleAfterRolledBackClaim: a Claim whose transaction ran but did not
// commit (its COMMIT got SQLITE_BUSY because a reader held the file) is
// tried again; when by then there is nothing to claim, it must answer
// "nothing" — not hand out the claim of the transaction that was rolled
// back, which nobody holds. While the claim's UPDATE runs, a pre-update
// hook moves the clock back to before the job's run_at; a reader holds the
// file until the failed COMMIT has been rolled back. The queue's database
// has a plain DSN, so that COMMIT fails at once.
func TestIdleAfterRolledBackClaim(t *testing.T) {
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			f := newFixture(t, sqliteEngine, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", RunAt: ms(500)})
			db, err := sql.Open("sqlite", "file:"+f.path) // no busy timeout
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			db.SetMaxOpenConns(1) // the hooks are on the only connection
			f.at(500)
			q, err := leaseq.New(f.ctx, db, leaseq.Options{Clock: f.clock, DisableGroupCommit: noGroup})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()

			reader, err := rawDB(t, f.path).Conn(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			if _, err := reader.ExecContext(f.ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := reader.QueryRowContext(f.ctx, "SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
				t.Fatal(err)
			}
			var writes atomic.Int32
			rolledBack := make(chan struct{})
			var once sync.Once
			setHooks(t, db, func(sqlite.SQLitePreUpdateData) {
				if writes.Add(1) == 1 {
					f.clock.Set(ms(499))
				}
			}, nil, func() { once.Do(func() { close(rolledBack) }) })
			readerDone := make(chan error, 1)
			go func() {
				select {
				case <-rolledBack:
				case <-time.After(promptly):
				}
				_, err := reader.ExecContext(context.Background(), "ROLLBACK")
				readerDone <- err
			}()

			ctx, cancel := context.WithTimeout(f.ctx, promptly)
			defer cancel()
			c, ok, err := q.Claim(ctx, "A", time.Second)
			if err := <-readerDone; err != nil {
				t.Fatal(err)
			}
			select {
			case <-rolledBack:
			default:
				t.Fatalf("setup: no transaction of the queue was rolled back (%d rows written); Claim: %+v %v %v", writes.Load(), c, ok, err)
			}
			if ok || err != nil {
				t.Fatalf("Claim: got %+v, %v, %v; want nothing (its transaction was rolled back, and at 499 the job is not due); rows:\n%s",
					c, ok, err, f.dump())
			}
			f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, MaxAttempts: 3, RunAt: ms(500),
				EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		})
	}
}
