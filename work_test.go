package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// realQueue is a queue on a fresh file with the system clock, for worker
// tests that run on short real leases.
func realQueue(t *testing.T) *leaseq.Queue {
	t.Helper()
	db, err := leaseq.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// runWork starts Work in a goroutine and returns a function that stops it
// and returns its error.
func runWork(t *testing.T, q *leaseq.Queue, opts leaseq.WorkerOptions, h leaseq.Handler) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- q.Work(ctx, opts, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-errc:
			case <-time.After(30 * time.Second):
				err = errors.New("Work did not return within 30s of its context ending")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitFor waits for ch with a bounded timeout.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestWorkBoundedConcurrency(t *testing.T) {
	q := realQueue(t)
	ctx := context.Background()
	const n, conc = 300, 8
	var jobs []leaseq.Job
	for i := range n {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprint("j", i)})
	}
	if err := q.EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var running, peak atomic.Int64
	done := make(chan string, n)
	stop := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: conc}, func(ctx context.Context, c leaseq.Claim) error {
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		defer running.Add(-1)
		done <- c.ID
		return nil
	})
	seen := map[string]bool{}
	for range n {
		seen[waitFor(t, done, "a handler")] = true
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || peak.Load() > conc {
		t.Fatalf("handled %d distinct jobs of %d, peak concurrency %d (bound %d)", len(seen), n, peak.Load(), conc)
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Done != n {
		t.Fatalf("stats %+v %v; want %d done", st, err, n)
	}
}

func TestWorkHeartbeatKeepsLongJob(t *testing.T) {
	q := realQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	const lease = 100 * time.Millisecond
	result := make(chan error, 1)
	stop := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: lease, Heartbeat: lease / 4}, func(ctx context.Context, c leaseq.Claim) error {
		// Work 5× the lease, watching the lease from outside: no other
		// claim may get the job meanwhile.
		end := time.Now().Add(5 * lease)
		for time.Now().Before(end) {
			if _, ok, err := q.Claim(context.Background(), "thief", lease); ok || err != nil {
				result <- fmt.Errorf("another claim got the job (ok=%v err=%v)", ok, err)
				return nil
			}
			select {
			case <-ctx.Done():
				result <- fmt.Errorf("handler context ended: %v", context.Cause(ctx))
				return ctx.Err()
			case <-time.After(lease / 10):
			}
		}
		result <- nil
		return nil
	})
	if err := waitFor(t, result, "the long handler"); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s, err := q.Get(ctx, "long")
	if err != nil || s.Status != leaseq.StatusDone || s.Token != 1 {
		t.Fatalf("row %+v %v; want done with token 1", s, err)
	}
}

func TestWorkCancelReachesHandler(t *testing.T) {
	q := realQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	stop := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Second, Heartbeat: 20 * time.Millisecond}, func(ctx context.Context, c leaseq.Claim) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil // a result the fence must refuse
	})
	waitFor(t, started, "the handler to start")
	if err := q.Cancel(ctx, "c", "operator stop"); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, cause, "the handler's context to end"); !errors.Is(got, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s, _ := q.Get(ctx, "c")
	if s.Status != leaseq.StatusQuarantined || s.Reason != "operator stop" {
		t.Fatalf("row %+v; want quarantined by the cancel, the handler's nil not recorded", s)
	}
}

func TestWorkShutdownReleases(t *testing.T) {
	q := realQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	cause := make(chan error, 1)
	stop := runWork(t, q, leaseq.WorkerOptions{Owner: "w", DrainTimeout: 20 * time.Millisecond}, func(ctx context.Context, c leaseq.Claim) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	waitFor(t, started, "the handler to start")
	if err := stop(); err != nil {
		t.Fatalf("Work: %v, want nil after a clean shutdown", err)
	}
	if got := <-cause; !errors.Is(got, leaseq.ErrShutdown) {
		t.Fatalf("cause %v, want ErrShutdown", got)
	}
	c, ok, err := q.Claim(ctx, "next", time.Second)
	if err != nil || !ok || c.ID != "s" || c.Token != 2 {
		t.Fatalf("Claim right after Work returned: %+v %v %v; want s with token 2", c, ok, err)
	}
}
