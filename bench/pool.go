package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/sqlite"
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
//	         that 100 slots allow, with what bounds it (sleepMode).
//	pg-pool  on PostgreSQL: the same heartbeats, counted as the write
//	         transactions the server assigned (its next transaction ID),
//	         and the sleeping Work(100).
//	sleep, pg-sleep
//	         the sleeping Work(100) alone, on SQLite and on PostgreSQL.

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
	sqliteSleepMode()
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
	pgSleepMode()
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
// slots allow, and beside it what bounds that rate.
//
// A slot that frees waits at least for the cycle that records its result
// and claims its next job, which starts after it freed (a claim fills only
// free slots: rule 28), and that cycle ends with a commit. So at 8,500
// jobs/s (0.85) a slot may wait 100/8,500 s − 10 ms = 1.76 ms per job on
// average, and no more. The mode prints, from the medians of the rounds:
//
//   - any pool: a bare commit's latency (one row updated), measured after
//     each round, is the least a slot can wait: <= 100 / (10 ms + commit).
//   - cycles one at a time: no-op pools of 1 to 100 slots (cycleCosts)
//     give what a cycle of k results and k claims costs, fitted as
//     C + c·k, and sleepBound the most that cycles of that cost allow when
//     they run one after another. On SQLite the cost is the write
//     transaction's, BEGIN to COMMIT, and the bound holds for any pool
//     (SQLite has one writer); on PostgreSQL it is the pool's whole cycle
//     (no-op pool's time per cycle), a bound of Work as built, which runs
//     one step at a time.
//   - cycles at once (PostgreSQL, which takes several writers): the
//     biggest no-op pool whose cycles take at most 1.76 ms, and what a job
//     costs there in CPU (this process, and the server's), against the
//     machine's cores — a bound even for a pool that ran several small
//     cycles at once.
func sleepMode(engine string, open func() *leaseq.Queue, s sleepProbe) {
	k := n(20000)
	var rates, commits []float64
	var costs [][]cycleCost
	for range *rounds {
		costs = append(costs, cycleCosts(open, s))
		rates = append(rates, poolRate(open(), k, func() { time.Sleep(10 * time.Millisecond) }))
		commits = append(commits, s.commit().Seconds())
	}
	fmt.Printf("  %s: Work(100), handler sleeping 10ms, %d jobs: rounds %v jobs/s, median %.0f: %.2f of 10,000 (target >= 0.85)\n",
		engine, k, roundAll(rates), median(rates), median(rates)/10000)
	c := median(commits)
	fmt.Printf("    bare commit after each round: %v, median %v; any pool that claims only for free slots (rule 28): <= %.0f jobs/s, %.2f of 10,000\n",
		durationsOf(commits), time.Duration(c*1e9).Round(time.Microsecond), 100/(0.010+c), 100/(0.010+c)/10000)
	printCycleCosts(engine, costs)
}

// sweepSizes are the no-op pools' sizes that cycleCosts runs.
var sweepSizes = []int{1, 2, 4, 8, 16, 32, 64, 100}

// cycleCost is what the cycles of a no-op Work(n) cost: results per cycle
// (k, when the probe counts cycles; else n), time per cycle (n / the rate:
// how long a slot waits between jobs), the write transaction's time per
// cycle (0 when the probe cannot tell), and CPU per job of this process
// and of the server (0 when not known).
type cycleCost struct {
	n, k           float64
	turn, write    float64 // seconds
	cpu, serverCPU float64 // seconds per job
}

// cycleCosts runs a no-op Work(n) on a fresh queue for each of sweepSizes,
// min(20,000, 500·n) jobs each (scaled).
func cycleCosts(open func() *leaseq.Queue, s sleepProbe) []cycleCost {
	var out []cycleCost
	for _, size := range sweepSizes {
		k := min(n(20000), n(500*size))
		q := open()
		fillLeaseq(q, k)
		stop := s.observe()
		server0 := s.serverCPU()
		rate, cpu := workFilled(q, size, k, func() {})
		txs, write := stop()
		c := cycleCost{n: float64(size), k: float64(size), cpu: cpu.Seconds(), serverCPU: (s.serverCPU() - server0) / float64(k)}
		if txs > 0 {
			c.k, c.write = float64(k)/float64(txs), write.Seconds()/float64(txs)
		}
		c.turn = c.k / rate
		check(q.Close())
		check(q.DB().Close())
		out = append(out, c)
	}
	return out
}

