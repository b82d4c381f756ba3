// Command bench compares leaseq with goqite v0.4.0, with River v0.51.2 on
// SQLite (the work mode) and with a bare SQLite commit loop, in one process, in alternating rounds, so that a disk or CPU
// that is slower during one round slows all three alike and the ratios stay
// meaningful. The pg-* modes compare leaseq's PostgreSQL engine with River
// v0.51.2 on riverpgxv5, on one server (see below).
//
// Every database is a file opened through modernc.org/sqlite with the same
// DSN: journal_mode=-journal (by default the mode leaseq.Open sets),
// synchronous=FULL (OFF in the depth mode, so that query cost is not hidden
// behind fsync), busy_timeout=5000, foreign_keys on, and _txlock=immediate
// so that goqite's transactions take the write lock up front as leaseq's do.
// goqite's pool is limited to one connection, as its README sets it up;
// leaseq gets the *sql.DB as it is.
//
// Modes:
//
//	single   16 goroutines each making single calls: leaseq Claim+Finish
//	         and Enqueue against goqite Receive+Delete and Send; and leaseq
//	         with group commit off, one goroutine, one job per transaction,
//	         against the bare one-row-UPDATE-per-transaction loop.
//	batch    one goroutine, batches of 100: EnqueueBatch and
//	         ClaimBatch+FinishBatch against goqite Send and Receive+Delete.
//	depth    the median latency of one claim (leaseq Claim, goqite Receive)
//	         by queue shape: 1,000 pending; 200,000 pending; 1,000 ready
//	         behind 50,000 live leases; and, for leaseq, 1,000 pending beside
//	         50,000 leases that ended with attempts left (a crashed fleet),
//	         200,000 jobs scheduled for tomorrow, 200,000 of lower
//	         priority, 200,000 done, or 200,000 done and purged. The shapes
//	         take turns, one claim each.
//	idle     16 goroutines calling Enqueue, alone and while 32 more poll
//	         Claim on the same queue, which has nothing claimable; the two
//	         take turns in chunks of 300 jobs.
//	queues   16 goroutines calling Claim+Finish on one queue, and spread
//	         over four named queues on one *sql.DB, in turns of 300 jobs.
//	journal  the bare loop and leaseq one job per transaction (group commit
//	         off) in each rollback-journal mode: DELETE, TRUNCATE, PERSIST.
//	hooks    Work with Concurrency 16 on 20,000 jobs with leaseqotel's
//	         middleware and both modules' outcome hooks on (rules 51, 52),
//	         against the same pool without them.
//	work     the worker pool end to end on 20,000 jobs with a no-op
//	         handler: leaseq Work with Concurrency 16 against River's 16
//	         workers (riversqlite, one connection, FetchCooldown 1ms,
//	         FetchPollInterval 10ms), and Work with Concurrency 100 against
//	         a hand loop of ClaimBatch(100)+FinishBatch; then the wake-up
//	         latency of an idle pool, its CPU per job, and what an idle pool
//	         of 16 costs in 10 s (CPU, and commits to the file: none).
//
// The pg-* modes run on the PostgreSQL server at -pg, else at
// $LEASEQ_POSTGRES_URL, else on a throwaway cluster started from the
// installed server binaries (/usr/lib/postgresql/*/bin) and stopped at
// exit; its settings are the defaults, fsync on. Every benchmark gets fresh
// databases of its own (River's migrated by rivermigrate), dropped at exit.
// Each mode reports beside its figures what a job cost the server:
// transactions, WAL flushes and bytes, and (on a cluster of its own) the
// server's CPU time. They are not in the default -modes.
//
//	pg-work      the worker pool end to end on 20,000 jobs with a no-op
//	             handler, a fresh database each per round: leaseq Work with
//	             Concurrency 16 against River's 16 workers (FetchCooldown
//	             1ms, FetchPollInterval 10ms), both on pools of 32
//	             connections.
//	pg-enqueue   16 goroutines inserting one job per call: Enqueue
//	             against River's Insert, in alternating chunks of 1,000
//	             jobs, with the server's CPU per job of each (pools of 17).
//	pg-batch     one goroutine inserting batches of 100, one transaction
//	             each: EnqueueBatch against River's InsertMany and
//	             InsertManyFast, in alternating chunks of 10 batches.
//	pg-claimers  Claim+Finish loops of 64 goroutines on a pool of 64
//	             connections and of 16 on 16, in alternating chunks: every
//	             error, refused finish, and a stall of 30 s (a deadlock) is a
//	             FAIL line, and the program exits with status 1.
//	pg-depth     the median latency of one Claim by queue shape, in turn:
//	             1,000 pending; 200,000 pending; 1,000 ready behind 50,000
//	             live leases; 1,000 pending beside 200,000 scheduled for
//	             tomorrow (synchronous_commit off, as depth runs SQLite with
//	             synchronous=OFF, so that query cost is not hidden behind
//	             the WAL flush).
//
// The pool and pg-pool modes (pool.go) measure the pool's batched writes
// (rule 48) against hand loops, and its heartbeats' write transactions;
// sleep and pg-sleep only the sleeping Work(100) of each, with what bounds
// it; pg-procs (procs.go) four processes of Work(16) against four of
// River. The PostgreSQL modes print what their targets would cost the
// machine's CPU at the rate they ask for (printBudget). pg-schema8
// (schema8.go) measures PostgreSQL schema version 9 against version 8.
//
// The orders and pg-orders modes (orders.go) measure the service's own
// transactions: InTx, FinishTx and EnqueueTx beside a pool of long
// handlers; finishtx and pg-finishtx only their Work(16) with FinishTx
// handlers against Work(16) with no-op ones. They are not in the default
// -modes either.
//
// Usage:
//
//	go run . [-rounds 3] [-modes single,batch,depth,idle,queues,journal,work]
//	         [-scale 1] [-journal MODE] [-dir DIR] [-cpuprofile FILE]
//	go run . -modes pg-work,pg-enqueue,pg-batch,pg-claimers,pg-depth [-pg URL] ...
//	go run . -modes orders,pg-orders [-orders-for 10s] ...
//	go run . -modes finishtx,pg-finishtx ...
package main

