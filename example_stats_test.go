package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// Stats counts the queue's jobs by where they are, at one instant of the
// queue's clock: what a health check or a dashboard shows. It is a read and
// takes no write lock.
func ExampleQueue_Stats() {
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

	err = q.EnqueueBatch(ctx, []leaseq.Job{
		{ID: "job-1"}, {ID: "job-2"}, {ID: "job-3"}, {ID: "job-4"}, {ID: "job-5"},
		{ID: "job-6", RunAt: start.Add(time.Hour)},
	})
	if err != nil {
		panic(err)
	}
	claim := func(lease time.Duration) leaseq.Claim {
		c, ok, err := q.Claim(ctx, "worker-a", lease)
		if err != nil || !ok {
			panic(fmt.Sprint(ok, err))
		}
		return c
	}
	done := claim(time.Minute)   // job-1
	claim(10 * time.Second)      // job-2: its worker will vanish
	claim(time.Minute)           // job-3: still being worked on
	failed := claim(time.Minute) // job-4
	if _, err := q.Finish(ctx, done); err != nil {
		panic(err)
	}
	if _, err := q.Fail(ctx, failed, "bad input"); err != nil {
		panic(err)
	}
	clock.Advance(10 * time.Second) // job-2's lease ends

	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("pending %d, scheduled %d, leased %d, expired %d, done %d, quarantined %d\n",
		st.Pending, st.Scheduled, st.Leased, st.Expired, st.Done, st.Quarantined)
	fmt.Println("longest wait:", clock.Now().Sub(st.OldestReady))
	// Output:
	// pending 1, scheduled 1, leased 1, expired 1, done 1, quarantined 1
	// longest wait: 10s
}
