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

// openExample opens a queue on a fresh file with a manual clock at t0, for
// the examples below. A service would use leaseq.Open on its own path and
// leave Options.Clock nil.
func openExample() (*leaseq.Queue, *leaseq.ManualClock, func()) {
	dir, err := os.MkdirTemp("", "leaseq-example")
	if err != nil {
		panic(err)
	}
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	clock := leaseq.NewManualClock(t0)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	return q, clock, func() { db.Close(); os.RemoveAll(dir) }
}

// A worker claims a job, does the work, and finishes it with the claim it
// was given.
func Example() {
	q, _, done := openExample()
	defer done()
	ctx := context.Background()

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3}); err != nil {
		panic(err)
	}
	c, ok, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil || !ok {
		panic(fmt.Sprint(ok, err))
	}
	fmt.Printf("claimed %s qty=%d token=%d attempt=%d\n", c.ID, c.Qty, c.Token, c.Attempt)

	accepted, err := q.Finish(ctx, c)
	if err != nil {
		panic(err)
	}
	fmt.Println("finish accepted:", accepted)
	// Output:
	// claimed order-7 qty=3 token=1 attempt=1
	// finish accepted: true
}

// A worker that stalls past its lease is refused when it reports back, even
// under the same name as the worker that took over: the token tells the two
// lease generations apart.
func ExampleQueue_Finish_stale() {
	q, clock, done := openExample()
	defer done()
	ctx := context.Background()

	q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3})
	a, _, _ := q.Claim(ctx, "worker", time.Second)
	clock.Advance(time.Second) // a's lease ends
	b, _, _ := q.Claim(ctx, "worker", time.Second)

	lateOK, _ := q.Finish(ctx, a)
	newOK, _ := q.Finish(ctx, b)
	fmt.Printf("token %d accepted: %v\n", a.Token, lateOK)
	fmt.Printf("token %d accepted: %v\n", b.Token, newOK)
	// Output:
	// token 1 accepted: false
	// token 2 accepted: true
}

// Process claims, calls send with no lock held, and finishes if send
// succeeded.
func ExampleQueue_Process() {
	q, _, done := openExample()
	defer done()
	ctx := context.Background()

	q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3})
	res, err := q.Process(ctx, "worker-a", time.Minute, func(ctx context.Context, c leaseq.Claim) error {
		// Deliver c to a receiver that de-duplicates on c.ID.
		fmt.Printf("sending %s qty=%d\n", c.ID, c.Qty)
		return nil
	})
	fmt.Println(res.Claimed, res.Finished, err)

	res, err = q.Process(ctx, "worker-a", time.Minute, func(context.Context, leaseq.Claim) error {
		panic("not called: nothing is claimable")
	})
	fmt.Println(res.Claimed, err)
	// Output:
	// sending order-7 qty=3
	// true true <nil>
	// false <nil>
}

// Errors are matched with errors.Is; the message names the job and the
// field.
func ExampleQueue_Enqueue_errors() {
	q, _, done := openExample()
	defer done()
	ctx := context.Background()

	q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3})
	err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3})
	fmt.Println(errors.Is(err, leaseq.ErrDuplicate), err)
	err = q.Enqueue(ctx, leaseq.Job{ID: "order-8", Qty: -1})
	fmt.Println(errors.Is(err, leaseq.ErrInvalid), err)
	// Output:
	// true leaseq: enqueue "order-7": duplicate job ID
	// true leaseq: enqueue "order-8": Qty -1 is negative: invalid argument
}

// Get shows a job's current row: who holds it, with which token, and why it
// was quarantined if it was.
func ExampleQueue_Get() {
	q, clock, done := openExample()
	defer done()
	ctx := context.Background()

	q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3, MaxAttempts: 1})
	q.Claim(ctx, "worker-a", time.Second)
	clock.Advance(time.Second)
	q.Claim(ctx, "worker-b", time.Second) // the only attempt is spent: quarantine

	s, err := q.Get(ctx, "order-7")
	fmt.Println(s.Status, s.Owner, s.Token, s.Attempts, err)
	fmt.Println(s.Reason)
	// Output:
	// quarantined worker-a 1 1 <nil>
	// max attempts reached: 1 of 1, last lease ended at 1767225601000 (unix ms)
}
