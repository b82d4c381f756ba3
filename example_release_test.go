package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// A delivery that fails for a passing reason (the receiver is down) gives
// the job back with Release, to be retried after a delay. The token is kept
// and the attempt stays counted, so when the job's attempts are used up a
// Release quarantines it instead, keeping the last reason.
func ExampleQueue_Release() {
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
	clock := leaseq.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", MaxAttempts: 2}); err != nil {
		panic(err)
	}
	c, _, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil {
		panic(err)
	}
	ok, err := q.Release(ctx, c, time.Minute, "receiver: 503 Service Unavailable")
	fmt.Println("released:", ok, err)

	clock.Advance(time.Minute - time.Millisecond)
	_, ok, err = q.Claim(ctx, "worker-b", 30*time.Second)
	fmt.Println("claimed 1ms before the delay ends:", ok, err)

	clock.Advance(time.Millisecond)
	c, ok, err = q.Claim(ctx, "worker-b", 30*time.Second)
	fmt.Println("claimed when it ends:", ok, err, "token", c.Token, "attempt", c.Attempt)

	// The second and last attempt fails too.
	ok, err = q.Release(ctx, c, time.Minute, "receiver: 503 Service Unavailable")
	fmt.Println("released:", ok, err)
	s, err := q.Get(ctx, "order-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Status+":", s.Reason)
	// Output:
	// released: true <nil>
	// claimed 1ms before the delay ends: false <nil>
	// claimed when it ends: true <nil> token 2 attempt 2
	// released: true <nil>
	// quarantined: max attempts reached, released: receiver: 503 Service Unavailable
}
