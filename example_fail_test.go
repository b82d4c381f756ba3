package leaseq_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/leaseq/leaseq"
)

// Work that retrying cannot fix (the address does not exist) is failed at
// once: the job is quarantined with the reason, where an operator can look
// at it and Requeue it. Fail is fenced like Finish, so a claim that is no
// longer the job's lease cannot fail it.
func ExampleQueue_Fail() {
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

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Payload: []byte(`{"to":"nowhere"}`)}); err != nil {
		panic(err)
	}
	c, _, err := q.Claim(ctx, "worker-a", 30*time.Second)
	if err != nil {
		panic(err)
	}
	ok, err := q.Fail(ctx, c, "no such address: nowhere")
	fmt.Println("failed:", ok, err)

	ok, err = q.Fail(ctx, c, "again") // the job is no longer leased to c
	fmt.Println("failed again:", ok, err)

	s, err := q.Get(ctx, "order-7")
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Status+":", s.Reason)
	// Output:
	// failed: true <nil>
	// failed again: false <nil>
	// quarantined: no such address: nowhere
}
