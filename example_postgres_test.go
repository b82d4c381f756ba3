package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
	"github.com/leaseq/leaseq"
)

// On PostgreSQL the one change is the *sql.DB: New asks the database which
// engine it is. Workers on several hosts share the queue; with no Clock in
// the Options, "now" is the database server's clock, so hosts whose clocks
// disagree still agree on when a lease ends. Size the pool for the
// goroutines that call the queue at once: each single call is one statement
// on a connection of its own.
//
// (This example needs a server: DATABASE_URL=postgres://… go test -run
// Example_postgres -v.)
func Example_postgres() {
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(32)
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{Name: "orders"})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	if err := q.Enqueue(ctx, leaseq.Job{ID: "order-7", Qty: 3}); err != nil {
		panic(err)
	}
	c, ok, err := q.Claim(ctx, "host-a", 30*time.Second)
	if err != nil || !ok {
		panic(fmt.Sprint(ok, err))
	}
	// ... deliver the order, then:
	done, err := q.Finish(ctx, c)
	fmt.Println(c.ID, c.Token, done, err)
}
