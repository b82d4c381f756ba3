package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Work with the service's transactions: a handler that settles its job
// with FinishTx (rule 46), and the wake-ups after InTx, FinishTx and
// EnqueueTx (rule 45). These tests look at the pool's goroutines, so they
// run on each engine in turn (forEnginesInTurn).

// TestWorkHandlerFinishTx: a handler that finished its job with FinishTx
// and returns nil gets nothing more written and nothing logged above
// Debug, though it runs on past its lease's end: its heartbeats stopped
// with the finish, and no lease timer fires.
func TestWorkHandlerFinishTx(t *testing.T) { forEnginesInTurn(t, testWorkHandlerFinishTx) }

func testWorkHandlerFinishTx(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	f := &fixture{t: t, ctx: context.Background(), e: eng, db: q.DB(), q: q}
	f.createOrders()
	mustEnqueue(t, q, leaseq.Job{ID: "ok"}, leaseq.Job{ID: "err-after"})
	sink, logger := newLogSink()
	const lease = 200 * time.Millisecond
	type result struct {
		id       string
		ok       bool
		err      error
		cause    error
		finished time.Time
	}
	results := make(chan result, 2)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: lease, Heartbeat: lease / 10, Concurrency: 2, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			if strings.HasPrefix(c.ID, "next-") {
				return nil // the next step, finished as usual
			}
			ok, err := q.FinishTx(ctx, c, f.placeOrder("order-"+c.ID, "next-"+c.ID))
			// Run on until well past the lease's end: a heartbeat that went
			// on would be refused, and the lease timer would fire, each
			// with a warning and the context ended.
			past := c.LeaseUntil.Add(3 * lease)
			for time.Now().Before(past) && ctx.Err() == nil {
				time.Sleep(lease / 10)
			}
			results <- result{c.ID, ok, err, context.Cause(ctx), time.Now()}
			if c.ID == "err-after" {
				return errors.New("after the finish")
			}
			return nil
		})
	for range 2 {
		r := waitFor(t, results, "the handlers")
		if !r.ok || r.err != nil || r.cause != nil {
			t.Fatalf("%s: FinishTx %v %v, handler context ended by %v", r.id, r.ok, r.err, r.cause)
		}
	}
	sink.waitFor(t, "the error after the finish at Warn", record(slog.LevelWarn, "after FinishTx finished its job", "err-after"))
	sink.waitFor(t, "the finish at Debug", record(slog.LevelDebug, "finished", "ok"))
	for _, e := range sink.all(func(e logEntry) bool { return e.level > slog.LevelDebug }) {
		if e.str("job") != "err-after" || e.level != slog.LevelWarn {
			t.Errorf("logged above Debug: %v", e)
		}
	}
	for _, id := range []string{"ok", "err-after"} {
		s := mustGet(t, q, id)
		if s.Status != leaseq.StatusDone || s.Token != 1 || s.Attempts != 1 {
			t.Errorf("%s: %+v, want done by its one claim", id, s)
		}
		if n := mustGet(t, q, "next-"+id); n.Status == "" {
			t.Errorf("next-%s missing", id)
		}
	}
	if got := f.orders(); got != "order-err-after,order-ok" {
		t.Fatalf("orders %q", got)
	}
}

// TestWorkWakesAfterTx: jobs enqueued in InTx and FinishTx wake an idle
// pool once their transaction commits, and so does EnqueueTx's job when
// the caller commits a moment after it returned (rule 45); the pool looks
// only once an hour on its own.
func TestWorkWakesAfterTx(t *testing.T) { forEnginesInTurn(t, testWorkWakesAfterTx) }

func testWorkWakesAfterTx(t *testing.T, eng testEngine) {
	ctx := context.Background()
	cases := []struct {
		name string
		// prepare runs before Work starts; it returns the call that makes
		// job "x" claimable, which returns once "x" is committed.
		prepare func(t *testing.T, q *leaseq.Queue) func() error
	}{
		{"InTx", func(t *testing.T, q *leaseq.Queue) func() error {
			return func() error {
				return q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, leaseq.Job{ID: "x"}) })
			}
		}},
		{"FinishTx", func(t *testing.T, q *leaseq.Queue) func() error {
			mustEnqueue(t, q, leaseq.Job{ID: "first"})
			c, ok, err := q.Claim(ctx, "other", time.Hour)
			if !ok || err != nil {
				t.Fatal(ok, err)
			}
			return func() error {
				ok, err := q.FinishTx(ctx, c, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, leaseq.Job{ID: "x"}) })
				if !ok || err != nil {
					return fmt.Errorf("FinishTx: %v %v", ok, err)
				}
				return nil
			}
		}},
		{"EnqueueTx committed 50ms after", func(t *testing.T, q *leaseq.Queue) func() error {
			return func() error {
				tx, err := q.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: "x"}); err != nil {
					tx.Rollback()
					return err
				}
				time.Sleep(50 * time.Millisecond) // the caller's other work, inside the look-again window
				return tx.Commit()
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := realQueue(t, eng)
			wake := tc.prepare(t, q)
			started := make(chan time.Time, 2)
			runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour},
				func(_ context.Context, c leaseq.Claim) error {
					if c.ID == "x" {
						started <- time.Now()
					}
					return nil
				})
			waitParked(t)
			if err := wake(); err != nil {
				t.Fatal(err)
			}
			committed := time.Now()
			at := waitWithin(t, started, 5*time.Second, "the handler to start after the commit")
			t.Logf("started %v after the commit", at.Sub(committed))
		})
	}
}