import (
	"context"
	"database/sql"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq"
	"maragu.dev/goqite"
	_ "modernc.org/sqlite"
)

// goqiteSchema is goqite v0.4.0's schema_sqlite.sql, byte for byte (MIT
// licence, Copyright (c) Maragu ApS). goqite does not export it.
//
//go:embed goqite_schema_sqlite.sql
var goqiteSchema string

var (
	rounds  = flag.Int("rounds", 3, "alternating rounds per mode")
	modes   = flag.String("modes", "single,batch,depth,idle,queues,journal,work", "comma-separated modes to run")
	scale   = flag.Float64("scale", 1, "multiplies the number of jobs measured per round (not the depth shapes)")
	journal = flag.String("journal", leaseq.JournalMode, "journal_mode of every database outside the journal mode")
	dir     = flag.String("dir", "", "directory for the database files (default: a new temporary directory)")
	cpuprof = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	child   = flag.String("work-child", "", "run as one process of pg-procs: leaseq or river")
	childDB = flag.String("child-url", "", "the database of a -work-child")
	counter = flag.String("change-counter", "", "print the file change counter of this SQLite file and exit (the pool mode's other process)")
	pgURL   = flag.String("pg", "", "postgres:// URL of the server for the pg-* modes (default: $LEASEQ_POSTGRES_URL, else a throwaway cluster)")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *counter != "" {
		fmt.Println(changeCounter(*counter))
		return
	}
	if *child != "" {
		workChild(*child, *childDB)
		return
	}
	start := time.Now()
	defer func() {
		runExitHooks()
		fmt.Printf("\n(total %v)\n", time.Since(start).Round(time.Second))
		if n := failures.Load(); n > 0 {
			fmt.Fprintf(os.Stderr, "%d FAIL lines on standard output\n", n)
			os.Exit(1)
		}
	}()
	if *dir == "" {
		d, err := os.MkdirTemp("", "leaseq-bench-")
		check(err)
		defer os.RemoveAll(d)
		*dir = d
	}
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	var sqliteVersion string
	db := open("version.db", "FULL")
	check(db.QueryRow("SELECT sqlite_version()").Scan(&sqliteVersion))
	db.Close()
	fmt.Printf("leaseq vs goqite v0.4.0 vs bare commits | %s %s/%s, %d CPUs | SQLite %s (modernc.org/sqlite v1.62.0) | rounds=%d scale=%g journal_mode=%s\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), sqliteVersion, *rounds, *scale, *journal)
	for _, m := range strings.Split(*modes, ",") {
		switch m {
		case "single":
			singleMode()
		case "batch":
			batchMode()
		case "depth":
			depthMode()
		case "idle":
			idleMode()
		case "queues":
			queuesMode()
		case "journal":
			journalMode()
		case "work":
			workMode()
		case "hooks":
			hooksMode()
		case "pool":
			poolMode()
		case "pg-pool":
			pgPoolMode()
		case "pg-schema8":
			pgSchema8Mode()
		case "sleep":
			sqliteSleepMode()
		case "pg-sleep":
			pgSleepMode()
		case "pg-procs":
			pgProcsMode()
		case "pg-work":
			pgWorkMode()
		case "pg-enqueue":
			pgEnqueueMode()
		case "pg-batch":
			pgBatchMode()
		case "pg-claimers":
			pgClaimersMode()
		case "pg-depth":
			pgDepthMode()
		case "orders":
			ordersMode()
		case "pg-orders":
			pgOrdersMode()
		case "finishtx":
			finishTxMode()
		case "pg-finishtx":
			pgFinishTxMode()
		default:
			fatalf("unknown mode %q", m)
		}
	}
}

// n scales a job count by -scale.
func n(base int) int { return max(1, int(float64(base)**scale)) }

// measure is one thing timed per round.
type measure struct {
	name string
	unit string
	run  func() float64
}

// ratio is a quotient of two measures (by index), with the target.
type ratio struct {
	name   string
	num    int
	den    int
	target string
}

// runRounds runs every measure once per round, in order, prints each round
// with its ratios, and prints the medians at the end.
func runRounds(title string, ms []measure, rs []ratio) {
	fmt.Printf("\n== %s\n", title)
	vals := make([][]float64, len(ms))
	quot := make([][]float64, len(rs))
	for r := 1; r <= *rounds; r++ {
		fmt.Printf("round %d:\n", r)
		for i, m := range ms {
			v := m.run()
			vals[i] = append(vals[i], v)
			fmt.Printf("  %-62s %12.1f %s\n", m.name, v, m.unit)
		}
		for i, q := range rs {
			x := vals[q.num][r-1] / vals[q.den][r-1]
			quot[i] = append(quot[i], x)
			fmt.Printf("  ratio %-56s %12.2f   (target %s)\n", q.name, x, q.target)
		}
	}
	fmt.Printf("medians over %d rounds:\n", *rounds)
	for i, m := range ms {
		fmt.Printf("  %-62s %12.1f %s\n", m.name, median(vals[i]), m.unit)
	}
	for i, q := range rs {
		fmt.Printf("  ratio %-56s %12.2f   (target %s)\n", q.name, median(quot[i]), q.target)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// open opens a database file in -dir with the shared DSN, in the -journal
// mode.
func open(name, synchronous string) *sql.DB { return openIn(name, synchronous, *journal) }

// openIn opens a database file in -dir with the shared DSN and journal_mode
// mode.
func openIn(name, synchronous, mode string) *sql.DB {
	path := filepath.Join(*dir, name)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode("+mode+")"+
		"&_pragma=synchronous("+synchronous+")&_pragma=foreign_keys(1)&_txlock=immediate")
	check(err)
	return db
}

func newLeaseq(name, synchronous string, opts leaseq.Options) *leaseq.Queue {
	return newLeaseqOn(open(name, synchronous), opts)
}

func newLeaseqOn(db *sql.DB, opts leaseq.Options) *leaseq.Queue {
	q, err := leaseq.New(context.Background(), db, opts)
	check(err)
	return q
}

func newGoqite(name, synchronous string) (*goqite.Queue, *sql.DB) {
	db := open(name, synchronous)
	db.SetMaxOpenConns(1)
	_, err := db.Exec(goqiteSchema)
	check(err)
	return goqite.New(goqite.NewOpts{DB: db, Name: "bench", Timeout: time.Hour}), db
}

// bare is the per-commit ceiling: one row, one UPDATE per BEGIN
// IMMEDIATE/COMMIT.
type bare struct{ db *sql.DB }

func newBare(name, synchronous string) bare { return newBareIn(name, synchronous, *journal) }

func newBareIn(name, synchronous, mode string) bare {
	db := openIn(name, synchronous, mode)
	db.SetMaxOpenConns(1)
	_, err := db.Exec("CREATE TABLE bare (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO bare VALUES (1, 0)")
	check(err)
	return bare{db}
}

func (b bare) commit() {
	tx, err := b.db.Begin()
	check(err)
	_, err = tx.Exec("UPDATE bare SET n = n + 1 WHERE id = 1")
	check(err)
	check(tx.Commit())
}

// perSecond runs do(i) for i in [0, total) on g goroutines and returns
// units per second, where each call of do counts per units.
func perSecond(g, total, per int, do func(i int)) float64 {
	return perSecondOn(g, total, per, func(_, i int) { do(i) })
}

// perSecondOn is perSecond for work that depends on which goroutine runs
// it: do(w, i) runs on goroutine w of [0, g).
func perSecondOn(g, total, per int, do func(w, i int)) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < total; i = int(next.Add(1)) - 1 {
				do(w, i)
			}
		}()
	}
	wg.Wait()
	return float64(total*per) / time.Since(start).Seconds()
}

