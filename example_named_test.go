package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// Queues of different names on one database are independent: each sees,
// claims, counts and purges only its own jobs, and the same job ID may exist
// once in each. Queues on one *sql.DB share one writer, so several of them
// are about as fast together as one.
func Example_namedQueues() {
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
	emails, err := leaseq.New(ctx, db, leaseq.Options{Name: "emails"})
	if err != nil {
		panic(err)
	}
	defer emails.Close()
	invoices, err := leaseq.New(ctx, db, leaseq.Options{Name: "invoices"})
	if err != nil {
		panic(err)
	}
	defer invoices.Close()

	// Order 42 gets an email and an invoice: one job ID in each queue.
	if err := emails.Enqueue(ctx, leaseq.Job{ID: "order-42", Payload: []byte("confirmation")}); err != nil {
		panic(err)
	}
	if err := invoices.Enqueue(ctx, leaseq.Job{ID: "order-42", Payload: []byte("invoice")}); err != nil {
		panic(err)
	}

	c, ok, err := emails.Claim(ctx, "mailer", time.Minute)
	fmt.Printf("%s: %v %s %q %v\n", emails.Name(), ok, c.ID, c.Payload, err)
	_, ok, err = emails.Claim(ctx, "mailer", time.Minute)
	fmt.Printf("%s: %v %v\n", emails.Name(), ok, err) // the invoice is not its job

	st, err := invoices.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: pending %d, leased %d\n", invoices.Name(), st.Pending, st.Leased)
	// Output:
	// emails: true order-42 "confirmation" <nil>
	// emails: false <nil>
	// invoices: pending 1, leased 0
}
