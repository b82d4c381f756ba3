package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leaseq/leaseq"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// The pg-procs mode: four processes on one server, each Work(16), against
// four processes each running River's 16 workers, on k jobs enqueued
// beforehand, a fresh database each per round. The processes are this
// program run with -work-child; each stops once the database holds k
// jobs run (runChildren). Timed from the first process's start until the last
// one exited, so both sides pay the same start-up.

// pgProcs is how many processes share the work.
const pgProcs = 4

func pgProcsMode() {
	s := server()
	k := n(20000)
	var lqCPU, riverCPU, lqProcs, riverProcs, rates []float64
	runRounds(fmt.Sprintf("pg-procs: %d processes on one server, %d jobs, no-op handler, pools of %d connections each", pgProcs, k, pgWorkConns), []measure{
		{fmt.Sprintf("leaseq %d × Work(16)", pgProcs), "jobs/s", func() float64 {
			q, d := pgLeaseq("procs_leaseq", pgWorkConns)
			fillLeaseq(q, k)
			closeLeaseq(q)
			cpu0 := s.serverCPU()
			r, c := runChildren("leaseq", s.url(d.name), k)
			lqCPU, lqProcs = append(lqCPU, (s.serverCPU()-cpu0)/float64(k)), append(lqProcs, c/float64(k))
			return r
		}},
		{fmt.Sprintf("River %d × 16 workers", pgProcs), "jobs/s", func() float64 {
			client, pool, d := pgRiverInserter("procs_river", pgWorkConns)
			for left := k; left > 0; {
				c := min(left, 1000)
				params := make([]river.InsertManyParams, c)
				for i := range params {
					params[i] = river.InsertManyParams{Args: noopArgs{}}
				}
				_, err := client.InsertMany(context.Background(), params)
				check(err)
				left -= c
			}
			pool.Close()
			cpu0 := s.serverCPU()
			r, c := runChildren("river", s.url(d.name), k)
			riverCPU, riverProcs = append(riverCPU, (s.serverCPU()-cpu0)/float64(k)), append(riverProcs, c/float64(k))
			rates = append(rates, r)
			return r
		}},
	}, []ratio{
		{fmt.Sprintf("leaseq %d × Work(16) / River %d × 16", pgProcs, pgProcs), 0, 1, ">= 1.5"},
	})
	us := func(xs []float64) time.Duration { return time.Duration(median(xs) * float64(time.Second)) }
	fmt.Printf("  server CPU per job (medians): leaseq %v, River %v; the processes' own (start-up included): leaseq %v, River %v\n",
		us(lqCPU), us(riverCPU), us(lqProcs), us(riverProcs))
	printBudget(fmt.Sprintf("leaseq %d × Work(16)", pgProcs), 1.5*median(rates), median(lqCPU)+median(lqProcs))
}

// printBudget prints how many of the machine's cores what a job costs in
// CPU (perJob seconds: the server's and the client processes') takes at
// rate jobs/s: a rate that would take more than all of them cannot be
// reached on this machine without making jobs cheaper.
func printBudget(what string, rate, perJob float64) {
	fmt.Printf("  %s at the target rate, %.0f jobs/s, with its CPU per job (server + processes) %v: %.2f of the %d cores\n",
		what, rate, time.Duration(perJob*1e9).Round(time.Microsecond), rate*perJob, runtime.NumCPU())
}

// runChildren runs pgProcs processes of kind on the database at url until
// their handlers ran k jobs in all, and returns k over the time from the
// first start until the last process exited, its results written, and the
// CPU time, in seconds, that the processes used from start to exit. Each
// process reports how many its handlers ran on its stdout (childReports);
// once they add up to k, every process is told to stop by the end of its
// stdin. Neither side polls the database for its progress: a count of
// finished jobs is a query of its own, and the two libraries' cost
// differently (leaseq's Stats counts the pending jobs; River's count(*)
// reads the completed ones), which polled by four processes every 20 ms
// took more of the server than either pool's own statements.
func runChildren(kind, url string, k int) (rate, cpu float64) {
	self, err := os.Executable()
	check(err)
	start := time.Now()
	var cmds []*exec.Cmd
	var stdins []io.Closer
	var ran atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	var readers sync.WaitGroup
	for range pgProcs {
		cmd := exec.Command(self, "-work-child", kind, "-child-url", url)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		check(err)
		out, err := cmd.StdoutPipe()
		check(err)
		check(cmd.Start())
		cmds, stdins = append(cmds, cmd), append(stdins, in)
		readers.Go(func() {
			readReports(out, func(d int) {
				if ran.Add(int64(d)) >= int64(k) {
					once.Do(func() { close(reached) })
				}
			})
		})
	}
	readersDone := make(chan struct{})
	go func() { readers.Wait(); close(readersDone) }()
	select {
	case <-reached:
	case <-readersDone: // every child ended before: cmd.Wait says why
	}
	for _, in := range stdins {
		in.Close()
	}
	<-readersDone
	for _, cmd := range cmds {
		check(cmd.Wait())
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	return float64(k) / time.Since(start).Seconds(), cpu
}

// readReports passes on what each line a child printed adds to its
// handlers' count, until the child's stdout ends.
func readReports(out io.Reader, add func(int)) {
	sc := bufio.NewScanner(out)
	last := 0
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		check(err)
		add(n - last)
		last = n
	}
}

// childReports prints ran's count on stdout, every reportEvery when it
// changed, until ctx ends.
func childReports(ctx context.Context, ran *atomic.Int64) {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	last := int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := ran.Load(); n != last {
			fmt.Println(n)
			last = n
		}
	}
}

// reportEvery is how often a child reports its count: the end of a run is
// seen at most this late, by both sides alike.
const reportEvery = 2 * time.Millisecond

// workChild is one process of pg-procs: Work(16) (leaseq) or River's 16
// workers on the database at url, until its stdin ends.
func workChild(kind, url string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int64
	go childReports(ctx, &ran)
	stopped := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stopped) }()
	switch kind {
	case "leaseq":
		db, err := sql.Open("pgx", url)
		check(err)
		db.SetMaxOpenConns(pgWorkConns)
		db.SetMaxIdleConns(pgWorkConns)
		q := newLeaseqOn(db, leaseq.Options{})
		wctx, stop := context.WithCancel(ctx)
		go func() { <-stopped; stop() }()
		check(q.Work(wctx, leaseq.WorkerOptions{Owner: fmt.Sprint("bench-", os.Getpid()), Concurrency: 16, Logger: quiet},
			func(context.Context, leaseq.Claim) error { ran.Add(1); return nil }))
		closeLeaseq(q)
	case "river":
		cfg, err := pgxpool.ParseConfig(url)
		check(err)
		cfg.MaxConns = pgWorkConns
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		check(err)
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{ran: func() { ran.Add(1) }})
		client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 16}},
			Workers: workers, FetchCooldown: time.Millisecond, FetchPollInterval: 10 * time.Millisecond, Logger: quiet,
		})
		check(err)
		check(client.Start(ctx))
		<-stopped
		check(client.Stop(context.Background()))
		pool.Close()
	default:
		fatalf("unknown -work-child %q", kind)
	}
}
