package leaseq_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
)

// TestEnqueueBatchOneDuplicateNamed: an EnqueueBatch of one job whose ID
// the queue has is ErrDuplicate naming jobs[0], as a longer batch names
// its job, on both engines (PostgreSQL named none; found by FuzzQueueModel).
func TestEnqueueBatchOneDuplicateNamed(t *testing.T) {
	forEngines(t, testEnqueueBatchOneDuplicateNamed)
}

func testEnqueueBatchOneDuplicateNamed(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "j0"})
	before := f.snapshot()
	err := f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "j0"}})
	if !errors.Is(err, leaseq.ErrDuplicate) || !strings.Contains(err.Error(), `jobs[0]`) {
		t.Fatalf("EnqueueBatch of one taken ID: %v; want ErrDuplicate naming jobs[0]", err)
	}
	f.unchanged(before, "the refused EnqueueBatch")
}