// alternating runs each of runs in turn, chunk jobs at a time (run(k) does
// k jobs), until each has done total, and returns jobs per second for each.
// Measures that alternate this finely share the drift of a shared disk's
// fsync time and of the machine's load, which whole measures of a second
// each, one after the other, do not.
func alternating(total, chunk int, runs ...func(k int)) []float64 {
	spent := make([]time.Duration, len(runs))
	for done := 0; done < total; done += chunk {
		k := min(chunk, total-done)
		for i, run := range runs {
			start := time.Now()
			run(k)
			spent[i] += time.Since(start)
		}
	}
	rates := make([]float64, len(runs))
	for i := range runs {
		rates[i] = float64(total) / spent[i].Seconds()
	}
	return rates
}

// commitLoop is a loop of one transaction per commit: each call of step
// commits commits transactions.
type commitLoop struct {
	step    func()
	commits int
}

// interleaved measures loops in turn, in chunks of chunk commits each, until
// each has made total commits, so that a disk whose fsync time drifts during
// the run weighs on all alike. It returns commits per second for each.
func interleaved(total, chunk int, loops ...commitLoop) []float64 {
	spent := make([]time.Duration, len(loops))
	for done := 0; done < total; done += chunk {
		for i, l := range loops {
			start := time.Now()
			for range chunk / l.commits {
				l.step()
			}
			spent[i] += time.Since(start)
		}
	}
	commits := float64((total + chunk - 1) / chunk * chunk)
	rates := make([]float64, len(loops))
	for i := range loops {
		rates[i] = commits / spent[i].Seconds()
	}
	return rates
}

