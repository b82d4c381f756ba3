package leaseq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// BenchmarkWorkCycleParts splits the time of Work(16) on SQLite and of the
// hand loop it is measured against (ClaimBatch(16) then FinishBatch: two
// transactions per 16 jobs) into their parts, per 16 jobs: BEGIN, the
// statements, COMMIT, and the time outside any transaction (the pool's
// hand-offs and handlers; the loop's calls). Each iteration runs both on
// fresh files, one after the other, over workCycleJobs no-op jobs:
//
//	go test -run '^$' -bench WorkCycleParts -benchtime 1x -count 5
//
// It reports Work(16) / loop(16) and its ceiling: the loop's time per 16
// jobs over that time less what one transaction per cycle saves on BEGIN
// and COMMIT, measured — what a pool that ran the loop's statements and
// spent nothing outside its transactions would reach (docs/performance.md,
// "The pool writes in batches").
func BenchmarkWorkCycleParts(b *testing.B) {
	for i := range b.N {
		work := cycleParts(b, func(q *leaseq.Queue) { workCycleRun(b, q) }, fmt.Sprint("w", i))
		loop := cycleParts(b, func(q *leaseq.Queue) { loopCycleRun(b, q) }, fmt.Sprint("h", i))
		saved := loop.Begin + loop.End - work.Begin - work.End
		total := loop.Begin + loop.Run + loop.End + loop.outside
		b.Logf("Work(16): %v", work)
		b.Logf("loop(16): %v", loop)
		b.ReportMetric(work.rate/loop.rate, "work/loop")
		b.ReportMetric(float64(total)/float64(total-saved), "ceiling")
	}
}

// workCycleJobs is how many jobs each side runs per iteration.
const workCycleJobs = 20000

// cycleTimes are a run's transactions' parts, summed and divided per 16
// jobs, its rate, and its time outside transactions per 16 jobs.
type cycleTimes struct {
	leaseq.TxTimes
	txs     float64 // per 16 jobs
	outside time.Duration
	rate    float64 // jobs/s
}

func (c cycleTimes) String() string {
	return fmt.Sprintf("%.0f jobs/s; per 16 jobs: %.2f transactions, BEGIN %v, statements %v, COMMIT %v, outside them %v",
		c.rate, c.txs, c.Begin, c.Run, c.End, c.outside)
}

// cycleParts runs workCycleJobs jobs on a fresh queue through run, timing
// its transactions.
func cycleParts(b *testing.B, run func(*leaseq.Queue), prefix string) cycleTimes {
	q := newBenchQueue(b, leaseq.Options{})
	fillQueue(b, q, prefix, workCycleJobs)
	var mu sync.Mutex
	var sum leaseq.TxTimes
	n := 0
	stop := leaseq.ObserveTxs(func(t leaseq.TxTimes) {
		mu.Lock()
		defer mu.Unlock()
		sum.Begin, sum.Run, sum.End, n = sum.Begin+t.Begin, sum.Run+t.Run, sum.End+t.End, n+1
	})
	start := time.Now()
	run(q)
	took := time.Since(start)
	stop()
	per := time.Duration(workCycleJobs / 16)
	c := cycleTimes{TxTimes: leaseq.TxTimes{Begin: sum.Begin / per, Run: sum.Run / per, End: sum.End / per},
		txs: float64(n) / float64(per), rate: workCycleJobs / took.Seconds()}
	c.outside = took/per - c.Begin - c.Run - c.End
	return c
}

// workCycleRun runs q's jobs through Work(16) with a no-op handler, until
// the last handler returned.
func workCycleRun(b *testing.B, q *leaseq.Queue) {
	ctx, cancel := context.WithCancel(context.Background())
	var left sync.WaitGroup
	left.Add(workCycleJobs)
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "bench", Concurrency: 16},
			func(context.Context, leaseq.Claim) error { left.Done(); return nil })
	}()
	left.Wait()
	cancel()
	if err := <-returned; err != nil {
		b.Fatal(err)
	}
}

// loopCycleRun runs q's jobs through the hand loop of 16.
func loopCycleRun(b *testing.B, q *leaseq.Queue) {
	ctx := context.Background()
	for got := 0; got < workCycleJobs; {
		cs, err := q.ClaimBatch(ctx, "hand", time.Hour, 16)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := q.FinishBatch(ctx, cs); err != nil {
			b.Fatal(err)
		}
		got += len(cs)
	}
}

// TestObserveTxs: the observer BenchmarkWorkCycleParts relies on is told
// of write transactions, with their parts, until it is stopped.
func TestObserveTxs(t *testing.T) {
	q := newBenchQueue(t, leaseq.Options{})
	var mu sync.Mutex
	var seen []leaseq.TxTimes
	stop := leaseq.ObserveTxs(func(tt leaseq.TxTimes) { mu.Lock(); seen = append(seen, tt); mu.Unlock() })
	mustEnqueue(t, q, leaseq.Job{ID: "a", Qty: 1})
	stop()
	mu.Lock()
	told := len(seen)
	mu.Unlock()
	mustEnqueue(t, q, leaseq.Job{ID: "b", Qty: 1})
	mu.Lock()
	defer mu.Unlock()
	// At least one: a test before this one may have left a write behind.
	if told < 1 || len(seen) != told {
		t.Fatalf("observer told of %d transactions for one Enqueue, then of %d more after it stopped; want at least 1, then none", told, len(seen)-told)
	}
	for _, tt := range seen {
		if tt.Begin <= 0 || tt.Run <= 0 || tt.End <= 0 {
			t.Fatalf("transaction parts %+v: each must have taken some time", tt)
		}
	}
}
