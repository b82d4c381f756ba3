package leaseq_test

// Tests of the edges of what a call takes: counts up to what the columns
// hold, instants within the range the queue stores, intervals down to the
// clock's millisecond, a nil context, and a claim bound to its queue (the
// Errors tables in docs/rules.md). Each runs on each engine (forEngines).

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// overCounts are counts past leaseq.MaxCount: one past it, and one whose
// low 32 bits are 1 (what a cast to int32 would have stored).
var overCounts = []int64{leaseq.MaxCount + 1, 1<<32 + 1}

// wantRefused fails t unless err wraps ErrInvalid and names field.
func wantRefused(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), field) {
		t.Fatalf("%s: got %v, want ErrInvalid naming %s", what, err, field)
	}
}

// enqueuePath is one of the calls that write jobs.
type enqueuePath struct {
	name    string
	enqueue func(f *fixture, j leaseq.Job) error
}

// enqueuePaths write j by each enqueue call. The batch holds a valid job
// before j, so that a refusal of j must also leave that one unwritten;
// EnqueueTx commits its transaction after the call, so that what the call
// wrote, if anything, would be in the table.
var enqueuePaths = []enqueuePath{
	{"Enqueue", func(f *fixture, j leaseq.Job) error { return f.q.Enqueue(f.ctx, j) }},
	{"EnqueueBatch", func(f *fixture, j leaseq.Job) error {
		return f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: j.ID + "-before"}, j})
	}},
	{"EnqueueTx", func(f *fixture, j leaseq.Job) error {
		tx, err := f.db.BeginTx(f.ctx, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		err = f.q.EnqueueTx(f.ctx, tx, j)
		if cerr := tx.Commit(); cerr != nil {
			f.t.Fatal(cerr)
		}
		return err
	}},
}

// TestCountLimits: MaxAttempts (of a Job and of Options), ClaimBatch's max
// and Qty at the largest value each engine's column holds are accepted and
// round-trip exactly; one past MaxCount, and 2^32+1, are ErrInvalid naming
// the field and write nothing, on every enqueue path (issue: PostgreSQL
// stored 2^32+1 as 1 from a batch and failed with an encode error alone).
func TestCountLimits(t *testing.T) { forEngines(t, testCountLimits) }

func testCountLimits(t *testing.T, eng testEngine) {
	if strconv.IntSize < 64 {
		t.Skip("counts past 2^31 need a 64-bit int")
	}
	f := newFixture(t, eng, leaseq.Options{})
	for _, p := range enqueuePaths {
		for _, n := range overCounts {
			before := f.snapshot()
			err := p.enqueue(f, leaseq.Job{ID: p.name + "-over", MaxAttempts: int(n)})
			wantRefused(t, p.name+" with MaxAttempts "+strconv.FormatInt(n, 10), err, "MaxAttempts")
			f.unchanged(before, "refused "+p.name)
		}
		id := p.name + "-at"
		if err := p.enqueue(f, leaseq.Job{ID: id, Qty: math.MaxInt, MaxAttempts: leaseq.MaxCount}); err != nil {
			t.Fatalf("%s with MaxAttempts %d and Qty %d: %v", p.name, leaseq.MaxCount, math.MaxInt, err)
		}
		if s := f.get(id); s.MaxAttempts != leaseq.MaxCount || s.Qty != math.MaxInt {
			t.Fatalf("%s: stored max_attempts=%d qty=%d, want %d and %d", p.name, s.MaxAttempts, s.Qty,
				leaseq.MaxCount, math.MaxInt)
		}
	}

	for _, n := range overCounts {
		before := f.snapshot()
		cs, err := f.q.ClaimBatch(f.ctx, "w", time.Second, int(n))
		wantRefused(t, "ClaimBatch with max "+strconv.FormatInt(n, 10), err, "max")
		if cs != nil {
			t.Fatalf("refused ClaimBatch returned claims %+v", cs)
		}
		f.unchanged(before, "refused ClaimBatch")
	}
	cs, err := f.q.ClaimBatch(f.ctx, "w", time.Second, leaseq.MaxCount)
	if err != nil || len(cs) != 4 {
		t.Fatalf("ClaimBatch with max %d: %d claims, %v; want all 4 jobs", leaseq.MaxCount, len(cs), err)
	}
	for _, c := range cs {
		if c.Queue != f.q.Name() || c.Token != 1 || c.Attempt != 1 || c.Qty != f.get(c.ID).Qty {
			t.Fatalf("claim %+v: want queue %q, token 1, attempt 1 and the stored qty", c, f.q.Name())
		}
	}

	for _, n := range overCounts {
		_, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: "other", MaxAttempts: int(n)})
		wantRefused(t, "New with MaxAttempts "+strconv.FormatInt(n, 10), err, "MaxAttempts")
	}
	q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: "other", MaxAttempts: leaseq.MaxCount, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.Enqueue(f.ctx, leaseq.Job{ID: "defaulted"}); err != nil {
		t.Fatal(err)
	}
	if s, err := q.Get(f.ctx, "defaulted"); err != nil || s.MaxAttempts != leaseq.MaxCount {
		t.Fatalf("job under Options.MaxAttempts %d: %+v, %v", leaseq.MaxCount, s, err)
	}
}

