package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leaseq/leaseq"
)

// The pool and pg-pool modes measure rule 48 (the pool writes in batches):
//
//	pool     on SQLite: Work(16) against a hand loop of ClaimBatch(16) +
//	         FinishBatch (two transactions per 16 jobs) and River's 16
//	         workers; Work(100) against the loop of 100; CPU per job of
//	         each; a bare commit loop beside them, from which it prints an
//	         upper bound of Work(16) / hand loop(16) (commitCeiling); then the heartbeats of 1,000 running handlers (3 s
//	         lease, 1 s heartbeat) in write transactions per second, counted
//	         by the file change counter read by another process; and
//	         Work(100) whose handler sleeps 10 ms, against the 10,000 jobs/s
//	         that 100 slots allow.
//	pg-pool  on PostgreSQL: the same heartbeats, counted as the write
//	         transactions the server assigned (its next transaction ID),
//	         and the sleeping Work(100).

func poolMode() {
	k := n(20000)
	var cw16, ch16, cw100, ch100 []time.Duration
	timed := func(cpus *[]time.Duration, f func() (float64, time.Duration)) func() float64 {
		return func() float64 { r, c := f(); *cpus = append(*cpus, c); return r }
	}
	runRounds(fmt.Sprintf("pool: the worker pool against hand loops and River on SQLite, %d jobs, no-op handler", k), []measure{
		{"leaseq Work, Concurrency 16", "jobs/s", timed(&cw16, func() (float64, time.Duration) { return workRate("pool-w16.db", 16, k) })},
		{"hand loop ClaimBatch(16)+FinishBatch", "jobs/s", timed(&ch16, func() (float64, time.Duration) { return handLoopOf("pool-h16.db", 16, k) })},
		{"River 16 workers (riversqlite, FetchCooldown 1ms)", "jobs/s", func() float64 { return riverRate("pool-river.db", 16, k) }},
		{"leaseq Work, Concurrency 100", "jobs/s", timed(&cw100, func() (float64, time.Duration) { return workRate("pool-w100.db", 100, k) })},
		{"hand loop ClaimBatch(100)+FinishBatch", "jobs/s", timed(&ch100, func() (float64, time.Duration) { return handLoopOf("pool-h100.db", 100, k) })},
		{"bound of Work(16) / hand loop(16) (commitCeiling)", "", func() float64 { return commitCeiling(k) }},
	}, []ratio{
		{"Work(16) / hand loop(16)", 0, 1, ">= 1.5"},
		{"Work(16) / River(16)", 0, 2, ">= 4.5"},
		{"Work(100) / hand loop(100)", 3, 4, ">= 0.9"},
	})
	med := func(ds []time.Duration) time.Duration { return time.Duration(median(durations(ds))) }
	fmt.Printf("  CPU per job (medians): Work(16) %v, hand loop(16) %v: %.2f (target <= 1.0); Work(100) %v, hand loop(100) %v: %.2f (target <= 1.2)\n",
		med(cw16), med(ch16), float64(med(cw16))/float64(med(ch16)), med(cw100), med(ch100), float64(med(cw100))/float64(med(ch100)))
	q := newLeaseq("pool-beat.db", "FULL", leaseq.Options{})
	path := filepath.Join(*dir, "pool-beat.db")
	perSec := heartbeatWrites(q, func() uint64 { return uint64(childChangeCounter(path)) })
	check(q.DB().Close())
	fmt.Printf("  heartbeats of 1,000 running handlers (lease 3s, heartbeat 1s): %.2f write transactions/s (target <= 2)\n", perSec)
	sleepMode("sqlite", func() *leaseq.Queue { return newLeaseq("pool-sleep.db", "FULL", leaseq.Options{}) })
}

