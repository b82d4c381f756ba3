package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// Purge deletes finished jobs whose last change is strictly before an
// instant, keeping the table small. A purged ID may be enqueued again, and
// its tokens continue where the purged job's ended, so a claim from before
// the purge can never finish the new job.
func ExampleQueue_Purge() {
	dir, err := os.MkdirTemp("", "leaseq-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := leaseq.NewManualClock(start)
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7"}); err != nil {
		panic(err)
	}
	old, _, err := q.Claim(ctx, "worker-a", time.Minute)
	if err != nil {
		panic(err)
	}
	if _, err := q.Finish(ctx, old); err != nil {
		panic(err)
	}

	// Finished at start: not strictly before start, so it stays.
	n, err := q.Purge(ctx, start, leaseq.StatusDone)
	fmt.Println("purged before start:", n, err)
	clock.Advance(24 * time.Hour)
	n, err = q.Purge(ctx, clock.Now().Add(-time.Hour), leaseq.StatusDone, leaseq.StatusQuarantined)
	fmt.Println("purged before an hour ago:", n, err)

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7"}); err != nil {
		panic(err)
	}
	c, _, err := q.Claim(ctx, "worker-b", time.Minute)
	fmt.Println("new order-7: token", c.Token, "attempt", c.Attempt, err)
	ok, err := q.Finish(ctx, old)
	fmt.Println("old claim's finish accepted:", ok, err)
	// Output:
	// purged before start: 0 <nil>
	// purged before an hour ago: 1 <nil>
	// new order-7: token 2 attempt 1 <nil>
	// old claim's finish accepted: false <nil>
}