// seq names job i of a run, unique across rounds.
var seq atomic.Int64

func jobs(k int) []leaseq.Job {
	js := make([]leaseq.Job, k)
	for i := range js {
		js[i] = leaseq.Job{ID: fmt.Sprintf("job-%d", seq.Add(1)), Qty: 1, Payload: []byte("payload")}
	}
	return js
}

// fillLeaseq enqueues k jobs, 1000 per transaction.
func fillLeaseq(q *leaseq.Queue, k int) { fillLeaseqWith(q, k, func(*leaseq.Job) {}) }

// fillLeaseqWith enqueues k jobs, 1000 per transaction, each changed by set
// first.
func fillLeaseqWith(q *leaseq.Queue, k int, set func(*leaseq.Job)) {
	for k > 0 {
		c := min(k, 1000)
		js := jobs(c)
		for i := range js {
			set(&js[i])
		}
		check(q.EnqueueBatch(context.Background(), js))
		k -= c
	}
}

// finishAll claims and finishes every claimable job of q, 1000 per
// transaction.
func finishAll(q *leaseq.Queue) {
	ctx := context.Background()
	for {
		cs, err := q.ClaimBatch(ctx, "finisher", time.Hour, 1000)
		check(err)
		if len(cs) == 0 {
			return
		}
		oks, err := q.FinishBatch(ctx, cs)
		check(err)
		if slices.Contains(oks, false) {
			fatal("leaseq: a finish of a fresh claim was refused")
		}
	}
}

// fillGoqite sends k messages, 1000 per transaction.
func fillGoqite(q *goqite.Queue, db *sql.DB, k int) {
	ctx := context.Background()
	for k > 0 {
		c := min(k, 1000)
		tx, err := db.Begin()
		check(err)
		for range c {
			check(q.SendTx(ctx, tx, goqite.Message{Body: []byte("payload")}))
		}
		check(tx.Commit())
		k -= c
	}
}

func claimFinish(q *leaseq.Queue) {
	ctx := context.Background()
	c, ok, err := q.Claim(ctx, "worker", time.Hour)
	check(err)
	if !ok {
		fatal("leaseq: queue ran dry")
	}
	if ok, err := q.Finish(ctx, c); err != nil || !ok {
		fatalf("leaseq: finish %q: ok=%v err=%v", c.ID, ok, err)
	}
}

func receiveDelete(q *goqite.Queue) {
	ctx := context.Background()
	m, err := q.Receive(ctx)
	check(err)
	if m == nil {
		fatal("goqite: queue ran dry")
	}
	check(q.Delete(ctx, m.ID))
}

