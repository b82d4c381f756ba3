package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestCancelRacingEnqueue races Cancel with the Enqueue of its ID: a Cancel
// is tried again and again while the Enqueue runs. Each answer is either
// ErrNotFound (the job was not there yet) or nil (the job was quarantined),
// never ErrInvalid with a reason read from a row the refused update did
// not see (on PostgreSQL the update and the read that explains its
// refusal are two statements of READ COMMITTED, each with its own view).
func TestCancelRacingEnqueue(t *testing.T) { forEngines(t, testCancelRacingEnqueue) }

func testCancelRacingEnqueue(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	const rounds = 200
	for round := range rounds {
		id := fmt.Sprint("r", round)
		enqueued := make(chan error, 1)
		go func() { enqueued <- q.Enqueue(ctx, leaseq.Job{ID: id}) }()
		limit := time.Now().Add(20 * time.Second)
		var err error
		for tries := 0; ; tries++ {
			err = q.Cancel(ctx, id, "stop")
			if !errors.Is(err, leaseq.ErrNotFound) || time.Now().After(limit) {
				break
			}
		}
		if eerr := <-enqueued; eerr != nil {
			t.Fatalf("round %d: Enqueue: %v", round, eerr)
		}
		if err != nil {
			t.Fatalf("round %d: Cancel racing the Enqueue of its ID: %v; want ErrNotFound before the job is there, nil after", round, err)
		}
		if s := mustGet(t, q, id); s.Status != leaseq.StatusQuarantined || s.Reason != "stop" || s.Token != 0 {
			t.Fatalf("round %d: row %s after the Cancel; want quarantined, reason \"stop\"", round, fmtState(s))
		}
	}
}
