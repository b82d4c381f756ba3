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

// A service opens the database with Open, gets its queue with New and the
// zero Options (the system clock and the defaults), and its workers claim a
// job, do the work and finish it with the claim they were given.
func Example() {
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
	defer q.Close() // before db.Close: it gives the queue's connection back

	err = q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3, Deadline: time.Now().Add(time.Hour)})
	if err != nil {
		panic(err)
	}

	c, ok, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil {
		panic(err)
	}
	if !ok {
		fmt.Println("nothing to do")
		return
	}
	fmt.Printf("claimed %s qty=%d token=%d attempt=%d\n", c.ID, c.Qty, c.Token, c.Attempt)

	// ... deliver c.ID and c.Qty to a receiver that de-duplicates on c.ID ...

	accepted, err := q.Finish(ctx, c)
	if err != nil {
		panic(err)
	}
	fmt.Println("finish accepted:", accepted)

	s, err := q.Get(ctx, "order-7")
	if err != nil {
		panic(err)
	}
	fmt.Println("status:", s.Status)
	// Output:
	// claimed order-7 qty=3 token=1 attempt=1
	// finish accepted: true
	// status: done
}

// A worker that stalls past its lease is refused when it reports back, even
// under the same name as the worker that took over: the token tells the two
// lease generations apart. A ManualClock steps exactly onto the lease end.
func ExampleQueue_Finish_stale() {
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

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3}); err != nil {
		panic(err)
	}
	a, _, err := q.Claim(ctx, "worker", time.Second)
	if err != nil {
		panic(err)
	}

	clock.Advance(999 * time.Millisecond)
	_, ok, err := q.Claim(ctx, "worker", time.Second)
	fmt.Println("at 999ms, claimed:", ok, err) // a's lease is live

	clock.Advance(time.Millisecond) // a's lease ends exactly now
	b, ok, err := q.Claim(ctx, "worker", time.Second)
	fmt.Println("at 1000ms, claimed:", ok, err)

	clock.Advance(time.Millisecond)
	lateOK, err := q.Finish(ctx, a)
	fmt.Printf("token %d accepted: %v %v\n", a.Token, lateOK, err)
	newOK, err := q.Finish(ctx, b)
	fmt.Printf("token %d accepted: %v %v\n", b.Token, newOK, err)
	// Output:
	// at 999ms, claimed: false <nil>
	// at 1000ms, claimed: true <nil>
	// token 1 accepted: false <nil>
	// token 2 accepted: true <nil>
}

// Process claims, calls send with no lock held, and finishes if send
// succeeded.
func ExampleQueue_Process() {
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
	res, err := q.Process(ctx, "worker-a", time.Minute, func(ctx context.Context, c leaseq.Claim) error {
		// Deliver c to a receiver that de-duplicates on c.ID. ctx ends
		// when the lease does.
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

// Errors are matched with errors.Is; the message names the operation, the
// job and the field. Nothing is written.
func ExampleQueue_Enqueue_errors() {
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
	err = q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3})
	fmt.Println(errors.Is(err, leaseq.ErrDuplicate), err)
	err = q.Enqueue(ctx, leaseq.Job{ID: "order-8", Qty: -1})
	fmt.Println(errors.Is(err, leaseq.ErrInvalid), err)
	err = q.Enqueue(ctx, leaseq.Job{ID: "order-9", Priority: 1000})
	fmt.Println(errors.Is(err, leaseq.ErrInvalid), err)
	// Output:
	// true leaseq: enqueue "order-7": duplicate job ID
	// true leaseq: enqueue "order-8": Qty -1 is negative: invalid argument
	// true leaseq: enqueue "order-9": Priority 1000 is outside -100..100: invalid argument
}

// Get shows a job's current row: who holds it, with which token, and why it
// was quarantined if it was.
func ExampleQueue_Get() {
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

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3, MaxAttempts: 1}); err != nil {
		panic(err)
	}
	if _, _, err := q.Claim(ctx, "worker-a", time.Second); err != nil {
		panic(err)
	}
	clock.Advance(time.Second) // worker-a never finished, and its only attempt is spent
	if _, _, err := q.Claim(ctx, "worker-b", time.Second); err != nil {
		panic(err)
	}

	s, err := q.Get(ctx, "order-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Status, s.Owner, s.Token, s.Attempts)
	fmt.Println(s.Reason)
	// Output:
	// quarantined worker-a 1 1
	// max attempts reached: 1 of 1, last lease ended at 1767225601000 (unix ms)
}
