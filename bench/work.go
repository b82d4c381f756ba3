package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// The work mode compares leaseq's worker pool with River v0.51.2 on SQLite
// (riversqlite), end to end: jobs already in the queue, a pool started, a
// no-op handler, until every job ran and the pool stopped with every result
// recorded. River gets the settings it needs on SQLite: one connection
// (SetMaxOpenConns(1)), FetchCooldown 1ms (its 100ms default caps 16 workers
// near 160 jobs/s) and FetchPollInterval 10ms.

// noopArgs is River's job.
type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	ran func()
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error { w.ran(); return nil }

// riverRate runs k jobs through River on SQLite with g workers and
// returns jobs/s.
func riverRate(name string, g, k int) float64 {
	db := open(name, "FULL")
	defer db.Close()
	db.SetMaxOpenConns(1)
	r, _ := riverRateOn(riversqlite.New(db), g, k)
	return r
}

// riverRateOn runs River's migrations on driver's database, inserts k jobs
// (InsertMany, 1000 per call) and returns the jobs/s of g workers from the
// client's start until every job ran and the client stopped, and the
// process CPU time per job meanwhile.
func riverRateOn[TTx any](driver riverdriver.Driver[TTx], g, k int) (rate float64, cpuPerJob time.Duration) {
	ctx := context.Background()
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	check(err)
	_, err = mig.Migrate(ctx, rivermigrate.DirectionUp, nil)
	check(err)
	var done atomic.Int64
	all := make(chan struct{})
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{ran: func() {
		if done.Add(1) == int64(k) {
			close(all)
		}
	}})
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: g}},
		Workers:           workers,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 10 * time.Millisecond,
		Logger:            quiet,
	})
	check(err)
	for left := k; left > 0; {
		c := min(left, 1000)
		params := make([]river.InsertManyParams, c)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		_, err := client.InsertMany(ctx, params)
		check(err)
		left -= c
	}
	cpu0 := cpuTime()
	start := time.Now()
	check(client.Start(ctx))
	<-all
	check(client.Stop(ctx))
	return float64(k) / time.Since(start).Seconds(), (cpuTime() - cpu0) / time.Duration(k)
}

// quiet drops River's log records.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// workRate runs k jobs through Work with concurrency g and returns jobs/s
// and the process CPU time per job.
func workRate(name string, g, k int) (rate float64, cpuPerJob time.Duration) {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	return workRateOn(q, g, k)
}

// workRateOn enqueues k jobs into q and runs them through Work with
// concurrency g and a no-op handler: jobs/s from Work's start until it
// returned, and the process CPU time per job.
func workRateOn(q *leaseq.Queue, g, k int) (rate float64, cpuPerJob time.Duration) {
	return workRateWith(q, g, k, func() {})
}

// workRateWith is workRateOn with a handler that calls h.
func workRateWith(q *leaseq.Queue, g, k int, h func()) (rate float64, cpuPerJob time.Duration) {
	fillLeaseq(q, k)
	return workFilled(q, g, k, h)
}

// workFilled is workRateWith on a queue that holds its k jobs already.
func workFilled(q *leaseq.Queue, g, k int, h func()) (rate float64, cpuPerJob time.Duration) {
	var done atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cpu0 := cpuTime()
	start := time.Now()
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: g, Logger: quiet},
			func(context.Context, leaseq.Claim) error {
				h()
				if done.Add(1) == int64(k) {
					close(all)
				}
				return nil
			})
	}()
	<-all
	cancel()
	check(<-returned)
	rate = float64(k) / time.Since(start).Seconds()
	return rate, (cpuTime() - cpu0) / time.Duration(k)
}

// handLoopRate runs k jobs through a loop of ClaimBatch(100)+FinishBatch.
func handLoopRate(name string, k int) float64 {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	fillLeaseq(q, k)
	ctx := context.Background()
	start := time.Now()
	for got := 0; got < k; {
		cs, err := q.ClaimBatch(ctx, "hand", time.Hour, 100)
		check(err)
		_, err = q.FinishBatch(ctx, cs)
		check(err)
		got += len(cs)
	}
	return float64(k) / time.Since(start).Seconds()
}

// wakeLatency enqueues k jobs one at a time into an idle pool and returns
// the p50 and p99 of the time from Enqueue returning to the handler
// starting.
func wakeLatency(name string, k int) (p50, p99 time.Duration) {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	started := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 16, PollInterval: time.Hour, Logger: quiet},
			func(context.Context, leaseq.Claim) error { started <- time.Now(); return nil })
	}()
	var lat []time.Duration
	for _, j := range jobs(k) {
		check(q.Enqueue(ctx, j))
		enqueued := time.Now()
		lat = append(lat, (<-started).Sub(enqueued))
	}
	cancel()
	check(<-returned)
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// idleCost runs a pool of 16 with nothing to do for d and returns the CPU
// time it used and how many times the database file changed (SQLite's file
// change counter, bytes 24–27 of the header, moves on every commit that
// writes).
func idleCost(name string, d time.Duration) (cpu time.Duration, writes uint32) {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	path := filepath.Join(*dir, name)
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	before := changeCounter(path)
	cpu0 := cpuTime()
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 16, Logger: quiet},
			func(context.Context, leaseq.Claim) error { return nil })
	}()
	time.Sleep(d)
	cancel()
	check(<-returned)
	return cpuTime() - cpu0, changeCounter(path) - before
}

// changeCounter reads SQLite's file change counter. It opens the file
// outside SQLite, which drops the process's POSIX locks on it when it
// closes: it is only called while no transaction is open.
func changeCounter(path string) uint32 {
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	var h [28]byte
	_, err = io.ReadFull(f, h[:])
	check(err)
	return binary.BigEndian.Uint32(h[24:28])
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	check(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func workMode() {
	k := n(20000)
	var cpu16 []time.Duration
	runRounds("work: the worker pool end to end, no-op handler", []measure{
		{"leaseq Work, Concurrency 16", "jobs/s", func() float64 {
			r, c := workRate("work-16.db", 16, k)
			cpu16 = append(cpu16, c)
			return r
		}},
		{"River 16 workers (riversqlite, FetchCooldown 1ms)", "jobs/s", func() float64 { return riverRate("work-river.db", 16, k) }},
		{"leaseq Work, Concurrency 100", "jobs/s", func() float64 { r, _ := workRate("work-100.db", 100, k); return r }},
		{"leaseq hand loop ClaimBatch(100)+FinishBatch", "jobs/s", func() float64 { return handLoopRate("work-hand.db", k) }},
	}, []ratio{
		{"Work(16) / River(16)", 0, 1, "≥ 10×"},
		{"Work(100) / hand loop(100)", 2, 3, "≥ 0.8"},
		{"Work(16) / hand loop(100)", 0, 3, "—"},
	})
	fmt.Printf("  CPU per job, Work(16): median %v\n", time.Duration(median(durations(cpu16))))
	p50, p99 := wakeLatency("work-wake.db", n(500))
	fmt.Printf("  wake-up latency (Enqueue returns → handler starts), %d jobs: p50 %v, p99 %v\n", n(500), p50, p99)
	idle := time.Duration(float64(10*time.Second) * min(*scale, 1))
	cpu, writes := idleCost("work-idle.db", idle)
	fmt.Printf("  idle pool of 16 for %v: CPU %v, file changes %d\n", idle, cpu, writes)
}

func durations(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d)
	}
	return out
}
