package leaseq_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestWorkCheckAfterReturn: a check of a pool's running claims (rule 56 in
// docs/rules.md) that took its snapshot of them while a handler was still
// running, and read the leased jobs after that handler's result was
// recorded, ends no handler and warns of no lost lease: the job is no
// longer leased because its own result released it.
func TestWorkCheckAfterReturn(t *testing.T) { forEngines(t, testWorkCheckAfterReturn) }

func testWorkCheckAfterReturn(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	owner := "check-" + eng.name
	f.enqueue(leaseq.Job{ID: "a", Priority: 1})
	f.enqueue(leaseq.Job{ID: "c"})
	for _, id := range []string{"b1", "b2"} { // cancelled to make the pool check its claims
		f.enqueue(leaseq.Job{ID: id, RunAt: ms(3_600_000)})
	}
	aStarted, aReturn, cStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
	outcomes := make(chan leaseq.Outcome, 4)
	sink, logger := newLogSink()
	runWork(t, f.q, leaseq.WorkerOptions{Owner: owner, Concurrency: 2, Lease: time.Hour, DrainTimeout: time.Millisecond, Logger: logger,
		Backoff:   func(int) time.Duration { return time.Hour },
		OnOutcome: func(o leaseq.Outcome) { outcomes <- o }},
		func(ctx context.Context, c leaseq.Claim) error {
			if c.ID == "c" { // runs until the test ends: keeps the checks checking
				close(cStarted)
				<-ctx.Done()
				return nil
			}
			close(aStarted)
			<-aReturn
			return errors.New("boom")
		})
	waitFor(t, aStarted, "a's handler to start")
	waitFor(t, cStarted, "c's handler to start")
	// Armed: the next check, once it has its snapshot (a and c running),
	// waits while a's handler returns and its release is recorded.
	var armed atomic.Bool
	armed.Store(true)
	checks := make(chan struct{}, 16)
	t.Cleanup(leaseq.OnHeldCheck(owner, func() {
		if armed.CompareAndSwap(true, false) {
			close(aReturn) // not t.Fatal: this is the pool's goroutine
			select {
			case o := <-outcomes:
				if o.Claim.ID != "a" || o.Result != leaseq.OutcomeReleased {
					t.Errorf("outcome %+v, want a released", o)
				}
			case <-time.After(20 * time.Second):
				t.Error("timed out after 20s waiting for a's outcome")
			}
		}
		select {
		case checks <- struct{}{}:
		default:
		}
	}))
	if err := f.q.Cancel(f.ctx, "b1", "make the pool check"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, checks, "the armed check")
	// Checks run one after another: one more that began after the armed
	// one ended tells that it is over.
	for range len(checks) {
		<-checks
	}
	if err := f.q.Cancel(f.ctx, "b2", "make the pool check again"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, checks, "a check after the armed one")
	if got := sink.all(record(slog.LevelWarn, "taken from its handler", "")); len(got) > 0 {
		t.Fatalf("a check that read after a's release was recorded warned %v; records:\n%s", got, sink)
	}
}
