package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leaseq/leaseq"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// The pg-* modes: leaseq's PostgreSQL engine, and River v0.51.2 on
// riverpgxv5 as its peer, on one server (see pgserver.go) with the
// server's default settings, fsync on. Each benchmark gets databases of
// its own, so River and leaseq never share a table. leaseq gets a
// database/sql pool through pgx's stdlib driver, River a pgxpool, each of
// the size a mode names; leaseq's pool keeps as many idle connections as it
// may open (database/sql keeps 2 by default, and a pool that closes the
// rest after every burst measures connection set-up, not the queue).

// pgDatabase is a fresh database, with the server's counters as they
// were when it was made.
type pgDatabase struct {
	name  string
	start pgCounts
}

func newPGDatabase(what string, settings ...string) pgDatabase {
	s := server()
	name := s.createDB(what, settings...)
	return pgDatabase{name, s.counts(name)}
}

// perJob is what k jobs cost the server since the database was made: its
// transactions, and the server's WAL flushes and bytes, each per job. Call
// it once every pool on the database is closed.
func (d pgDatabase) perJob(k int) pgCounts {
	c := server().counts(d.name)
	per := float64(k)
	return pgCounts{(c.xacts - d.start.xacts) / per, (c.walSyncs - d.start.walSyncs) / per,
		(c.walBytes - d.start.walBytes) / per, (c.cpu - d.start.cpu) / per}
}

func (c pgCounts) String() string { return fmt.Sprintf("%.2f transactions, %s", c.xacts, c.server()) }

// server is the part of the counts that is the whole server's.
func (c pgCounts) server() string {
	s := fmt.Sprintf("%.3f WAL flushes, %.0f WAL bytes", c.walSyncs, c.walBytes)
	if server().pid != 0 {
		s += fmt.Sprintf(", server CPU %v", time.Duration(c.cpu*float64(time.Second)).Round(time.Microsecond))
	}
	return s
}

// pgLeaseq is a Queue with the server's clock on a fresh database whose
// pool opens and keeps conns connections.
func pgLeaseq(what string, conns int, settings ...string) (*leaseq.Queue, pgDatabase) {
	d := newPGDatabase(what, settings...)
	db := server().open(d.name)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return newLeaseqOn(db, leaseq.Options{}), d
}

func closeLeaseq(q *leaseq.Queue) {
	check(q.Close())
	check(q.DB().Close())
}

// pgRiverDriver is River's driver on a fresh database whose pool holds at
// most conns connections.
func pgRiverDriver(what string, conns int) (*riverpgxv5.Driver, *pgxpool.Pool, pgDatabase) {
	d := newPGDatabase(what)
	cfg, err := pgxpool.ParseConfig(server().url(d.name))
	check(err)
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	check(err)
	return riverpgxv5.New(pool), pool, d
}

// pgRiverInserter is a River client that only inserts, on a migrated fresh
// database.
func pgRiverInserter(what string, conns int) (*river.Client[pgx.Tx], *pgxpool.Pool, pgDatabase) {
	driver, pool, d := pgRiverDriver(what, conns)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	check(err)
	_, err = mig.Migrate(context.Background(), rivermigrate.DirectionUp, nil)
	check(err)
	client, err := river.NewClient(driver, &river.Config{Logger: quiet})
	check(err)
	return client, pool, d
}

// pgWorkConns is the pool size of either side in pg-work: room for 16
// handlers' writes and the claims, heartbeats and bookkeeping beside them.
const pgWorkConns = 32

// pgWorkMode runs Work(16) and River's 16 workers end to end on the same
// number of jobs, a fresh database each per round.
func pgWorkMode() {
	server()
	k := n(20000)
	var cpu, riverCPU []time.Duration
	var lqCost, riverCost []pgCounts
	var workServer, riverRates []float64
	runRounds(fmt.Sprintf("pg-work: the worker pool end to end on PostgreSQL, %d jobs, no-op handler, pools of %d connections", k, pgWorkConns), []measure{
		{"leaseq Work, Concurrency 16", "jobs/s", func() float64 {
			q, d := pgLeaseq("work_leaseq", pgWorkConns)
			fillLeaseq(q, k)
			server0 := server().serverCPU()
			r, c := workFilled(q, 16, k, func() {})
			workServer = append(workServer, (server().serverCPU()-server0)/float64(k))
			closeLeaseq(q)
			cpu = append(cpu, c)
			lqCost = append(lqCost, d.perJob(k))
			return r
		}},
		{"River 16 workers (riverpgxv5, FetchCooldown 1ms, FetchPollInterval 10ms)", "jobs/s", func() float64 {
			driver, pool, d := pgRiverDriver("work_river", pgWorkConns)
			r, c := riverRateOn(driver, 16, k)
			pool.Close()
			riverCPU = append(riverCPU, c)
			riverCost = append(riverCost, d.perJob(k))
			riverRates = append(riverRates, r)
			return r
		}},
	}, []ratio{
		{"Work(16) / River(16)", 0, 1, ">= 2"},
	})
	fmt.Printf("  CPU per job of this process: Work(16) %v, River(16) %v (medians)\n",
		time.Duration(median(durations(cpu))), time.Duration(median(durations(riverCPU))))
	fmt.Printf("  per job, enqueueing included, Work(16): %v; River(16): %v (medians)\n", medianCounts(lqCost), medianCounts(riverCost))
	if w := median(workServer); w > 0 {
		printBudget("Work(16)", 2*median(riverRates), median(durations(cpu))/1e9+w)
	}
}

