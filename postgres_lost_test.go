package leaseq_test

import (
	"context"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// TestPostgresLostAtCommit: a call whose connection is lost once the server
// carried out its COMMIT (or, for an Enqueue, its one statement), its
// answer never delivered, while its context still runs, finds out what
// happened and answers the call's success, as the row shows: a caller told
// "failed" would enqueue again under a new key. The proxy passes the
// message and cuts the connection as the server's answer comes.
func TestPostgresLostAtCommit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		word string // what the cut message contains ("commit\x00": pgx's COMMIT, whole)
		call func(ctx context.Context, q *leaseq.Queue) error
	}{
		{"in tx", "commit\x00", func(ctx context.Context, q *leaseq.Queue) error {
			return q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
				return tx.Enqueue(ctx, leaseq.Job{ID: "cut-me"})
			})
		}},
		{"enqueue", "cut-me", func(ctx context.Context, q *leaseq.Queue) error {
			return q.Enqueue(ctx, leaseq.Job{ID: "cut-me"})
		}},
		{"enqueue batch", "cut-me", func(ctx context.Context, q *leaseq.Queue) error {
			return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "cut-me"}, {ID: "cut-me-2"}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			direct := pgtest.URL(t)
			px := startSlowProxy(t, direct)
			q := openPostgresQueue(t, px.url)
			px.onSend(c.word, 0, func() { px.cut.Store(true) })
			err := c.call(ctx, q)
			if err != nil {
				t.Fatalf("answer %v; want nil: the server carried the call out", err)
			}
			if ctx.Err() != nil {
				t.Fatal("the call outlived its context")
			}
			row, err := openPostgresQueue(t, direct).Get(ctx, "cut-me")
			if err != nil || row.Status != leaseq.StatusPending || row.Token != 0 {
				t.Fatalf("row %s, %v after the call; want it enqueued", fmtState(row), err)
			}
		})
	}
}