func pgPoolMode() {
	s := server()
	q, _ := pgLeaseq("pool_beat", 64)
	nextXID := func() uint64 {
		var x uint64
		check(s.admin.QueryRow("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&x))
		return x
	}
	perSec := heartbeatWrites(q, nextXID)
	closeLeaseq(q)
	fmt.Printf("\n== pg-pool\n  heartbeats of 1,000 running handlers (lease 3s, heartbeat 1s): %.2f write transactions/s (target <= 2)\n", perSec)
	sleepMode("postgres", func() *leaseq.Queue { q, _ := pgLeaseq("pool_sleep", 120); return q })
}

// commitCeiling returns an upper bound of what Work(16) can gain on the
// hand loop of 16 by writing one transaction per cycle instead of two:
// with L the loop's time per 16 jobs and C one bare transaction's (BEGIN
// IMMEDIATE, a one-row UPDATE, COMMIT), a pool that ran exactly the loop's
// statements in one transaction, at no cost of its own, would save at most
// C, so Work(16) / hand loop(16) <= L / (L - C). A loose bound: the
// cycle's one commit writes the pages of both of the loop's, so it costs
// more than a bare one; the root's BenchmarkWorkCycleParts measures what it
// saves. The disk's fsync rate drifts within seconds here, so L and C are
// timed interleaved: each cycle of the loop of 16 over k jobs, then one
// bare commit on a file beside it.
func commitCeiling(k int) float64 {
	ceilings++
	q := newLeaseq(fmt.Sprintf("pool-ceiling-%d.db", ceilings), "FULL", leaseq.Options{})
	defer q.DB().Close()
	b := newBare(fmt.Sprintf("pool-ceiling-bare-%d.db", ceilings), "FULL")
	defer b.db.Close()
	fillLeaseq(q, k)
	ctx := context.Background()
	var l, c time.Duration
	for got := 0; got < k; {
		t0 := time.Now()
		cs, err := q.ClaimBatch(ctx, "hand", time.Hour, 16)
		check(err)
		_, err = q.FinishBatch(ctx, cs)
		check(err)
		t1 := time.Now()
		b.commit()
		l, c = l+t1.Sub(t0), c+time.Since(t1)
		got += len(cs)
	}
	cycles := time.Duration((k + 15) / 16)
	fmt.Printf("    (hand loop of 16: %v per 16 jobs; bare transaction: %v; bound %.2f)\n", l/cycles, c/cycles, float64(l)/float64(l-c))
	return float64(l) / float64(l-c)
}

// ceilings counts commitCeiling's runs, which each take fresh files.
var ceilings int

// handLoopOf runs k jobs through a loop of ClaimBatch(size)+FinishBatch:
// jobs/s and the process CPU time per job.
func handLoopOf(name string, size, k int) (float64, time.Duration) {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	fillLeaseq(q, k)
	ctx := context.Background()
	cpu0 := cpuTime()
	start := time.Now()
	for got := 0; got < k; {
		cs, err := q.ClaimBatch(ctx, "hand", time.Hour, size)
		check(err)
		_, err = q.FinishBatch(ctx, cs)
		check(err)
		got += len(cs)
	}
	return float64(k) / time.Since(start).Seconds(), (cpuTime() - cpu0) / time.Duration(k)
}

// heartbeatWrites runs 1,000 handlers that wait, on a 3 s lease with a 1 s
// heartbeat, and returns the write transactions per second that commits
// counts while all of them run, over 5 heartbeats.
func heartbeatWrites(q *leaseq.Queue, commits func() uint64) float64 {
	const handlers = 1000
	fillLeaseq(q, handlers)
	var running sync.WaitGroup
	running.Add(handlers)
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: handlers, Lease: 3 * time.Second,
			Heartbeat: time.Second, PollInterval: time.Hour, Logger: quiet},
			func(context.Context, leaseq.Claim) error { running.Done(); <-release; return nil })
	}()
	running.Wait()
	before, start := commits(), time.Now()
	time.Sleep(5 * time.Second)
	after, took := commits(), time.Since(start)
	close(release)
	cancel()
	check(<-returned)
	return float64(after-before) / took.Seconds()
}

// sleepMode runs Work(100) whose handler sleeps 10 ms over a few rounds
// on fresh queues and prints its rate against the 10,000 jobs/s that 100
// slots allow. Each round first runs Work(100) with a no-op handler on a
// queue of its own: its cycles carry about 100 results and 100 claims, as
// the sleeping pool's do when its handlers, started together by one cycle,
// return together; a slot then waits about that cycle's time T between one
// job and the next, so the sleeping pool's rate is about 10 ms / (10 ms +
// T) of 10,000 jobs/s, with T = 100 / the no-op rate (an estimate, not a
// bound: the sleeping pool's cycles carry fewer results when its handlers'
// returns spread).
func sleepMode(engine string, open func() *leaseq.Queue) {
	k := n(20000)
	var rates, estimates []float64
	for range *rounds {
		noop := poolRate(open(), k, func() {})
		estimates = append(estimates, 0.010/(0.010+100/noop))
		rates = append(rates, poolRate(open(), k, func() { time.Sleep(10 * time.Millisecond) }))
	}
	fmt.Printf("  %s: Work(100), handler sleeping 10ms, %d jobs: rounds %v jobs/s, median %.0f: %.2f of 10,000 (target >= 0.85); "+
		"estimate from the no-op Work(100)'s time per 100 jobs: rounds %.2f, median %.2f\n",
		engine, k, roundAll(rates), median(rates), median(rates)/10000, estimates, median(estimates))
}

// poolRate runs k jobs through Work(100) on q whose handler calls h
// (workRateWith) and returns jobs/s; then closes q and its database.
func poolRate(q *leaseq.Queue, k int, h func()) float64 {
	rate, _ := workRateWith(q, 100, k, h)
	check(q.Close())
	check(q.DB().Close())
	return rate
}

func roundAll(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

// childChangeCounter reads the file change counter of the SQLite file at
// path in a process of its own (this program run with -change-counter), so
// that the file's POSIX locks of this process stay as they are.
func childChangeCounter(path string) uint32 {
	self, err := os.Executable()
	check(err)
	out, err := exec.Command(self, "-change-counter", path).Output()
	check(err)
	v, err := strconv.ParseUint(strings.TrimSpace(string(out)), 10, 32)
	check(err)
	return uint32(v)
}
