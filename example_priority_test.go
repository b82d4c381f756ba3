package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// Claim takes the claimable job of the highest priority first, whatever
// order the jobs were enqueued in. Priorities run from -100 to 100; 0 is the
// default.
func Example_priority() {
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

	err = q.EnqueueBatch(ctx, []leaseq.Job{
		{ID: "newsletter", Priority: -10},
		{ID: "order-7"}, // priority 0
		{ID: "password-reset", Priority: 50},
	})
	if err != nil {
		panic(err)
	}
	for {
		c, ok, err := q.Claim(ctx, "worker-a", time.Minute)
		if err != nil {
			panic(err)
		}
		if !ok {
			break
		}
		fmt.Println(c.ID, c.Priority)
	}
	// Output:
	// password-reset 50
	// order-7 0
	// newsletter -10
}
