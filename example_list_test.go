package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// List pages through the queue's jobs in enqueue order, optionally of one
// status: pass the last ID of a page as the next page's AfterID, and stop at
// a short page. A page costs the same however deep the queue is.
func ExampleQueue_List() {
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

	var jobs []leaseq.Job
	for i := 1; i <= 5; i++ {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("order-%d", i)})
	}
	if err := q.EnqueueBatch(ctx, jobs); err != nil {
		panic(err)
	}
	cs, err := q.ClaimBatch(ctx, "worker-a", time.Minute, 2) // order-1 and order-2
	if err != nil {
		panic(err)
	}
	if _, err := q.Finish(ctx, cs[0]); err != nil {
		panic(err)
	}

	f := leaseq.Filter{Limit: 2}
	for page := 1; ; page++ {
		states, err := q.List(ctx, f)
		if err != nil {
			panic(err)
		}
		fmt.Print("page ", page, ":")
		for _, s := range states {
			fmt.Print(" ", s.ID, "=", s.Status)
		}
		fmt.Println()
		if len(states) < f.Limit {
			break
		}
		f.AfterID = states[len(states)-1].ID
	}

	pending, err := q.List(ctx, leaseq.Filter{Status: leaseq.StatusPending})
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", len(pending), "from", pending[0].ID)
	// Output:
	// page 1: order-1=done order-2=leased
	// page 2: order-3=pending order-4=pending
	// page 3: order-5=pending
	// pending: 3 from order-3
}
