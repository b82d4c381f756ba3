package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/leaseq/leaseq"
)

// A service runs Work: a pool of handlers that claims jobs as they come,
// keeps each lease alive with heartbeats while its handler runs, and
// records what the handler returned. A handler's nil finishes the job;
// Permanent fails it for good; any other error would retry it later. This
// pool stops once it has seen the three jobs; a service would stop it on
// SIGTERM. Either way Work returns once the results are recorded.
func ExampleQueue_Work() {
	dir, err := os.MkdirTemp("", "leaseq-work-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	err = q.EnqueueBatch(context.Background(), []leaseq.Job{
		{ID: "order-1", Qty: 3},
		{ID: "order-2", Qty: 1},
		{ID: "order-3", Qty: 0},
	})
	if err != nil {
		panic(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var mu sync.Mutex
	var shipped []string
	seen := 0
	err = q.Work(ctx, leaseq.WorkerOptions{
		Owner:       "shipper",
		Concurrency: 4,
		Lease:       30 * time.Second,
		Heartbeat:   10 * time.Second,
	}, func(ctx context.Context, c leaseq.Claim) error {
		mu.Lock()
		defer mu.Unlock()
		if seen++; seen == 3 {
			stop()
		}
		if c.Qty == 0 {
			return leaseq.Permanent(errors.New("quantity is zero"))
		}
		shipped = append(shipped, fmt.Sprintf("%s x%d", c.ID, c.Qty))
		return nil
	})
	fmt.Println("Work returned:", err)

	slices.Sort(shipped) // handlers run concurrently, in no set order
	fmt.Println("shipped:", strings.Join(shipped, ", "))
	st, err := q.Stats(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("done %d, quarantined %d\n", st.Done, st.Quarantined)
	bad, err := q.Get(context.Background(), "order-3")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s, %q\n", bad.ID, bad.Status, bad.Reason)
	// Output:
	// Work returned: <nil>
	// shipped: order-1 x3, order-2 x1
	// done 2, quarantined 1
	// order-3: quarantined, "quantity is zero"
}
