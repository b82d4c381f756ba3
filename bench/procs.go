package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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
// finished jobs. Timed from the first process's start until the last one
// exited, so both sides pay the same start-up.

// pgProcs is how many processes share the work.
const pgProcs = 4

func pgProcsMode() {
	s := server()
	k := n(20000)
	var lqCPU, riverCPU []float64
	runRounds(fmt.Sprintf("pg-procs: %d processes on one server, %d jobs, no-op handler, pools of %d connections each", pgProcs, k, pgWorkConns), []measure{
		{fmt.Sprintf("leaseq %d × Work(16)", pgProcs), "jobs/s", func() float64 {
			q, d := pgLeaseq("procs_leaseq", pgWorkConns)
			fillLeaseq(q, k)
			closeLeaseq(q)
			cpu0 := s.serverCPU()
			r := runChildren("leaseq", s.url(d.name), k)
			lqCPU = append(lqCPU, (s.serverCPU()-cpu0)/float64(k))
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
			r := runChildren("river", s.url(d.name), k)
			riverCPU = append(riverCPU, (s.serverCPU()-cpu0)/float64(k))
			return r
		}},
	}, []ratio{
		{fmt.Sprintf("leaseq %d × Work(16) / River %d × 16", pgProcs, pgProcs), 0, 1, ">= 1.5"},
	})
	us := func(xs []float64) time.Duration { return time.Duration(median(xs) * float64(time.Second)) }
	fmt.Printf("  server CPU per job (medians): leaseq %v, River %v\n", us(lqCPU), us(riverCPU))
}

// runChildren runs pgProcs processes of kind on the database at url until
// it holds k finished jobs, and returns k over the time they took.
func runChildren(kind, url string, k int) float64 {
	self, err := os.Executable()
	check(err)
	start := time.Now()
	var cmds []*exec.Cmd
	for range pgProcs {
		cmd := exec.Command(self, "-work-child", kind, "-child-url", url, "-child-jobs", strconv.Itoa(k))
		cmd.Stderr = os.Stderr
		check(cmd.Start())
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		check(cmd.Wait())
	}
	return float64(k) / time.Since(start).Seconds()
}

// workChild is one process of pg-procs: Work(16) (leaseq) or River's 16
// workers on the database at url, until it holds k finished jobs.
func workChild(kind, url string, k int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch kind {
	case "leaseq":
		db, err := sql.Open("pgx", url)
		check(err)
		db.SetMaxOpenConns(pgWorkConns)
		db.SetMaxIdleConns(pgWorkConns)
		q := newLeaseqOn(db, leaseq.Options{})
		go untilDone(cancel, func() int { st, err := q.Stats(ctx); check(err); return st.Done }, k)
		check(q.Work(ctx, leaseq.WorkerOptions{Owner: fmt.Sprint("bench-", os.Getpid()), Concurrency: 16, Logger: quiet},
			func(context.Context, leaseq.Claim) error { return nil }))
		closeLeaseq(q)
	case "river":
		cfg, err := pgxpool.ParseConfig(url)
		check(err)
		cfg.MaxConns = pgWorkConns
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		check(err)
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{ran: func() {}})
		client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 16}},
			Workers: workers, FetchCooldown: time.Millisecond, FetchPollInterval: 10 * time.Millisecond, Logger: quiet,
		})
		check(err)
		check(client.Start(ctx))
		untilDone(func() {}, func() int {
			var n int
			check(pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&n))
			return n
		}, k)
		check(client.Stop(context.Background()))
		pool.Close()
	default:
		fatalf("unknown -work-child %q", kind)
	}
}

// untilDone polls done every 20 ms until it reaches k, then calls stop.
func untilDone(stop func(), done func() int, k int) {
	for done() < k {
		time.Sleep(20 * time.Millisecond) // a look at the database's count, not a wait for an event
	}
	stop()
}
