package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/leaseq/leaseq"
)

// BenchmarkEnqueueTx measures EnqueueTx of one job on each engine: "call"
// is the call alone, many in one transaction that is rolled back at the
// end (what the call itself costs: its savepoint, its check that tx is on
// the queue's database, its INSERT); "commit" is a transaction of its own
// per job, begun and committed around the call, as a service does it.
func BenchmarkEnqueueTx(b *testing.B) {
	engines, err := testEngines()
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range engines {
		b.Run(e.name+"/call", func(b *testing.B) {
			q, db := benchTxQueue(b, e)
			ctx := context.Background()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Rollback()
			b.ResetTimer()
			for i := range b.N {
				if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: fmt.Sprintf("job-%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(e.name+"/commit", func(b *testing.B) {
			q, db := benchTxQueue(b, e)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: fmt.Sprintf("job-%d", i)}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// benchTxQueue is a queue on a fresh database of engine e.
func benchTxQueue(b *testing.B, e testEngine) (*leaseq.Queue, *sql.DB) {
	b.Helper()
	db := e.open(b, e.fresh(b))
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q, db
}
