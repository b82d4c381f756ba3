package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// A job with RunAt in the future waits, counted as scheduled, until the
// queue's clock reaches RunAt; at that very millisecond it is claimable.
func Example_delayedJob() {
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

	// A reminder to send in an hour.
	err = q.Enqueue(ctx, leaseq.Job{ID: "reminder-1", RunAt: start.Add(time.Hour)})
	if err != nil {
		panic(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", st.Pending, "scheduled:", st.Scheduled)

	clock.Set(start.Add(time.Hour - time.Millisecond))
	_, ok, err := q.Claim(ctx, "worker-a", time.Minute)
	fmt.Println("claimed 1ms early:", ok, err)

	clock.Set(start.Add(time.Hour))
	c, ok, err := q.Claim(ctx, "worker-a", time.Minute)
	fmt.Println("claimed on time:", ok, err, c.ID)
	// Output:
	// pending: 0 scheduled: 1
	// claimed 1ms early: false <nil>
	// claimed on time: true <nil> reminder-1
}
