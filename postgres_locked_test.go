package leaseq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestPostgresLockedRowBesidePool: another session locks the row of a job
// a worker pool is running (an operator's SELECT … FOR UPDATE left open in
// psql) and the handler returns. The finish of that job waits for the
// lock; the pool's other jobs keep being claimed and finished meanwhile
// (rules 33 and 39) — the pool's gathered step must not put them behind
// the one finish that waits. Once the lock is let go, the job is finished.
func TestPostgresLockedRowBesidePool(t *testing.T) {
	t.Parallel()
	q, db := pgQueue(t, leaseq.Options{})
	ctx := context.Background()
	const others = 50
	started, proceed := make(chan struct{}), make(chan struct{})
	var done atomic.Int64
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, PollInterval: 50 * time.Millisecond},
		func(_ context.Context, c leaseq.Claim) error {
			if c.ID == "locked" {
				close(started)
				<-proceed
				return nil
			}
			done.Add(1)
			return nil
		})
	mustEnqueue(t, q, leaseq.Job{ID: "locked"})
	waitFor(t, started, "the handler of the job to be locked")
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.ExecContext(ctx, "SELECT 1 FROM leaseq_jobs WHERE id = 'locked' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	waitForLockWait(t, db) // the job's finish waits for the lock
	var jobs []leaseq.Job
	for i := range others {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprint("o", i)})
	}
	if err := q.EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	limit := time.Now().Add(20 * time.Second)
	for done.Load() < others && time.Now().Before(limit) {
		time.Sleep(5 * time.Millisecond) // polling a count, bounded by limit
	}
	if n := done.Load(); n < others {
		t.Fatalf("%d of %d other jobs handled within 20s while one job's row was locked; want all: a locked row delays only the calls on it", n, others)
	}
	waitUntil(t, 20*time.Second, "the other jobs to be finished while the row is locked", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Done == others
	})
	if s := mustGet(t, q, "locked"); s.Status != leaseq.StatusLeased {
		t.Fatalf("row %s while its lock is held; want still leased", fmtState(s))
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the locked job to be finished once the lock is let go", func() bool {
		s, err := q.Get(ctx, "locked")
		return err == nil && s.Status == leaseq.StatusDone
	})
}