func singleMode() {
	const g = 16
	nLq, nGq, nBare := n(3000), n(400), n(400)
	var bareRate, soloRate float64
	lqCF := newLeaseq("single-leaseq-cf.db", "FULL", leaseq.Options{})
	lqEnq := newLeaseq("single-leaseq-enq.db", "FULL", leaseq.Options{})
	lqSolo := newLeaseq("single-leaseq-solo.db", "FULL", leaseq.Options{DisableGroupCommit: true})
	gqRD, gqRDdb := newGoqite("single-goqite-rd.db", "FULL")
	gqSend, _ := newGoqite("single-goqite-send.db", "FULL")
	b := newBare("single-bare.db", "FULL")
	fillLeaseq(lqCF, nLq**rounds)
	fillLeaseq(lqSolo, nBare/2**rounds+100)
	fillGoqite(gqRD, gqRDdb, nGq**rounds)
	ctx := context.Background()
	runRounds("single: 16 goroutines, one job per call (synchronous=FULL)", []measure{
		{"leaseq Claim+Finish, 16 goroutines (group commit)", "jobs/s", func() float64 {
			return perSecond(g, nLq, 1, func(int) { claimFinish(lqCF) })
		}},
		{"goqite Receive+Delete, 16 goroutines", "jobs/s", func() float64 {
			return perSecond(g, nGq, 1, func(int) { receiveDelete(gqRD) })
		}},
		{"leaseq Enqueue, 16 goroutines (group commit)", "jobs/s", func() float64 {
			return perSecond(g, nLq, 1, func(int) { check(lqEnq.Enqueue(ctx, jobs(1)[0])) })
		}},
		{"goqite Send, 16 goroutines", "jobs/s", func() float64 {
			return perSecond(g, nGq, 1, func(int) { check(gqSend.Send(ctx, goqite.Message{Body: []byte("payload")})) })
		}},
		{"bare one-row UPDATE per transaction, 1 goroutine", "commits/s", func() float64 {
			r := interleaved(nBare, 20, commitLoop{b.commit, 1}, commitLoop{func() { claimFinish(lqSolo) }, 2})
			bareRate, soloRate = r[0], r[1]
			return bareRate
		}},
		{"leaseq Claim, Finish: one per transaction, 1 goroutine", "commits/s", func() float64 {
			return soloRate // measured interleaved with the bare loop, just above
		}},
	}, []ratio{
		{"leaseq C+F 16g / goqite R+D 16g", 0, 1, ">= 10"},
		{"leaseq Enqueue 16g / goqite Send 16g", 2, 3, "-"},
		{"leaseq one job per transaction / bare commit", 5, 4, ">= 0.9"},
	})
}

func batchMode() {
	const size = 100
	nLq, nGq, nBare := n(5000), n(300), n(300)
	lqEnq := newLeaseq("batch-leaseq-enq.db", "FULL", leaseq.Options{})
	lqCF := newLeaseq("batch-leaseq-cf.db", "FULL", leaseq.Options{})
	gqRD, gqRDdb := newGoqite("batch-goqite-rd.db", "FULL")
	gqSend, _ := newGoqite("batch-goqite-send.db", "FULL")
	b := newBare("batch-bare.db", "FULL")
	fillLeaseq(lqCF, nLq**rounds)
	fillGoqite(gqRD, gqRDdb, nGq**rounds)
	ctx := context.Background()
	runRounds("batch: one goroutine, batches of 100 (goqite has no batch call: one message per call)", []measure{
		{"leaseq EnqueueBatch(100)", "jobs/s", func() float64 {
			return perSecond(1, nLq/size, size, func(int) { check(lqEnq.EnqueueBatch(ctx, jobs(size))) })
		}},
		{"goqite Send", "jobs/s", func() float64 {
			return perSecond(1, nGq, 1, func(int) { check(gqSend.Send(ctx, goqite.Message{Body: []byte("payload")})) })
		}},
		{"leaseq ClaimBatch(100)+FinishBatch", "jobs/s", func() float64 {
			return perSecond(1, nLq/size, size, func(int) {
				cs, err := lqCF.ClaimBatch(ctx, "worker", time.Hour, size)
				check(err)
				oks, err := lqCF.FinishBatch(ctx, cs)
				check(err)
				if len(cs) != size || slices.Contains(oks, false) {
					fatalf("leaseq: batch of %d claims, finished %v", len(cs), oks)
				}
			})
		}},
		{"goqite Receive+Delete", "jobs/s", func() float64 {
			return perSecond(1, nGq, 1, func(int) { receiveDelete(gqRD) })
		}},
		{"bare one-row UPDATE per transaction", "commits/s", func() float64 {
			return perSecond(1, nBare, 1, func(int) { b.commit() })
		}},
	}, []ratio{
		{"leaseq EnqueueBatch(100) / goqite Send", 0, 1, ">= 30"},
		{"leaseq ClaimBatch+FinishBatch(100) / goqite R+D", 2, 3, ">= 25"},
		{"leaseq EnqueueBatch(100) jobs / bare commits", 0, 4, "-"},
	})
}