// TestWorkHandlerFinishTxRefused: a handler whose FinishTx was refused
// (here: its job was cancelled first) and that then returns nil gets no
// Finish written for it — its nil is refused as its FinishTx was, and
// logged at Warn — and its outcome is refused; the row stays as the
// Cancel left it.
func TestWorkHandlerFinishTxRefused(t *testing.T) {
	forEnginesInTurn(t, testWorkHandlerFinishTxRefused)
}

func testWorkHandlerFinishTxRefused(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	ctx := context.Background()
	mustEnqueue(t, q, leaseq.Job{ID: "a"})
	sink, logger := newLogSink()
	outcomes := make(chan leaseq.Outcome, 1)
	refused := make(chan bool, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Logger: logger,
		OnOutcome: func(o leaseq.Outcome) { outcomes <- o }},
		func(hctx context.Context, c leaseq.Claim) error {
			if err := q.Cancel(ctx, c.ID, "operator stop"); err != nil {
				return err
			}
			ok, err := q.FinishTx(context.WithoutCancel(hctx), c, func(context.Context, leaseq.Tx) error { return nil })
			refused <- !ok && err == nil
			return nil
		})
	if !waitFor(t, refused, "the handler's FinishTx") {
		t.Fatal("FinishTx of a cancelled job was not refused with false, nil")
	}
	if o := waitFor(t, outcomes, "the outcome"); o.Result != leaseq.OutcomeRefused {
		t.Fatalf("outcome %q, want refused", o.Result)
	}
	sink.waitFor(t, "the refused nil at Warn", record(slog.LevelWarn, "FinishTx was refused", "a"))
	if s := mustGet(t, q, "a"); s.Status != leaseq.StatusQuarantined || s.Reason != "operator stop" {
		t.Fatalf("row %s; want quarantined by the Cancel", fmtState(s))
	}
}

// TestWorkFinishTxInCycle: on SQLite a handler's FinishTx runs in the
// pool's cycle (rules 46 and 48). Accepted, the same commit claims the job
// that refills its slot (on PostgreSQL, where it commits on its own, the
// job stays pending), but that job's handler starts only once the handler
// that settled returned: no more than Concurrency handlers run at once. fn's
// error is FinishTx's, with nothing written and the job still the
// handler's; a finish refused after fn (the lease ended while it ran)
// keeps none of fn's rows, and the job's next claim records its own.
func TestWorkFinishTxInCycle(t *testing.T) {
	forEnginesInTurn(t, func(t *testing.T, eng testEngine) {
		t.Run("refill waits for the slot", func(t *testing.T) { testFinishTxRefillWaits(t, eng) })
		t.Run("fn error", func(t *testing.T) { testFinishTxInCycleFnError(t, eng) })
		t.Run("refused after fn", func(t *testing.T) { testFinishTxInCycleRefused(t, eng) })
	})
}

// ordersQueue is a queue on a fresh database with an orders table and the
// jobs ids enqueued.
func ordersQueue(t *testing.T, eng testEngine, ids ...string) (*leaseq.Queue, *fixture) {
	q := openQueue(t, eng, eng.fresh(t))
	f := &fixture{t: t, ctx: context.Background(), e: eng, db: q.DB(), q: q}
	f.createOrders()
	for _, id := range ids {
		mustEnqueue(t, q, leaseq.Job{ID: id})
	}
	return q, f
}

