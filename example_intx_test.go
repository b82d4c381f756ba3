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

// InTx writes the service's own rows and the jobs that follow from them
// in one transaction, taken in the queue's writer turn: on SQLite the
// service's writes never wait on the file lock against the queue's, and
// calls that arrive together share a commit. fn's error rolls back what
// fn wrote, and is InTx's.
func ExampleQueue_InTx() {
	dir, err := os.MkdirTemp("", "leaseq-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "shop.db"))
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
	if _, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT PRIMARY KEY, qty INTEGER)`); err != nil {
		panic(err)
	}

	placeOrder := func(id string, qty int) error {
		return q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES ($1, $2)`, id, qty); err != nil {
				return err
			}
			return tx.Enqueue(ctx, leaseq.Job{ID: "ship-" + id, Qty: qty})
		})
	}
	fmt.Println("order-7:", placeOrder("order-7", 3))
	// The order's ID is taken: nothing of the second try is kept.
	fmt.Println("order-7 again:", placeOrder("order-7", 1) != nil)

	var orders int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&orders); err != nil {
		panic(err)
	}
	c, ok, err := q.Claim(ctx, "shipper", time.Minute)
	fmt.Println("orders:", orders, "claimed:", ok, c.ID, err)
	// Output:
	// order-7: <nil>
	// order-7 again: true
	// orders: 1 claimed: true ship-order-7 <nil>
}

// FinishTx commits a handler's own writes only with the fenced Finish of
// its claim: a worker whose lease ended, and whose job another worker
// took, is refused (false, nil) and nothing it wrote is kept.
func ExampleQueue_FinishTx() {
	dir, err := os.MkdirTemp("", "leaseq-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "shop.db"))
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
	if _, err := db.ExecContext(ctx, `CREATE TABLE deliveries (job TEXT PRIMARY KEY, token INTEGER)`); err != nil {
		panic(err)
	}
	if err := q.Enqueue(ctx, leaseq.Job{ID: "ship-order-7"}); err != nil {
		panic(err)
	}
	record := func(c leaseq.Claim) func(ctx context.Context, tx leaseq.Tx) error {
		return func(ctx context.Context, tx leaseq.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO deliveries VALUES ($1, $2)`, c.ID, c.Token)
			return err
		}
	}

	a, _, _ := q.Claim(ctx, "worker-a", time.Second)
	clock.Advance(time.Second) // a's lease ends; b takes the job
	b, _, _ := q.Claim(ctx, "worker-b", time.Second)
	okA, errA := q.FinishTx(ctx, a, record(a))
	okB, errB := q.FinishTx(ctx, b, record(b))
	fmt.Println("a:", okA, errA, "b:", okB, errB)

	var token int
	err = db.QueryRowContext(ctx, `SELECT token FROM deliveries WHERE job = $1`, "ship-order-7").Scan(&token)
	fmt.Println("delivery recorded by token", token, err)
	_, err = q.FinishTx(ctx, leaseq.Claim{}, record(b))
	fmt.Println("zero claim:", errors.Is(err, leaseq.ErrInvalid))
	// Output:
	// a: false <nil> b: true <nil>
	// delivery recorded by token 2 <nil>
	// zero claim: true
}
