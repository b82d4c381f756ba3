package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// A worker on a long job renews its lease as it goes, like a heartbeat: each
// Extend moves the lease end to now + lease. A worker that stops renewing
// loses the job when its lease ends, and its next Extend is refused. In a
// service a goroutine would call Extend every lease/3 or so; here a
// ManualClock stands in for the time the work takes.
func ExampleQueue_Extend() {
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

	if err := q.Enqueue(ctx, leaseq.Job{ID: "report-1"}); err != nil {
		panic(err)
	}
	c, _, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed, lease ends at", c.LeaseUntil.Sub(start))

	// Three steps of 20s each: longer than the lease all told, but the
	// lease is renewed after every step.
	for range 3 {
		clock.Advance(20 * time.Second)
		var ok bool
		c, ok, err = q.Extend(ctx, c, 30*time.Second)
		if err != nil {
			panic(err)
		}
		fmt.Println("extended:", ok, "lease ends at", c.LeaseUntil.Sub(start))
	}
	ok, err := q.Finish(ctx, c)
	fmt.Println("finish accepted:", ok, err)

	// A worker that stalls past its lease.
	if err := q.Enqueue(ctx, leaseq.Job{ID: "report-2"}); err != nil {
		panic(err)
	}
	stalled, _, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil {
		panic(err)
	}
	clock.Advance(30 * time.Second) // its lease ends exactly now
	_, ok, err = q.Extend(ctx, stalled, 30*time.Second)
	fmt.Println("late extend:", ok, err)
	// Output:
	// claimed, lease ends at 30s
	// extended: true lease ends at 50s
	// extended: true lease ends at 1m10s
	// extended: true lease ends at 1m30s
	// finish accepted: true <nil>
	// late extend: false <nil>
}