// idleMode measures what idle pollers cost writers (rule 23 in leaseq's
// docs/rules.md): 16 goroutines call Enqueue alone, and while 32 more call Claim in
// a loop on the same Queue, in alternating chunks. The jobs are scheduled
// for tomorrow, so the queue never has anything claimable and every Claim
// is idle. Each measure has its own file, with the same history.
func idleMode() {
	const enqueuers, pollers = 16, 32
	nLq := n(3000)
	ctx := context.Background()
	alone := newLeaseq("idle-alone.db", "FULL", leaseq.Options{})
	polled := newLeaseq("idle-polled.db", "FULL", leaseq.Options{})
	tomorrow := time.Now().Add(24 * time.Hour)
	enqueue := func(q *leaseq.Queue, k int) {
		perSecond(enqueuers, k, 1, func(int) {
			j := jobs(1)[0]
			j.RunAt = tomorrow
			check(q.Enqueue(ctx, j))
		})
	}
	var rates []float64
	var polls int64
	var polling time.Duration
	runRounds("idle: 16 goroutines calling Enqueue, with and without 32 idle pollers (synchronous=FULL)", []measure{
		{"leaseq Enqueue, 16 goroutines, no pollers", "jobs/s", func() float64 {
			polls, polling = 0, 0
			rates = alternating(nLq, 300,
				func(k int) { enqueue(alone, k) },
				func(k int) {
					start := time.Now()
					polls += whilePolling(polled, pollers, func() { enqueue(polled, k) })
					polling += time.Since(start)
				})
			return rates[0]
		}},
		{"leaseq Enqueue, 16 goroutines, 32 goroutines polling Claim", "jobs/s", func() float64 {
			return rates[1] // measured alternating with no pollers, just above
		}},
		{"leaseq idle Claim calls answered meanwhile", "claims/s", func() float64 {
			return float64(polls) / polling.Seconds()
		}},
	}, []ratio{
		{"leaseq Enqueue with 32 idle pollers / without", 1, 0, ">= 0.8"},
	})
}

// whilePolling runs measure while k goroutines call Claim on q in a loop,
// and returns how many (all idle) Claims they made.
func whilePolling(q *leaseq.Queue, k int, measure func()) int64 {
	ctx := context.Background()
	var stop atomic.Bool
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				c, ok, err := q.Claim(ctx, "poller", time.Minute)
				check(err)
				if ok {
					fatalf("leaseq: an idle poller claimed %q", c.ID)
				}
				calls.Add(1)
			}
		}()
	}
	measure()
	stop.Store(true)
	wg.Wait()
	return calls.Load()
}

// queuesMode measures many queues on one writer (rule 25 in leaseq's
// docs/rules.md): 16 goroutines calling Claim+Finish on one queue, against 16
// spread evenly over four named queues on one *sql.DB.
func queuesMode() {
	const g, named = 16, 4
	nLq := n(3000)
	one := newLeaseq("queues-one.db", "FULL", leaseq.Options{})
	fillLeaseq(one, nLq**rounds)
	db := open("queues-four.db", "FULL")
	four := make([]*leaseq.Queue, named)
	for i := range four {
		four[i] = newLeaseqOn(db, leaseq.Options{Name: fmt.Sprintf("queue-%d", i)})
		fillLeaseq(four[i], nLq**rounds) // enough whichever goroutines run fastest
	}
	var rates []float64
	runRounds("queues: 16 goroutines calling Claim+Finish, one queue or four on one *sql.DB (synchronous=FULL)", []measure{
		{"leaseq Claim+Finish, one queue, 16 goroutines", "jobs/s", func() float64 {
			rates = alternating(nLq, 300,
				func(k int) { perSecond(g, k, 1, func(int) { claimFinish(one) }) },
				func(k int) { perSecondOn(g, k, 1, func(w, _ int) { claimFinish(four[w%named]) }) })
			return rates[0]
		}},
		{"leaseq Claim+Finish, 4 queues on one *sql.DB, 4 goroutines each", "jobs/s", func() float64 {
			return rates[1] // measured alternating with one queue, just above
		}},
	}, []ratio{
		{"leaseq four queues / one queue", 1, 0, ">= 0.8"},
	})
}

// journalModes are the rollback-journal modes leaseq writes in.
var journalModes = []string{"DELETE", "TRUNCATE", "PERSIST"}

// journalMode measures one commit per transaction in each rollback-journal
// mode: the bare loop, and leaseq with group commit off (a Claim and a
// Finish per job), all six loops interleaved.
func journalMode() {
	nBare := n(1000)
	var loops []commitLoop
	for _, m := range journalModes {
		b := newBareIn("journal-bare-"+m+".db", "FULL", m)
		q := newLeaseqOn(openIn("journal-leaseq-"+m+".db", "FULL", m), leaseq.Options{DisableGroupCommit: true})
		fillLeaseq(q, nBare/2**rounds+100)
		loops = append(loops, commitLoop{b.commit, 1}, commitLoop{func() { claimFinish(q) }, 2})
	}
	var rates []float64
	var ms []measure
	var rs []ratio
	for i, m := range journalModes {
		ms = append(ms,
			measure{"bare one-row UPDATE per transaction, " + m, "commits/s", func() float64 {
				if i == 0 {
					rates = interleaved(nBare, 20, loops...)
				}
				return rates[2*i]
			}},
			measure{"leaseq Claim, Finish: one per transaction, " + m, "commits/s", func() float64 {
				return rates[2*i+1] // measured interleaved with the others
			}})
		rs = append(rs, ratio{"leaseq / bare loop, both " + m, 2*i + 1, 2 * i, ">= 0.9"})
	}
	for i, m := range journalModes[1:] {
		target := "-"
		if m == leaseq.JournalMode {
			target = "~ 2 (Open's mode)"
		}
		rs = append(rs,
			ratio{"bare " + m + " / bare DELETE", 2 * (i + 1), 0, "-"},
			ratio{"leaseq " + m + " / bare DELETE", 2*(i+1) + 1, 0, target})
	}
	runRounds("journal: one commit per transaction by journal_mode, six loops interleaved (synchronous=FULL)", ms, rs)
}