func testFinishTxRefillWaits(t *testing.T, eng testEngine) {
	q, f := ordersQueue(t, eng, "a", "b")
	settled, release, started := make(chan bool, 1), make(chan struct{}), make(chan string, 2)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Concurrency: 1},
		func(ctx context.Context, c leaseq.Claim) error {
			started <- c.ID
			ok, err := q.FinishTx(ctx, c, f.placeOrder("order-"+c.ID, ""))
			if c.ID == "a" {
				settled <- ok && err == nil
				<-release
			}
			return err
		})
	if id := waitFor(t, started, "a's handler"); id != "a" {
		t.Fatalf("first handler %s, want a", id)
	}
	if !waitFor(t, settled, "a's FinishTx") {
		t.Fatal("a's FinishTx was not accepted")
	}
	// On PostgreSQL a FinishTx is a transaction of its own, and the slot
	// is refilled once its handler returned.
	want := leaseq.StatusLeased
	if eng.name == postgresEngine.name {
		want = leaseq.StatusPending
	}
	if s := mustGet(t, q, "b"); s.Status != want {
		t.Fatalf("b %s once a's FinishTx committed; want %s", fmtState(s), want)
	}
	select {
	case id := <-started:
		t.Fatalf("%s's handler started while a's still ran: more than Concurrency 1 at once", id)
	default:
	}
	close(release)
	if id := waitFor(t, started, "b's handler"); id != "b" {
		t.Fatalf("second handler %s, want b", id)
	}
	waitUntil(t, 20*time.Second, "b done", func() bool { return mustGet(t, q, "b").Status == leaseq.StatusDone })
	if got := f.orders(); got != "order-a,order-b" {
		t.Fatalf("orders %q", got)
	}
}

func testFinishTxInCycleFnError(t *testing.T, eng testEngine) {
	q, f := ordersQueue(t, eng, "a")
	boom := errors.New("boom")
	type seen struct {
		ok   bool
		err  error
		row  leaseq.State
		byFn string
	}
	got := make(chan seen, 1)
	outcomes := make(chan leaseq.Outcome, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Backoff: func(int) time.Duration { return time.Hour },
		OnOutcome: func(o leaseq.Outcome) { outcomes <- o }},
		func(ctx context.Context, c leaseq.Claim) error {
			ok, err := q.FinishTx(ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
				if err := f.placeOrder("order-a", "next-a")(ctx, tx); err != nil {
					return err
				}
				return boom
			})
			got <- seen{ok, err, mustGet(t, q, "a"), f.orders()}
			return err
		})
	s := waitFor(t, got, "the handler's FinishTx")
	if s.ok || !errors.Is(s.err, boom) {
		t.Fatalf("FinishTx %v, %v; want false and fn's error", s.ok, s.err)
	}
	if s.row.Status != leaseq.StatusLeased || s.row.Token != 1 || s.byFn != "" {
		t.Fatalf("after fn's error: row %s, orders %q; want still leased, nothing written", fmtState(s.row), s.byFn)
	}
	if o := waitFor(t, outcomes, "the outcome"); o.Result != leaseq.OutcomeReleased || !errors.Is(o.Err, boom) {
		t.Fatalf("outcome %q (%v), want released with fn's error", o.Result, o.Err)
	}
	if _, err := q.Get(context.Background(), "next-a"); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("next-a: %v; want ErrNotFound: enqueued by a failed fn", err)
	}
}

func testFinishTxInCycleRefused(t *testing.T, eng testEngine) {
	q, f := ordersQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "a", MaxAttempts: 20})
	const lease = 300 * time.Millisecond
	type seen struct {
		token int64
		ok    bool
		err   error
	}
	got := make(chan seen, 20)
	_, logger := newLogSink() // the lost lease is logged; not looked at here
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: lease, Heartbeat: lease / 3, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			ok, err := q.FinishTx(context.WithoutCancel(ctx), c, func(ctx context.Context, tx leaseq.Tx) error {
				if err := f.placeOrder(fmt.Sprintf("order-%d", c.Token), "")(ctx, tx); err != nil {
					return err
				}
				if c.Token == 1 {
					// The row is held (PostgreSQL) or the write lock
					// (SQLite), so no heartbeat renews the lease meanwhile:
					// it ends while fn runs.
					time.Sleep(2 * lease)
				}
				return nil
			})
			got <- seen{c.Token, ok, err}
			if !ok && err == nil {
				return leaseq.ErrLeaseLost
			}
			return err
		})
	if s := waitFor(t, got, "the first claim's FinishTx"); s.token != 1 || s.ok || s.err != nil {
		t.Fatalf("token %d: FinishTx %v, %v; want refused (false, nil) after fn", s.token, s.ok, s.err)
	}
	// A later claim's FinishTx is accepted (on a loaded host a claim or two
	// more may lose their short leases first, each refused alike).
	var s seen
	for s = waitFor(t, got, "a later claim's FinishTx"); !s.ok && s.err == nil; s = waitFor(t, got, "a later claim's FinishTx") {
	}
	if !s.ok || s.err != nil {
		t.Fatalf("token %d: FinishTx %v, %v; want accepted", s.token, s.ok, s.err)
	}
	want := fmt.Sprintf("order-%d", s.token)
	if got := f.orders(); got != want {
		t.Fatalf("orders %q, want %s alone: the refused fns' rows rolled back", got, want)
	}
	if a := mustGet(t, q, "a"); a.Status != leaseq.StatusDone || a.Token != s.token {
		t.Fatalf("a %s, want done by token %d", fmtState(a), s.token)
	}
}
