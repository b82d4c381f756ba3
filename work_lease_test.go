package leaseq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// neighbours runs a pool on f's queue whose handlers, each told by the test,
// either return nil or, for "s", settle their job with a FinishTx whose fn
// waits for the test (a fn slow within its own lease), and reports each
// handler run's outcome.
type neighbours struct {
	fnIn, fnOut chan struct{}            // s's fn began; the test lets it end
	finishTx    chan error               // s's FinishTx answered: nil when accepted
	ret         map[string]chan struct{} // by job ID: the test lets the handler return nil
	outcomes    chan leaseq.Outcome      // every run's
	started     chan string              // each handler's job as it starts
	causes      map[string]chan error    // by job ID: the cause its context ended with, if it did
}

func runNeighbours(t *testing.T, f *fixture, opts leaseq.WorkerOptions, ids ...string) *neighbours {
	n := &neighbours{fnIn: make(chan struct{}), fnOut: make(chan struct{}), finishTx: make(chan error, 1),
		ret: map[string]chan struct{}{}, outcomes: make(chan leaseq.Outcome, 4*len(ids)), started: make(chan string, len(ids)),
		causes: map[string]chan error{}}
	for _, id := range ids {
		n.ret[id], n.causes[id] = make(chan struct{}), make(chan error, 1)
	}
	opts.OnOutcome = func(o leaseq.Outcome) { n.outcomes <- o }
	opts.DrainTimeout = time.Millisecond
	runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
		n.started <- c.ID
		context.AfterFunc(ctx, func() { n.causes[c.ID] <- context.Cause(ctx) })
		if c.ID != "s" {
			select {
			case <-n.ret[c.ID]:
			case <-ctx.Done():
			}
			return nil
		}
		ok, err := f.q.FinishTx(ctx, c, func(ctx context.Context, _ leaseq.Tx) error {
			close(n.fnIn)
			select {
			case <-n.fnOut:
			case <-ctx.Done():
			}
			return nil
		})
		if err == nil && !ok {
			err = fmt.Errorf("FinishTx refused")
		}
		n.finishTx <- err
		return err
	})
	return n
}

// wantFinished lets the handler of id return nil and fails the test unless
// its Finish is accepted and its context did not end before: its lease was
// never lost.
func (n *neighbours) wantFinished(t *testing.T, id string) {
	t.Helper()
	select {
	case cause := <-n.causes[id]:
		t.Fatalf("%s's context ended (cause %v) while its handler ran: a lease lost beside a slow FinishTx", id, cause)
	default:
	}
	close(n.ret[id])
	for {
		o := waitFor(t, n.outcomes, id+"'s outcome")
		if o.Claim.ID != id {
			continue // s's, or another told earlier
		}
		if o.Result != leaseq.OutcomeFinished {
			t.Fatalf("outcome %s %q, want finished", id, o.Result)
		}
		return
	}
}

// TestWorkFinishTxBesideNeighbours: a handler's FinishTx whose fn runs long,
// within its own lease, costs the pool's other handlers none of their
// leases (rule 48 in docs/rules.md: an extension fails for its own
// handler alone). On SQLite the fn holds the one writer, so the heartbeat
// waits behind it: the cycle that runs the FinishTx first renews every
// other lease that would end no later than the FinishTx's own. On
// PostgreSQL the heartbeat renews the others while the fn holds its row,
// and skips, then tries again, a row another transaction holds.
func TestWorkFinishTxBesideNeighbours(t *testing.T) { forEngines(t, testWorkFinishTxBesideNeighbours) }

func testWorkFinishTxBesideNeighbours(t *testing.T, eng testEngine) {
	if eng.name == sqliteEngine.name {
		finishTxBesideNeighboursSQLite(t, eng)
		return
	}
	finishTxBesideNeighboursPostgres(t, eng)
}

// finishTxBesideNeighboursSQLite: n's lease ends (2h) before s's (3h) when
// s's FinishTx begins, and its end passes while s's fn holds the writer; no
// heartbeat comes in the test's time (an hour of real time apart).
func finishTxBesideNeighboursSQLite(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "n"})
	f.enqueue(leaseq.Job{ID: "s", RunAt: ms(3_600_000)})
	n := runNeighbours(t, f, leaseq.WorkerOptions{Owner: "w", Concurrency: 2, Lease: 2 * time.Hour,
		Heartbeat: time.Hour, PollInterval: 5 * time.Millisecond}, "n", "s")
	waitFor(t, n.started, "n's handler")
	f.at(3_600_000) // s is due: claimed at 1h, its lease ends at 3h
	waitFor(t, n.started, "s's handler")
	waitFor(t, n.fnIn, "s's fn")
	f.at(7_200_001) // n's lease as last renewed ended; s's has not
	close(n.fnOut)
	if err := waitFor(t, n.finishTx, "s's FinishTx"); err != nil {
		t.Fatalf("s's FinishTx: %v", err)
	}
	n.wantFinished(t, "n")
	if got := f.get("n"); got.Status != leaseq.StatusDone || got.Token != 1 {
		t.Fatalf("n: %s, want done by its one claim", fmtRow(got))
	}
}

// finishTxBesideNeighboursPostgres: while s's fn holds s's row and the test
// holds m's, the heartbeat renews n; once the test lets m's row go, m too.
func finishTxBesideNeighboursPostgres(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	for _, id := range []string{"m", "n", "s"} {
		f.enqueue(leaseq.Job{ID: id})
	}
	n := runNeighbours(t, f, leaseq.WorkerOptions{Owner: "w", Concurrency: 3, Lease: 3 * time.Second,
		Heartbeat: 20 * time.Millisecond, PollInterval: 5 * time.Millisecond}, "m", "n", "s")
	for range 3 {
		waitFor(t, n.started, "the handlers to start")
	}
	waitFor(t, n.fnIn, "s's fn")
	other, err := f.db.BeginTx(f.ctx, nil) // another transaction holding m's row, as a claim passing over it does
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.Exec("SELECT 1 FROM leaseq_jobs WHERE id = 'm' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	f.at(1000)
	renewedTo := func(id string, until time.Time) func() bool {
		return func() bool { return f.get(id).LeaseUntil.Equal(until) }
	}
	waitUntil(t, 10*time.Second, "n's lease renewed to 4s while s's fn and the test hold their rows", renewedTo("n", ms(4000)))
	if err := other.Rollback(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "m's lease renewed to 4s once its row is free", renewedTo("m", ms(4000)))
	f.at(2999) // s's fn ends within s's own lease
	close(n.fnOut)
	if err := waitFor(t, n.finishTx, "s's FinishTx"); err != nil {
		t.Fatalf("s's FinishTx: %v", err)
	}
	f.at(3500) // past every lease as claimed; before m's and n's as renewed
	n.wantFinished(t, "m")
	n.wantFinished(t, "n")
}