// Queue shapes of the depth mode.
const (
	smallPending  = 1000
	deepPending   = 200000
	behindLeases  = 50000
	behindPending = 1000
	// The rows that lie beside the 1,000 claimable jobs in the shapes that
	// only leaseq has: scheduled, of lower priority, done, purged.
	besideRows = 200000
)

// leaseqShapes builds, in order, the shapes measured for leaseq alone: each
// leaves smallPending jobs claimable beside rows that no claim may read.
var leaseqShapes = []struct {
	name, title string
	build       func(q *leaseq.Queue)
}{
	{"expired", "1,000 pending + 50,000 expired leases", func(q *leaseq.Queue) {
		// Leases that ended with attempts left: claimable again, and not
		// for the quarantine sweep, which must not walk them. The lease
		// outlasts the claiming, so that no batch takes back a lease an
		// earlier batch left.
		const lease = 5 * time.Second
		fillLeaseq(q, behindLeases)
		ended := time.Now().Add(lease)
		for k := 0; k < behindLeases; k += 1000 {
			cs, err := q.ClaimBatch(context.Background(), "crashed", lease, 1000)
			check(err)
			if len(cs) != 1000 || cs[0].Attempt != 1 {
				fatalf("expired shape: claimed %d, first attempt %d; want 1000 first claims", len(cs), cs[0].Attempt)
			}
		}
		fillLeaseq(q, smallPending)
		time.Sleep(time.Until(ended) + 10*time.Millisecond)
	}},
	{"scheduled", "1,000 pending + 200,000 scheduled for tomorrow", func(q *leaseq.Queue) {
		tomorrow := time.Now().Add(24 * time.Hour)
		fillLeaseqWith(q, besideRows, func(j *leaseq.Job) { j.RunAt = tomorrow })
		fillLeaseq(q, smallPending)
	}},
	{"lower", "1,000 pending + 200,000 of lower priority", func(q *leaseq.Queue) {
		fillLeaseqWith(q, besideRows, func(j *leaseq.Job) { j.Priority = -1 })
		fillLeaseq(q, smallPending) // priority 0, as every job enqueued while measuring
	}},
	{"done", "1,000 pending + 200,000 done", func(q *leaseq.Queue) {
		fillLeaseq(q, besideRows)
		finishAll(q)
		fillLeaseq(q, smallPending)
	}},
	{"purged", "1,000 pending + 200,000 done and purged", func(q *leaseq.Queue) {
		fillLeaseq(q, besideRows)
		finishAll(q)
		n, err := q.Purge(context.Background(), time.Now().Add(time.Second))
		check(err)
		if n != besideRows {
			fatalf("purged shape: purged %d jobs, want %d", n, besideRows)
		}
		fillLeaseq(q, smallPending)
	}},
}

