package leaseq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Tests of Pause and Resume: rule 54 in docs/rules.md.

func TestPause(t *testing.T) { forEngines(t, testPause) }

func testPause(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	other := f.queue("other")
	f.enqueue(leaseq.Job{ID: "running"})
	f.enqueue(leaseq.Job{ID: "waiting"})
	if err := other.Enqueue(f.ctx, leaseq.Job{ID: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	running := f.mustClaim("w", time.Second)
	for range 2 { // the second changes nothing
		if err := f.q.Pause(f.ctx); err != nil {
			t.Fatalf("Pause: %v", err)
		}
	}
	f.wantPaused(f.q, true)
	f.wantPaused(other, false)

	// While paused, no claim, not even of a lease that ended, and nothing
	// written.
	for _, at := range []int64{0, 999, 1000, 5000} {
		f.at(at)
		before := f.snapshot()
		if c, ok := f.claim("w", time.Second); ok {
			t.Fatalf("Claim at %dms of a paused queue: got %+v, want nothing", at, c)
		}
		if cs, err := f.q.ClaimBatch(f.ctx, "w", time.Second, 10); err != nil || len(cs) != 0 {
			t.Fatalf("ClaimBatch at %dms of a paused queue: %+v, %v; want none", at, cs, err)
		}
		f.unchanged(before, "a claim of a paused queue")
		if due, ok, err := f.q.NextDue(f.ctx); ok || err != nil {
			t.Fatalf("next due time of a paused queue at %dms: %d, %v, %v; want none (an idle pool would wake for it)", at, due, ok, err)
		}
	}
	// Enqueue works, another queue is not paused, and the result of a
	// claim made before the pause is recorded.
	f.at(500)
	f.enqueue(leaseq.Job{ID: "enqueued"})
	if c, ok, err := other.Claim(f.ctx, "w", time.Second); !ok || err != nil || c.ID != "elsewhere" {
		t.Fatalf("Claim of another queue: %+v, %v, %v; want elsewhere", c, ok, err)
	}
	if !f.finish(running) {
		t.Fatal("Finish of a claim made before the pause refused")
	}
	f.wantRow(leaseq.State{ID: "running", Status: leaseq.StatusDone, Owner: "w", Token: 1, Attempts: 1, MaxAttempts: 3,
		LeaseUntil: ms(1000), EnqueuedAt: ms(0), UpdatedAt: ms(500)})

	for range 2 {
		if err := f.q.Resume(f.ctx); err != nil {
			t.Fatalf("Resume: %v", err)
		}
	}
	f.wantPaused(f.q, false)
	cs, err := f.q.ClaimBatch(f.ctx, "w", time.Second, 10)
	if err != nil || len(cs) != 2 || cs[0].ID != "waiting" || cs[1].ID != "enqueued" {
		t.Fatalf("ClaimBatch after Resume: %+v, %v; want waiting and enqueued", cs, err)
	}
}

// wantPaused fails the test unless q's Stats say paused.
func (f *fixture) wantPaused(q *leaseq.Queue, paused bool) {
	f.t.Helper()
	st, err := q.Stats(f.ctx)
	if err != nil {
		f.t.Fatalf("Stats: %v", err)
	}
	if st.Paused != paused {
		f.t.Fatalf("Stats of %s: Paused %v, want %v (%s)", q.Name(), st.Paused, paused, fmtStats(st))
	}
}

// TestPauseErrors: a nil ctx is ErrInvalid, a closed queue ErrClosed, a
// read-only one ErrInvalid; none writes anything.
func TestPauseErrors(t *testing.T) { forEngines(t, testPauseErrors) }

func testPauseErrors(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	ro, err := leaseq.New(f.ctx, f.db, leaseq.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	closed, err := leaseq.New(f.ctx, f.db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	for _, call := range []struct {
		name string
		fn   func(q *leaseq.Queue, ctx context.Context) error
	}{{"Pause", (*leaseq.Queue).Pause}, {"Resume", (*leaseq.Queue).Resume}} {
		//lint:ignore SA1012 a nil ctx is what is tested
		if err := call.fn(f.q, nil); !errors.Is(err, leaseq.ErrInvalid) { //nolint:staticcheck
			t.Errorf("%s(nil ctx): %v, want ErrInvalid", call.name, err)
		}
		if err := call.fn(ro, f.ctx); !errors.Is(err, leaseq.ErrInvalid) {
			t.Errorf("%s on a read-only queue: %v, want ErrInvalid", call.name, err)
		}
		if err := call.fn(closed, f.ctx); !errors.Is(err, leaseq.ErrClosed) {
			t.Errorf("%s on a closed queue: %v, want ErrClosed", call.name, err)
		}
	}
	f.wantPaused(f.q, false)
	f.wantPaused(ro, false)
}

// TestPauseClaimTakesNoWriteLock: on SQLite a Claim of a paused queue is a
// read: it answers at once while another connection holds the write lock.
func TestPauseClaimTakesNoWriteLock(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	if err := f.q.Pause(f.ctx); err != nil {
		t.Fatal(err)
	}
	other, err := leaseq.Open(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(f.ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(f.ctx, "ROLLBACK")
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	if c, ok, err := f.q.Claim(ctx, "w", time.Second); ok || err != nil {
		t.Fatalf("Claim of a paused queue while another connection holds the write lock: %+v, %v, %v; want false, nil", c, ok, err)
	}
}

// TestPauseWork: a pool stops claiming at once when its queue is paused in
// this process; its running handler's result is recorded; Resume wakes it
// at once (its PollInterval is an hour).
func TestPauseWork(t *testing.T) { forEnginesInTurn(t, testPauseWork) }

func testPauseWork(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	mustEnqueue(t, q, leaseq.Job{ID: "running"})
	started, proceed := make(chan string, 2), make(chan struct{})
	resumed := make(chan struct{})
	early := make(chan string, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 2, PollInterval: time.Hour},
		func(_ context.Context, c leaseq.Claim) error {
			select {
			case <-resumed:
			default:
				if c.ID != "running" {
					early <- c.ID
				}
			}
			started <- c.ID
			if c.ID == "running" {
				<-proceed
			}
			return nil
		})
	waitFor(t, started, "the first handler to start")
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, q, leaseq.Job{ID: "held"}) // wakes the pool, which finds the queue paused
	close(proceed)
	waitUntil(t, 10*time.Second, "the running handler's result to be recorded", func() bool {
		return mustGet(t, q, "running").Status == leaseq.StatusDone
	})
	waitParked(t)
	if s := mustGet(t, q, "held"); s.Status != leaseq.StatusPending || s.Token != 0 {
		t.Fatalf("job %s while paused; want never claimed", fmtState(s))
	}
	close(resumed)
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if id := waitFor(t, started, "Resume to wake the pool"); id != "held" {
		t.Fatalf("started %s after Resume, want held", id)
	}
	select {
	case id := <-early:
		t.Fatalf("job %s started while the queue was paused", id)
	default:
	}
}