// TestWorkConcurrencyLimit: Work with Concurrency past MaxCount is
// ErrInvalid at once naming it (on PostgreSQL, 2^32 used to claim nothing
// and log nothing, 2^31 to fail every claim); at MaxCount it runs jobs, and
// each handler's claim names its queue.
func TestWorkConcurrencyLimit(t *testing.T) { forEnginesInTurn(t, testWorkConcurrencyLimit) }

func testWorkConcurrencyLimit(t *testing.T, eng testEngine) {
	if strconv.IntSize < 64 {
		t.Skip("counts past 2^31 need a 64-bit int")
	}
	q := realQueue(t, eng)
	h := func(context.Context, leaseq.Claim) error { return nil }
	for _, n := range overCounts {
		errc := make(chan error, 1)
		go func() { errc <- q.Work(context.Background(), leaseq.WorkerOptions{Owner: "w", Concurrency: int(n)}, h) }()
		err := waitWithin(t, errc, 5*time.Second, "Work to refuse its Concurrency")
		wantRefused(t, "Work with Concurrency "+strconv.FormatInt(n, 10), err, "Concurrency")
	}
	mustEnqueue(t, q, leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"})
	got := make(chan leaseq.Claim, 2)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: leaseq.MaxCount},
		func(_ context.Context, c leaseq.Claim) error { got <- c; return nil })
	for range 2 {
		if c := waitFor(t, got, "a handler to run"); c.Queue != q.Name() || c.Token != 1 {
			t.Fatalf("handler's claim %+v: want queue %q, token 1", c, q.Name())
		}
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if s := mustGet(t, q, id); s.Status != leaseq.StatusDone {
			t.Fatalf("row %s; want done", fmtState(s))
		}
	}
}

// TestClaimBoundToQueue: queues emails and invoices each hold order-7,
// claimed by the same owner with token 1. Each fenced call of invoices
// refuses the claim from emails (false, nil), both rows unchanged; the real
// holder then succeeds. A Claim with no Queue (built by hand) is judged by
// ID, owner and token on the queue it is given to.
func TestClaimBoundToQueue(t *testing.T) { forEngines(t, testClaimBoundToQueue) }