// printCycleCosts prints the median over rounds of each size's costs, and
// the bounds they put on the sleeping Work(100).
func printCycleCosts(engine string, rounds [][]cycleCost) {
	med := medianCosts(rounds)
	fmt.Printf("    no-op Work(n), medians: n, results per cycle, time per cycle, write transaction per cycle, CPU per job here, server CPU per job\n")
	us := func(x float64) string { return fmt.Sprintf("%.0fµs", x*1e6) }
	for _, c := range med {
		fmt.Printf("      %3.0f %6.1f %9s %9s %7s %7s\n", c.n, c.k, us(c.turn), us(c.write), us(c.cpu), us(c.serverCPU))
	}
	if med[0].write > 0 {
		oneWriterBound(engine, med)
		return
	}
	oneStepBound(engine, med)
	atOnceBound(engine, med)
}

// medianCosts is, for each of sweepSizes, the median of each cost over
// rounds.
func medianCosts(rounds [][]cycleCost) []cycleCost {
	med := make([]cycleCost, len(sweepSizes))
	for i := range sweepSizes {
		pick := func(f func(cycleCost) float64) float64 {
			var xs []float64
			for _, r := range rounds {
				xs = append(xs, f(r[i]))
			}
			return median(xs)
		}
		med[i] = cycleCost{n: float64(sweepSizes[i]), k: pick(func(c cycleCost) float64 { return c.k }),
			turn: pick(func(c cycleCost) float64 { return c.turn }), write: pick(func(c cycleCost) float64 { return c.write }),
			cpu: pick(func(c cycleCost) float64 { return c.cpu }), serverCPU: pick(func(c cycleCost) float64 { return c.serverCPU })}
	}
	return med
}

// slotWait is what a slot of the sleeping Work(100) may wait per job at
// 0.85 of the 10,000 jobs/s: 100 / 8,500 s − 10 ms.
const slotWait = 100.0/8500 - 0.010

// oneWriterBound prints the bound of the sleeping Work(100) that the
// write transactions of the no-op pools med put on any pool of an engine
// with one writer, and how long the smallest of them took.
func oneWriterBound(engine string, med []cycleCost) {
	C, c := fitLine(med, func(c cycleCost) float64 { return c.write })
	x := sleepBound(100, 0.010, C, c)
	fmt.Printf("    %s, one writer (any pool): write transaction W(k) = %v + %v·k; <= %.0f jobs/s, %.2f of 10,000; "+
		"W of %.1f results: %v (a slot may wait %v)\n", engine, seconds(C), seconds(c), x, x/10000, med[0].k, seconds(med[0].write), seconds(slotWait))
}

// oneStepBound prints the bound of the sleeping Work(100) that the no-op
// pools' cycles med put on Work as built, one step at a time.
func oneStepBound(engine string, med []cycleCost) {
	C, c := fitLine(med, func(c cycleCost) float64 { return c.turn })
	x := sleepBound(100, 0.010, C, c)
	fmt.Printf("    %s, one step at a time (Work as built): time per cycle T(k) = %v + %v·k; <= %.0f jobs/s, %.2f of 10,000\n",
		engine, seconds(C), seconds(c), x, x/10000)
}

// atOnceBound prints the bound of the sleeping Work(100) that CPU puts on
// a pool that ran several cycles at once: its cycles must take at most
// slotWait, and cost the CPU per job of the biggest no-op pool of med whose
// cycles did.
func atOnceBound(engine string, med []cycleCost) {
	var fit *cycleCost
	for i := range med {
		if med[i].turn <= slotWait {
			fit = &med[i]
		}
	}
	if fit == nil {
		fmt.Printf("    %s, cycles at once: no no-op pool's cycle took <= %v, not even one of 1 job (%v)\n", engine, seconds(slotWait), seconds(med[0].turn))
		return
	}
	perJob, cores := fit.cpu+fit.serverCPU, float64(runtime.NumCPU())
	fmt.Printf("    %s, cycles at once: the biggest within %v: n=%.0f, %v per cycle; CPU per job there %v here + %v server: <= %.0f jobs/s on %.0f cores, %.2f of 10,000\n",
		engine, seconds(slotWait), fit.n, seconds(fit.turn), seconds(fit.cpu), seconds(fit.serverCPU), cores/perJob, cores, cores/perJob/10000)
}

// seconds is s seconds as a duration, rounded to 100 ns for printing.
func seconds(s float64) time.Duration { return time.Duration(s * 1e9).Round(100 * time.Nanosecond) }

