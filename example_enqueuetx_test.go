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

// EnqueueTx writes jobs inside the caller's own transaction, so that an
// order and the job that ships it are committed together or not at all. The
// caller begins, commits or rolls back; the queue never does. Open's DSN
// makes db.BeginTx begin IMMEDIATE, as SQLite needs for a transaction that
// reads before it writes. Keep the transaction short: while it is open the
// queue's own writers wait for it.
func ExampleQueue_EnqueueTx() {
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

	placeOrder := func(id string, qty int, jobs ...leaseq.Job) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() // a no-op after Commit
		if _, err := tx.ExecContext(ctx, `INSERT INTO orders VALUES ($1, $2)`, id, qty); err != nil {
			return err
		}
		if err := q.EnqueueTx(ctx, tx, jobs...); err != nil {
			return err
		}
		return tx.Commit()
	}

	err = placeOrder("order-7", 3, leaseq.Job{ID: "ship-order-7", Qty: 3})
	fmt.Println("order-7:", err)
	// The job's ID is taken: the whole order is rolled back.
	err = placeOrder("order-8", 1, leaseq.Job{ID: "ship-order-7", Qty: 1})
	fmt.Println("order-8:", errors.Is(err, leaseq.ErrDuplicate))

	var orders int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM orders`).Scan(&orders); err != nil {
		panic(err)
	}
	c, ok, err := q.Claim(ctx, "shipper", time.Minute)
	fmt.Println("orders:", orders, "claimed:", ok, c.ID, err)
	// Output:
	// order-7: <nil>
	// order-8: true
	// orders: 1 claimed: true ship-order-7 <nil>
}
