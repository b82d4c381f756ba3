package leaseq_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The benchmarks run on a real file opened with Open (journal_mode=PERSIST,
// synchronous=FULL) and the system clock, so they include the fsyncs that
// bound a queue in production. Each reports jobs/s: the figure that the
// fsync ceiling caps and that batching and group commit raise. They do not
// run under plain `go test`; run them with
//
//	go test -run '^$' -bench .
//
// The cross-library comparison lives in the bench/ module.

// benchGoroutines are the concurrencies the single-call benchmarks run at.
var benchGoroutines = []int{1, 4, 16}

// benchSizes are the batch sizes the batch benchmarks run at.
var benchSizes = []int{10, 100, 1000}

// newBenchQueue opens a queue on a fresh file with the system clock.
func newBenchQueue(b testing.TB, opts leaseq.Options) *leaseq.Queue {
	b.Helper()
	db, err := leaseq.Open(filepath.Join(b.TempDir(), "q.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	q, err := leaseq.New(context.Background(), db, opts)
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// fillQueue enqueues n jobs named prefix-i, 1000 per transaction.
func fillQueue(b *testing.B, q *leaseq.Queue, prefix string, n int) {
	b.Helper()
	for i := 0; i < n; i += 1000 {
		jobs := make([]leaseq.Job, 0, 1000)
		for k := i; k < min(n, i+1000); k++ {
			jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("%s-%d", prefix, k), Qty: 1, Payload: []byte("payload")})
		}
		if err := q.EnqueueBatch(context.Background(), jobs); err != nil {
			b.Fatal(err)
		}
	}
}

// inParallel runs do(i) for i in [0, b.N) on g goroutines and reports jobs/s
// (jobsPerOp jobs per call of do).
func inParallel(b *testing.B, g, jobsPerOp int, do func(i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	b.ReportAllocs()
	b.ResetTimer()
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*jobsPerOp)/b.Elapsed().Seconds(), "jobs/s")
}

func BenchmarkEnqueue(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			q := newBenchQueue(b, leaseq.Options{})
			ctx := context.Background()
			inParallel(b, g, 1, func(i int) error {
				return q.Enqueue(ctx, leaseq.Job{ID: fmt.Sprintf("job-%d", i), Qty: 1, Payload: []byte("payload")})
			})
		})
	}
}

func BenchmarkClaimFinish(b *testing.B) {
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			q := newBenchQueue(b, leaseq.Options{})
			fillQueue(b, q, "job", b.N)
			ctx := context.Background()
			inParallel(b, g, 1, func(i int) error {
				c, ok, err := q.Claim(ctx, "worker", time.Minute)
				if err != nil || !ok {
					return fmt.Errorf("claim: ok=%v err=%v", ok, err)
				}
				if ok, err := q.Finish(ctx, c); err != nil || !ok {
					return fmt.Errorf("finish %q: ok=%v err=%v", c.ID, ok, err)
				}
				return nil
			})
		})
	}
}

func BenchmarkEnqueueBatch(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			q := newBenchQueue(b, leaseq.Options{})
			ctx := context.Background()
			inParallel(b, 1, size, func(i int) error {
				jobs := make([]leaseq.Job, size)
				for k := range jobs {
					jobs[k] = leaseq.Job{ID: fmt.Sprintf("job-%d-%d", i, k), Qty: 1, Payload: []byte("payload")}
				}
				return q.EnqueueBatch(ctx, jobs)
			})
		})
	}
}

func BenchmarkClaimFinishBatch(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			q := newBenchQueue(b, leaseq.Options{})
			fillQueue(b, q, "job", b.N*size)
			ctx := context.Background()
			inParallel(b, 1, size, func(i int) error {
				cs, err := q.ClaimBatch(ctx, "worker", time.Minute, size)
				if err != nil || len(cs) != size {
					return fmt.Errorf("claim batch: %d claims, err=%v", len(cs), err)
				}
				oks, err := q.FinishBatch(ctx, cs)
				if err != nil {
					return err
				}
				for k, ok := range oks {
					if !ok {
						return fmt.Errorf("finish batch: %q refused", cs[k].ID)
					}
				}
				return nil
			})
		})
	}
}