func testClaimBoundToQueue(t *testing.T, eng testEngine) {
	setup := func(t *testing.T) (f *fixture, invoices *leaseq.Queue, fromEmails, fromInvoices leaseq.Claim) {
		f = newFixture(t, eng, leaseq.Options{Name: "emails"})
		invoices = f.queue("invoices")
		f.enqueue(leaseq.Job{ID: "order-7", Qty: 1})
		if err := invoices.Enqueue(f.ctx, leaseq.Job{ID: "order-7", Qty: 2}); err != nil {
			t.Fatal(err)
		}
		fromEmails = f.mustClaim("svc@host1", time.Second)
		fromInvoices, ok, err := invoices.Claim(f.ctx, "svc@host1", time.Second)
		if err != nil || !ok {
			t.Fatalf("Claim of invoices: %v, %v", ok, err)
		}
		if fromEmails.Queue != "emails" || fromInvoices.Queue != "invoices" ||
			fromEmails.Token != 1 || fromInvoices.Token != 1 || fromEmails.ID != fromInvoices.ID {
			t.Fatalf("claims %+v and %+v: want order-7 with token 1 from emails and from invoices", fromEmails, fromInvoices)
		}
		return f, invoices, fromEmails, fromInvoices
	}
	for _, fc := range fencedCalls {
		t.Run(fc.name, func(t *testing.T) {
			f, invoices, fromEmails, fromInvoices := setup(t)
			f.refusedEverywhere(invoices, fromEmails, "a claim from emails, on invoices")
			f.refusedEverywhere(f.q, fromInvoices, "a claim from invoices, on emails")
			for _, c := range []struct {
				q *leaseq.Queue
				c leaseq.Claim
			}{{invoices, fromInvoices}, {f.q, fromEmails}} {
				if ok, err := fc.call(f.ctx, c.q, c.c); !ok || err != nil {
					t.Fatalf("%s by the holder on %s: %v, %v; want true", fc.name, c.q.Name(), ok, err)
				}
			}
		})
	}
	t.Run("FinishBatch", func(t *testing.T) {
		f, invoices, fromEmails, fromInvoices := setup(t)
		before := f.snapshot()
		oks, err := invoices.FinishBatch(f.ctx, []leaseq.Claim{fromEmails})
		if err != nil || len(oks) != 1 || oks[0] {
			t.Fatalf("FinishBatch of the claim from emails on invoices: %v, %v; want [false]", oks, err)
		}
		f.unchanged(before, "refused FinishBatch")
		oks, err = invoices.FinishBatch(f.ctx, []leaseq.Claim{fromEmails, fromInvoices})
		if err != nil || len(oks) != 2 || oks[0] || !oks[1] {
			t.Fatalf("FinishBatch of both claims on invoices: %v, %v; want [false true]", oks, err)
		}
		if s := f.get("order-7"); s.Status != leaseq.StatusLeased || s.Token != 1 {
			t.Fatalf("emails' row %s after the batch on invoices; want leased, untouched", fmtState(s))
		}
	})
	t.Run("no queue is the queue called", func(t *testing.T) {
		f, invoices, fromEmails, _ := setup(t)
		byHand := leaseq.Claim{ID: "order-7", Owner: "svc@host1", Token: 1}
		if ok, err := invoices.Finish(f.ctx, byHand); !ok || err != nil {
			t.Fatalf("Finish on invoices of a claim with no Queue: %v, %v; want true", ok, err)
		}
		fromEmails.Queue = ""
		if ok, err := f.q.Finish(f.ctx, fromEmails); !ok || err != nil {
			t.Fatalf("Finish on emails of its claim with Queue cleared: %v, %v; want true", ok, err)
		}
	})
}

// TestNilContext: every call that takes a context refuses a nil one with
// ErrInvalid before database/sql sees it (which panicked with its pool's
// lock held, so that every later call on the *sql.DB hung, also with a
// deadline), and the *sql.DB then still works.
func TestNilContext(t *testing.T) { forEngines(t, testNilContext) }