// fitLine fits y(c) = C + c·k over cs by least squares.
func fitLine(cs []cycleCost, y func(cycleCost) float64) (C, c float64) {
	var sx, sy, sxx, sxy float64
	for _, p := range cs {
		sx, sy, sxx, sxy = sx+p.k, sy+y(p), sxx+p.k*p.k, sxy+p.k*y(p)
	}
	m := float64(len(cs))
	c = (m*sxy - sx*sy) / (m*sxx - sx*sx)
	return (sy - c*sx) / m, c
}

// A sleepProbe measures an engine for sleepMode: observe starts counting
// the pool's write transactions and their time from BEGIN to COMMIT, and
// stop returns them (0, 0: the engine cannot tell); serverCPU is the
// server's CPU time so far, in seconds (0: not known); commit is the
// median latency of a bare write transaction, one row updated and
// committed.
type sleepProbe struct {
	observe   func() (stop func() (txs int64, write time.Duration))
	serverCPU func() float64
	commit    func() time.Duration
}

func sqliteSleepMode() {
	bares := 0
	sleepMode("sqlite", func() *leaseq.Queue {
		return newLeaseq(fmt.Sprintf("pool-sleep-%d.db", sleeps.Add(1)), "FULL", leaseq.Options{})
	}, sleepProbe{
		observe: func() func() (int64, time.Duration) {
			var txs, write atomic.Int64
			restore := sqlite.ObserveTxs(func(t sqlite.TxTimes) { txs.Add(1); write.Add(int64(t.Begin + t.Run + t.End)) })
			return func() (int64, time.Duration) { restore(); return txs.Load(), time.Duration(write.Load()) }
		},
		serverCPU: func() float64 { return 0 },
		commit: func() time.Duration {
			bares++
			b := newBare(fmt.Sprintf("pool-sleep-bare-%d.db", bares), "FULL")
			defer b.db.Close()
			return medianLatency(func() { b.commit() })
		},
	})
}

// sleeps numbers the sleeping modes' SQLite files, each fresh.
var sleeps atomic.Int64

func pgSleepMode() {
	s := server()
	sleepMode("postgres", func() *leaseq.Queue { q, _ := pgLeaseq("pool_sleep", 120); return q }, sleepProbe{
		observe:   func() func() (int64, time.Duration) { return func() (int64, time.Duration) { return 0, 0 } },
		serverCPU: s.serverCPU,
		commit: func() time.Duration {
			d := newPGDatabase("pool_sleep_bare")
			db := s.open(d.name)
			defer db.Close()
			_, err := db.Exec("CREATE TABLE bare (id int PRIMARY KEY, n int NOT NULL); INSERT INTO bare VALUES (1, 0)")
			check(err)
			return medianLatency(func() { _, err := db.Exec("UPDATE bare SET n = n + 1 WHERE id = 1"); check(err) })
		},
	})
}

// medianLatency is the median time of 301 calls of f.
func medianLatency(f func()) time.Duration {
	ds := make([]time.Duration, 301)
	for i := range ds {
		t0 := time.Now()
		f()
		ds[i] = time.Since(t0)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// sleepBound is the most jobs per second that slots slots running handlers
// of run seconds each can do when every write transaction costs at least
// commit seconds plus perJob seconds for each job whose result it records
// and whose successor it claims, and the transactions run one at a time
// (SQLite's one writer). At x jobs/s in n cycles a second, a slot waits on
// average at least commit + perJob·x/n (a job of a bigger cycle than the
// mean waits longer, so the mean of what jobs wait is at least the mean
// cycle's time), and n·commit + x·perJob <= 1 second; so slots/x − run >=
// commit / (1 − x·perJob). The largest such x, by bisection (the left side
// falls and the right rises as x grows).
func sleepBound(slots, run, commit, perJob float64) float64 {
	lo, hi := 0.0, slots/run
	if perJob > 0 {
		hi = min(hi, 1/perJob)
	}
	for range 100 {
		x := (lo + hi) / 2
		if slots/x-run >= commit/(1-x*perJob) {
			lo = x
		} else {
			hi = x
		}
	}
	return lo
}

// durationsOf rounds seconds to durations of 10 µs, for printing.
func durationsOf(secs []float64) []time.Duration {
	ds := make([]time.Duration, len(secs))
	for i, s := range secs {
		ds[i] = time.Duration(s * 1e9).Round(10 * time.Microsecond)
	}
	return ds
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