func depthMode() {
	claims := 100
	ctx := context.Background()
	setup := time.Now()
	lq := map[string]*leaseq.Queue{}
	gq := map[string]*goqite.Queue{}
	for _, shape := range []string{"small", "deep", "behind"} {
		lq[shape] = newLeaseq("depth-leaseq-"+shape+".db", "OFF", leaseq.Options{})
		var db *sql.DB
		gq[shape], db = newGoqite("depth-goqite-"+shape+".db", "OFF")
		switch shape {
		case "small":
			fillLeaseq(lq[shape], smallPending)
			fillGoqite(gq[shape], db, smallPending)
		case "deep":
			fillLeaseq(lq[shape], deepPending)
			fillGoqite(gq[shape], db, deepPending)
		case "behind":
			fillLeaseq(lq[shape], behindLeases)
			for k := 0; k < behindLeases; k += 1000 {
				_, err := lq[shape].ClaimBatch(ctx, "holder", 24*time.Hour, 1000)
				check(err)
			}
			fillLeaseq(lq[shape], behindPending)
			fillGoqite(gq[shape], db, behindLeases)
			// goqite's received messages, leased for a day: set directly, as
			// 50,000 Receive calls would each scan the ones before.
			_, err := db.Exec(`UPDATE goqite SET received = 1, timeout = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+1 day')`)
			check(err)
			time.Sleep(2 * time.Millisecond) // the ready ones are created later
			fillGoqite(gq[shape], db, behindPending)
		}
	}
	for _, shape := range leaseqShapes {
		lq[shape.name] = newLeaseq("depth-leaseq-"+shape.name+".db", "OFF", leaseq.Options{})
		shape.build(lq[shape.name])
	}
	b := newBare("depth-bare.db", "OFF")
	fmt.Printf("\n(depth: queue shapes built in %v)\n", time.Since(setup).Round(time.Second))
	// Each timed claim is followed by an untimed enqueue, so the shapes stay
	// as built however many rounds run.
	lqClaim := func(q *leaseq.Queue) timedOp {
		return timedOp{func() {
			c, ok, err := q.Claim(ctx, "worker", 24*time.Hour)
			check(err)
			if !ok || c.Priority != 0 {
				fatalf("leaseq: claimed %q (ok=%v, priority %d); want a job of priority 0", c.ID, ok, c.Priority)
			}
		}, func() { check(q.Enqueue(ctx, jobs(1)[0])) }}
	}
	gqReceive := func(q *goqite.Queue) timedOp {
		return timedOp{func() {
			m, err := q.Receive(ctx)
			check(err)
			if m == nil {
				fatal("goqite: nothing to receive")
			}
		}, func() { check(q.Send(ctx, goqite.Message{Body: []byte("payload")})) }}
	}
	names := []string{
		"leaseq Claim, 1,000 pending",
		"leaseq Claim, 200,000 pending",
		"leaseq Claim, 1,000 ready behind 50,000 live leases",
		"goqite Receive, 1,000 pending",
		"goqite Receive, 200,000 pending",
		"goqite Receive, 1,000 ready behind 50,000 live leases",
		"bare one-row UPDATE per transaction",
	}
	ops := []timedOp{
		lqClaim(lq["small"]), lqClaim(lq["deep"]), lqClaim(lq["behind"]),
		gqReceive(gq["small"]), gqReceive(gq["deep"]), gqReceive(gq["behind"]),
		{b.commit, func() {}},
	}
	rs := []ratio{
		{"leaseq 200k pending / 1k", 1, 0, "<= 1.5"},
		{"leaseq behind 50k live leases / 1k", 2, 0, "<= 1.5"},
		{"goqite 200k pending / 1k", 4, 3, "-"},
		{"goqite behind 50k live leases / 1k", 5, 3, "-"},
	}
	for _, shape := range leaseqShapes {
		target := "<= 1.5"
		if shape.name == "expired" {
			target = "-"
		}
		rs = append(rs, ratio{"leaseq " + shape.name + " / 1k", len(names), 0, target})
		names = append(names, "leaseq Claim, "+shape.title)
		ops = append(ops, lqClaim(lq[shape.name]))
	}
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
	runRounds("depth: median latency of one claim by queue shape, all shapes in turn (synchronous=OFF)", ms, rs)
}

// timedOp is an operation whose latency is measured, and one to run after
// it, untimed.
type timedOp struct{ op, after func() }

// medianLatencies times each of ops k times and returns the median of each
// in microseconds. The ops take turns, one call each, so that a burst of
// load on the machine weighs on all of them alike rather than on whichever
// ran during it.
func medianLatencies(k int, ops []timedOp) []float64 {
	lat := make([][]float64, len(ops))
	for range k {
		for j, o := range ops {
			start := time.Now()
			o.op()
			lat[j] = append(lat[j], float64(time.Since(start).Nanoseconds())/1e3)
			o.after()
		}
	}
	meds := make([]float64, len(ops))
	for j := range ops {
		meds[j] = median(lat[j])
	}
	return meds
}

func check(err error) {
	if err != nil {
		fatal(err)
	}
}

// exitHooks run, last added first, when the program ends, however it ends
// short of a signal: they drop the benchmark's PostgreSQL databases and stop
// a cluster it started.
var exitHooks []func()

func atExit(f func()) { exitHooks = append(exitHooks, f) }

func runExitHooks() {
	for len(exitHooks) > 0 {
		f := exitHooks[len(exitHooks)-1]
		exitHooks = exitHooks[:len(exitHooks)-1]
		f()
	}
}

func fatal(v ...any) { runExitHooks(); log.Fatal(v...) }

func fatalf(format string, v ...any) { runExitHooks(); log.Fatalf(format, v...) }

// failures counts the FAIL lines printed: a run with any exits with status 1.
var failures atomic.Int64

// fail prints a FAIL line: a guarantee a benchmark checks did not hold.
func fail(format string, v ...any) {
	failures.Add(1)
	fmt.Printf("FAIL: "+format+"\n", v...)
}