func testNilContext(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	c := f.mustClaim("w", time.Second)
	var nilCtx context.Context // a literal nil is what vet reports; a variable is what callers pass
	tx, err := f.db.BeginTx(f.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	send := func(context.Context, leaseq.Claim) error { return nil }
	calls := map[string]func() error{
		"New":          func() error { _, err := leaseq.New(nilCtx, f.db, leaseq.Options{Name: "n"}); return err },
		"Queues":       func() error { _, err := leaseq.Queues(nilCtx, f.db); return err },
		"Enqueue":      func() error { return f.q.Enqueue(nilCtx, leaseq.Job{ID: "b"}) },
		"EnqueueBatch": func() error { return f.q.EnqueueBatch(nilCtx, []leaseq.Job{{ID: "b"}}) },
		"EnqueueTx":    func() error { return f.q.EnqueueTx(nilCtx, tx, leaseq.Job{ID: "b"}) },
		"Claim":        func() error { _, _, err := f.q.Claim(nilCtx, "w", time.Second); return err },
		"ClaimBatch":   func() error { _, err := f.q.ClaimBatch(nilCtx, "w", time.Second, 2); return err },
		"Finish":       func() error { _, err := f.q.Finish(nilCtx, c); return err },
		"FinishBatch":  func() error { _, err := f.q.FinishBatch(nilCtx, []leaseq.Claim{c}); return err },
		"Extend":       func() error { _, _, err := f.q.Extend(nilCtx, c, time.Second); return err },
		"Release":      func() error { _, err := f.q.Release(nilCtx, c, 0, ""); return err },
		"Fail":         func() error { _, err := f.q.Fail(nilCtx, c, ""); return err },
		"Cancel":       func() error { return f.q.Cancel(nilCtx, "a", "") },
		"Requeue":      func() error { return f.q.Requeue(nilCtx, "a") },
		"Purge":        func() error { _, err := f.q.Purge(nilCtx, ms(0)); return err },
		"Get":          func() error { _, err := f.q.Get(nilCtx, "a"); return err },
		"Stats":        func() error { _, err := f.q.Stats(nilCtx); return err },
		"List":         func() error { _, err := f.q.List(nilCtx, leaseq.Filter{}); return err },
		"Activity":     func() error { _, err := f.q.Activity(nilCtx, ms(0)); return err },
		"Process":      func() error { _, err := f.q.Process(nilCtx, "w", time.Second, send); return err },
		"Work": func() error {
			return f.q.Work(nilCtx, leaseq.WorkerOptions{Owner: "w"}, func(context.Context, leaseq.Claim) error { return nil })
		},
	}
	before := f.snapshot()
	for name, call := range calls {
		wantRefused(t, name+" with a nil ctx", call(), "ctx is nil")
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	f.unchanged(before, "calls with a nil ctx")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.db.PingContext(ctx); err != nil {
		t.Fatalf("the *sql.DB after the calls: %v", err)
	}
	if ok, err := f.q.Finish(ctx, c); !ok || err != nil {
		t.Fatalf("Finish after the calls: %v, %v; want true", ok, err)
	}
	if _, err := leaseq.Queues(ctx, f.db); err != nil {
		t.Fatal(err)
	}
}

// lastInstant is the last millisecond the queue stores: the end of year
// 9999.
var lastInstant = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

// TestInstantLimits: a Deadline or RunAt at the last millisecond of year
// 9999 is stored exactly; one a millisecond later, or past the int64
// millisecond range (which wrapped: a deadline in year 584,556,076 was
// stored as an hour from now), or time.Unix(math.MaxInt64, 0), a common
// "never" (refused with a message naming 1969), is ErrInvalid saying to use
// a zero Deadline, written on no enqueue path. Purge's before and
// Activity's since are held to the same range; Activity at
// time.UnixMilli(math.MinInt64) panicked.
func TestInstantLimits(t *testing.T) { forEngines(t, testInstantLimits) }

func testInstantLimits(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	past := []time.Time{
		lastInstant.Add(time.Millisecond),
		time.UnixMilli(math.MaxInt64),
		time.Unix(math.MaxInt64/1000+1, 0),
		time.Unix(math.MaxInt64, 0),
		time.Date(584_556_076, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	before := time.Time{}.Add(-time.Millisecond)
	for _, p := range enqueuePaths {
		for _, at := range past {
			snap := f.snapshot()
			err := p.enqueue(f, leaseq.Job{ID: "never", Deadline: at})
			wantRefused(t, p.name+" with Deadline "+at.String(), err, "use a zero Deadline for no deadline")
			if strings.Contains(err.Error(), "1969") {
				t.Fatalf("%s: %v names 1969", p.name, err)
			}
			err = p.enqueue(f, leaseq.Job{ID: "late", RunAt: at})
			wantRefused(t, p.name+" with RunAt "+at.String(), err, "RunAt")
			f.unchanged(snap, "refused "+p.name)
		}
		err := p.enqueue(f, leaseq.Job{ID: "early", RunAt: before})
		wantRefused(t, p.name+" with RunAt before year 1", err, "RunAt")
		id := p.name + "-far"
		if err := p.enqueue(f, leaseq.Job{ID: id, Deadline: lastInstant, RunAt: lastInstant.Add(-time.Millisecond)}); err != nil {
			t.Fatalf("%s with Deadline %s: %v", p.name, lastInstant, err)
		}
		if s := f.get(id); !s.Deadline.Equal(lastInstant) || !s.RunAt.Equal(lastInstant.Add(-time.Millisecond)) {
			t.Fatalf("%s: stored deadline %s run_at %s, want %s and 1ms before", p.name, s.Deadline, s.RunAt, lastInstant)
		}
	}

	for _, at := range append(past, before, time.UnixMilli(math.MinInt64)) {
		_, err := f.q.Purge(f.ctx, at)
		wantRefused(t, "Purge before "+at.String(), err, "before")
		_, err = f.q.Activity(f.ctx, at)
		wantRefused(t, "Activity since "+at.String(), err, "since")
	}
	if n, err := f.q.Purge(f.ctx, lastInstant); n != 0 || err != nil {
		t.Fatalf("Purge before %s: %d, %v; want 0 (nothing done)", lastInstant, n, err)
	}
	if _, err := f.q.Activity(f.ctx, time.Time{}); !errors.Is(err, leaseq.ErrInvalid) || strings.Contains(err.Error(), "outside") {
		t.Fatalf("Activity since year 1: %v, want ErrInvalid for the span", err)
	}
}

// TestIntervalFloors: each interval of WorkerOptions is 0 for its default
// or at least 1ms; one under it (a PollInterval of 1ns made an idle pool
// spin) is ErrInvalid at once naming the field and the floor. At 1ms
// each is accepted. The default heartbeat of a lease under 2ms would be
// under the floor, so such a lease is refused unless a heartbeat shorter
// than it could be given, which none can.
func TestIntervalFloors(t *testing.T) { forEnginesInTurn(t, testIntervalFloors) }

func testIntervalFloors(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	h := func(context.Context, leaseq.Claim) error { return nil }
	for _, d := range []time.Duration{time.Nanosecond, time.Millisecond - 1} {
		for field, opts := range map[string]leaseq.WorkerOptions{
			"Lease":        {Owner: "w", Lease: d},
			"Heartbeat":    {Owner: "w", Heartbeat: d},
			"PollInterval": {Owner: "w", PollInterval: d},
			"DrainTimeout": {Owner: "w", DrainTimeout: d},
		} {
			errc := make(chan error, 1)
			go func() { errc <- q.Work(context.Background(), opts, h) }()
			err := waitWithin(t, errc, 5*time.Second, "Work to refuse "+field)
			wantRefused(t, "Work with "+field+" "+d.String(), err, field)
			if field != "Lease" && !strings.Contains(err.Error(), "floor of 1ms") {
				t.Fatalf("Work with %s %v: %v does not name the floor", field, d, err)
			}
		}
	}
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(context.Background(), leaseq.WorkerOptions{Owner: "w", Lease: time.Millisecond}, h)
	}()
	wantRefused(t, "Work with Lease 1ms", waitWithin(t, errc, 5*time.Second, "Work to refuse Lease 1ms"), "use at least 2ms")

	mustEnqueue(t, q, leaseq.Job{ID: "a"})
	done := make(chan string, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Heartbeat: time.Millisecond,
		PollInterval: time.Millisecond, DrainTimeout: time.Millisecond},
		func(_ context.Context, c leaseq.Claim) error { done <- c.ID; return nil })
	if id := waitFor(t, done, "the handler at 1ms intervals"); id != "a" {
		t.Fatalf("handled %q, want a", id)
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if s := mustGet(t, q, "a"); s.Status != leaseq.StatusDone {
		t.Fatalf("row %s; want done", fmtState(s))
	}
}

// TestWorkNegativeBackoff: a Backoff that answers a negative delay releases
// the job at once, as RetryAfter does, instead of a Release that is
// ErrInvalid and retried until the lease ends, the job stuck meanwhile.
func TestWorkNegativeBackoff(t *testing.T) { forEnginesInTurn(t, testWorkNegativeBackoff) }

func testWorkNegativeBackoff(t *testing.T, eng testEngine) {
	run := runJob(t, eng, leaseq.Job{ID: "a", MaxAttempts: 1}, 1, -time.Hour, func(context.Context, leaseq.Claim) error {
		return errors.New("upstream timeout")
	})
	if s := run.row; s.Status != leaseq.StatusQuarantined || !strings.Contains(s.Reason, "max attempts reached, released: upstream timeout") {
		t.Fatalf("row %s; want released into quarantine, its one attempt used", fmtState(s))
	}
	if errs := run.log.all(atLevel(slog.LevelError)); len(errs) > 0 {
		t.Fatalf("errors logged: %v", errs)
	}
}