// pgBatchMode inserts batches of 100 from one goroutine: EnqueueBatch
// against River's InsertMany and InsertManyFast, in alternating chunks of
// 10 batches.
func pgBatchMode() {
	server()
	const size = 100
	k := n(20000)
	ctx := context.Background()
	lq, lqDB := pgLeaseq("batch_leaseq", 4)
	many, manyPool, manyDB := pgRiverInserter("batch_river_many", 4)
	fast, fastPool, fastDB := pgRiverInserter("batch_river_fast", 4)
	params := make([]river.InsertManyParams, size)
	for i := range params {
		params[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	batches := func(k int, insert func()) {
		for range k / size {
			insert()
		}
	}
	var rates []float64
	runRounds(fmt.Sprintf("pg-batch: one goroutine, batches of 100, one transaction each, %d jobs per round (alternating chunks of 10 batches)", k), []measure{
		{"leaseq EnqueueBatch(100)", "jobs/s", func() float64 {
			rates = alternating(k, 10*size,
				func(k int) { batches(k, func() { check(lq.EnqueueBatch(ctx, jobs(size))) }) },
				func(k int) { batches(k, func() { _, err := many.InsertMany(ctx, params); check(err) }) },
				func(k int) { batches(k, func() { _, err := fast.InsertManyFast(ctx, params); check(err) }) })
			return rates[0]
		}},
		{"River InsertMany(100)", "jobs/s", func() float64 { return rates[1] }},
		{"River InsertManyFast(100)", "jobs/s", func() float64 { return rates[2] }},
	}, []ratio{
		{"leaseq EnqueueBatch(100) / River InsertMany(100)", 0, 1, ">= 1"},
		{"leaseq EnqueueBatch(100) / River InsertManyFast(100)", 0, 2, "-"},
	})
	closeLeaseq(lq)
	manyPool.Close()
	fastPool.Close()
	perBatch := func(d pgDatabase) float64 { return d.perJob(k * *rounds / size).xacts }
	fmt.Printf("  transactions per batch (River's include its migrations): EnqueueBatch %.2f, InsertMany %.2f, InsertManyFast %.2f\n",
		perBatch(lqDB), perBatch(manyDB), perBatch(fastDB))
}

// pgEnqueueConns is the pool size of either side in pg-enqueue: one
// connection per goroutine, and one for leaseq's notifications (River
// sends its own inside the insert's transaction).
const pgEnqueueConns = 17

// pgEnqueueMode runs single-job inserts from 16 goroutines: Enqueue against
// River's Insert, in alternating chunks of 1,000 jobs. The server's CPU is
// read around each chunk, so each side is charged what the server spent
// while it alone ran.
func pgEnqueueMode() {
	server()
	const g = 16
	k := n(20000)
	ctx := context.Background()
	lq, lqDB := pgLeaseq("enqueue_leaseq", pgEnqueueConns)
	client, pool, riverDB := pgRiverInserter("enqueue_river", pgEnqueueConns)
	var cpu [2]float64 // the server's seconds while each side ran, this round
	var rates []float64
	timed := func(side int, run func(k int)) func(k int) {
		return func(k int) {
			before := server().serverCPU()
			run(k)
			cpu[side] += server().serverCPU() - before
		}
	}
	runRounds(fmt.Sprintf("pg-enqueue: %d goroutines, one job per call, %d jobs per round (alternating chunks of 1,000), pools of %d connections", g, k, pgEnqueueConns), []measure{
		{"leaseq Enqueue", "jobs/s", func() float64 {
			cpu = [2]float64{}
			rates = alternating(k, 1000,
				timed(0, func(k int) { perSecond(g, k, 1, func(int) { check(lq.Enqueue(ctx, jobs(1)[0])) }) }),
				timed(1, func(k int) {
					perSecond(g, k, 1, func(int) { _, err := client.Insert(ctx, noopArgs{}, nil); check(err) })
				}))
			return rates[0]
		}},
		{"River Insert", "jobs/s", func() float64 { return rates[1] }},
		{"leaseq Enqueue, server CPU per job", "µs", func() float64 { return cpu[0] * 1e6 / float64(k) }},
		{"River Insert, server CPU per job", "µs", func() float64 { return cpu[1] * 1e6 / float64(k) }},
	}, []ratio{
		{"Enqueue / River Insert", 0, 1, ">= 1"},
		{"server CPU per job, Enqueue / River Insert", 2, 3, "<= 1"},
	})
	closeLeaseq(lq)
	pool.Close()
	perJob := func(d pgDatabase) pgCounts { return d.perJob(k * *rounds) }
	fmt.Printf("  per job: Enqueue %.2f transactions, River Insert %.2f (River's include its migrations)\n",
		perJob(lqDB).xacts, perJob(riverDB).xacts)
}

// claimTally counts what went wrong in a Claim+Finish loop: every count but
// empty is a failure.
type claimTally struct {
	claimErrs, finishErrs, refused, empty atomic.Int64
	firstErr                              atomic.Value // the first error, for its text
}

func (t *claimTally) err(err error) { t.firstErr.CompareAndSwap(nil, err.Error()) }

// report prints the tally, with a FAIL line for any failure.
func (t *claimTally) report(what string) {
	fmt.Printf("  %s: claim errors %d, finish errors %d, refused finishes %d, empty claims (retried) %d\n",
		what, t.claimErrs.Load(), t.finishErrs.Load(), t.refused.Load(), t.empty.Load())
	if t.claimErrs.Load()+t.finishErrs.Load()+t.refused.Load() > 0 {
		fail("%s: errors reached the caller; first: %v", what, t.firstErr.Load())
	}
}

// stallLimit is how long a claim loop may go without a finished job before
// it is declared stuck: far beyond any commit or lock wait here.
const stallLimit = 30 * time.Second

// claimFinishLoop runs k Claim+Finish pairs on g goroutines, counting every
// error instead of stopping at it. A claim that finds nothing (all the
// jobs it looked at were locked) is tried again. If no job finishes for
// stallLimit, the loops are stuck: that is a failure, and the program ends
// with every goroutine's stack.
func claimFinishLoop(q *leaseq.Queue, g, k int, t *claimTally) {
	ctx := context.Background()
	var next, done atomic.Int64
	stuck := make(chan struct{})
	go watchStall(&done, stuck)
	defer close(stuck)
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(k) {
				c, ok, err := q.Claim(ctx, "claimer", time.Minute)
				for err == nil && !ok {
					t.empty.Add(1)
					c, ok, err = q.Claim(ctx, "claimer", time.Minute)
				}
				if err != nil {
					t.claimErrs.Add(1)
					t.err(err)
					continue
				}
				ok, err = q.Finish(ctx, c)
				switch {
				case err != nil:
					t.finishErrs.Add(1)
					t.err(err)
				case !ok:
					t.refused.Add(1)
					t.err(fmt.Errorf("finish of %q (token %d) refused", c.ID, c.Token))
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
}

// watchStall ends the program if done does not move for stallLimit before
// stop is closed.
func watchStall(done *atomic.Int64, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, since := done.Load(), time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if d := done.Load(); d != last {
			last, since = d, time.Now()
			continue
		}
		if time.Since(since) >= stallLimit {
			fail("no job finished for %v: the claim loops are stuck (stacks follow)", stallLimit)
			pprof.Lookup("goroutine").WriteTo(os.Stdout, 1)
			fatalf("stuck")
		}
	}
}

// pgClaimersMode runs Claim+Finish loops of 64 goroutines on a pool of 64
// connections, and of 16 on 16, in alternating chunks, each on its own
// database, every call its own commit.
func pgClaimersMode() {
	server()
	k := n(20000)
	const chunk = 2000
	wide, wideDB := pgLeaseq("claimers_64", 64)
	narrow, narrowDB := pgLeaseq("claimers_16", 16)
	fillLeaseq(wide, k**rounds)
	fillLeaseq(narrow, k**rounds)
	var wideTally, narrowTally claimTally
	var rates []float64
	runRounds(fmt.Sprintf("pg-claimers: goroutines calling Claim+Finish at once, one connection each, %d jobs per round (alternating chunks of %d)", k, chunk), []measure{
		{"leaseq Claim+Finish, 64 goroutines, 64 connections", "jobs/s", func() float64 {
			rates = alternating(k, chunk,
				func(k int) { claimFinishLoop(wide, 64, k, &wideTally) },
				func(k int) { claimFinishLoop(narrow, 16, k, &narrowTally) })
			return rates[0]
		}},
		{"leaseq Claim+Finish, 16 goroutines, 16 connections", "jobs/s", func() float64 { return rates[1] }},
	}, []ratio{
		{"64 goroutines / 16", 0, 1, "-"},
	})
	wideTally.report("64 goroutines")
	narrowTally.report("16 goroutines")
	closeLeaseq(wide)
	closeLeaseq(narrow)
	// Transactions are counted per database; the WAL and the server's CPU
	// only for the server, over both databases' jobs.
	w, n := wideDB.perJob(k**rounds), narrowDB.perJob(2*k**rounds)
	fmt.Printf("  per job, enqueueing included: transactions %.2f (64 goroutines), %.2f (16); both together: %v\n",
		w.xacts, 2*n.xacts, n.server())
}

// pgDepthMode measures the median latency of one Claim by queue shape, the
// shapes taking turns one claim each, as the SQLite depth mode does. Each
// shape has its own database with synchronous_commit off, the counterpart
// of SQLite's synchronous=OFF there: a claim's commit then does not wait
// for the WAL flush, whose time would hide the query's. After building,
// each database is vacuumed and analyzed, as autovacuum would have done to
// a queue this size by the time it is in service.
func pgDepthMode() {
	server()
	const claims = 100
	ctx := context.Background()
	setup := time.Now()
	shapes := []struct {
		name, title string
		build       func(q *leaseq.Queue)
	}{
		{"small", "1,000 pending", func(q *leaseq.Queue) { fillLeaseq(q, smallPending) }},
		{"deep", "200,000 pending", func(q *leaseq.Queue) { fillLeaseq(q, deepPending) }},
		{"behind", "1,000 ready behind 50,000 live leases", func(q *leaseq.Queue) {
			fillLeaseq(q, behindLeases)
			for k := 0; k < behindLeases; k += 1000 {
				_, err := q.ClaimBatch(ctx, "holder", 24*time.Hour, 1000)
				check(err)
			}
			fillLeaseq(q, behindPending)
		}},
		{"scheduled", "1,000 pending + 200,000 scheduled for tomorrow", func(q *leaseq.Queue) {
			tomorrow := time.Now().Add(24 * time.Hour)
			fillLeaseqWith(q, besideRows, func(j *leaseq.Job) { j.RunAt = tomorrow })
			fillLeaseq(q, smallPending)
		}},
	}
	var names []string
	var ops []timedOp
	for _, shape := range shapes {
		q, _ := pgLeaseq("depth_"+shape.name, 2, "synchronous_commit = off")
		defer closeLeaseq(q)
		shape.build(q)
		_, err := q.DB().Exec("VACUUM ANALYZE leaseq_jobs")
		check(err)
		names = append(names, "leaseq Claim, "+shape.title)
		// Each timed claim is followed by an untimed enqueue, so the shape
		// stays as built however many rounds run.
		ops = append(ops, timedOp{func() {
			c, ok, err := q.Claim(ctx, "worker", 24*time.Hour)
			check(err)
			if !ok || c.Priority != 0 {
				fatalf("leaseq: claimed %q (ok=%v, priority %d); want a job of priority 0", c.ID, ok, c.Priority)
			}
		}, func() { check(q.Enqueue(ctx, jobs(1)[0])) }})
	}
	fmt.Printf("\n(pg-depth: queue shapes built in %v)\n", time.Since(setup).Round(time.Second))
	var lat []float64
	ms := make([]measure, len(names))
	for i, name := range names {
		ms[i] = measure{name, "µs", func() float64 {
			if i == 0 {
				lat = medianLatencies(claims, ops)
			}
			return lat[i] // all measured in turn, just above
		}}
	}
	rs := []ratio{
		{"200k pending / 1k", 1, 0, "<= 1.5"},
		{"behind 50k live leases / 1k", 2, 0, "<= 1.5"},
		{"beside 200k scheduled / 1k", 3, 0, "<= 1.5"},
	}
	runRounds(fmt.Sprintf("pg-depth: median latency of one Claim by queue shape, %d claims each per round, in turn (synchronous_commit=off)", claims), ms, rs)
}

// medianCounts is the median of each counter.
func medianCounts(cs []pgCounts) pgCounts {
	var x, w, b, cpu []float64
	for _, c := range cs {
		x, w, b, cpu = append(x, c.xacts), append(w, c.walSyncs), append(b, c.walBytes), append(cpu, c.cpu)
	}
	return pgCounts{median(x), median(w), median(b), median(cpu)}
}
