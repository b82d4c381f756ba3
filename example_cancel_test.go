package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// An operator stops a job with Cancel: it is quarantined with the reason,
// and the worker holding it is refused when it reports back. Requeue puts a
// quarantined job back in line with its attempts reset; its next claim still
// gets a new token.
func ExampleQueue_Cancel() {
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
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3}); err != nil {
		panic(err)
	}
	c, _, err := q.Claim(ctx, "worker-a", time.Minute)
	if err != nil {
		panic(err)
	}

	err = q.Cancel(ctx, "order-7", "customer asked to hold the order")
	fmt.Println("cancelled:", err)
	ok, err := q.Finish(ctx, c)
	fmt.Println("worker's finish accepted:", ok, err)
	err = q.Cancel(ctx, "order-7", "again")
	fmt.Println(errors.Is(err, leaseq.ErrInvalid), err)

	err = q.Requeue(ctx, "order-7")
	fmt.Println("requeued:", err)
	c, _, err = q.Claim(ctx, "worker-b", time.Minute)
	fmt.Println("claimed: token", c.Token, "attempt", c.Attempt, err)
	// Output:
	// cancelled: <nil>
	// worker's finish accepted: false <nil>
	// true leaseq: cancel "order-7": job is quarantined; only a pending or leased job can be cancelled: invalid argument
	// requeued: <nil>
	// claimed: token 2 attempt 1 <nil>
}
