package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Rules 50 and 51: a Mux routes jobs by kind, middleware wraps every
// handler run, and OnOutcome hears what the queue made of each result, as
// the fence decided it. The pools here run on the fixture's manual clock,
// which stands still: no lease ends unless a test moves it, and each
// outcome's Wait is exact.

// outcomeLog collects the outcomes of a pool, by job ID.
type outcomeLog struct {
	mu  sync.Mutex
	got map[string][]leaseq.Outcome
	ch  chan leaseq.Outcome
}

func newOutcomeLog() *outcomeLog {
	return &outcomeLog{got: map[string][]leaseq.Outcome{}, ch: make(chan leaseq.Outcome, 100)}
}

func (l *outcomeLog) add(o leaseq.Outcome) {
	l.mu.Lock()
	l.got[o.Claim.ID] = append(l.got[o.Claim.ID], o)
	l.mu.Unlock()
	l.ch <- o
}

// wait returns the next n outcomes, by job ID.
func (l *outcomeLog) wait(t *testing.T, n int) map[string]leaseq.Outcome {
	t.Helper()
	out := map[string]leaseq.Outcome{}
	for range n {
		o := waitWithin(t, l.ch, 30*time.Second, "an outcome")
		if _, dup := out[o.Claim.ID]; dup {
			t.Fatalf("a second outcome for %s: %+v", o.Claim.ID, o)
		}
		out[o.Claim.ID] = o
	}
	return out
}

// workOpts are the options of the tests' pools: a lease no test outlives
// on the standing clock, and outcomes into l.
func workOpts(l *outcomeLog, mw ...func(leaseq.Handler) leaseq.Handler) leaseq.WorkerOptions {
	return leaseq.WorkerOptions{Owner: "w", Concurrency: 4, Lease: time.Hour, PollInterval: 10 * time.Millisecond,
		Backoff: func(int) time.Duration { return 5 * time.Second }, OnOutcome: l.add, Middleware: mw}
}

// TestMuxRoutesByKind: each kind goes to its handler, JSON payloads arrive
// decoded; a kind without a handler and a payload that does not decode
// fail the job permanently with a reason that names the kind (and the
// decoding error), and the outcome is failed.
func TestMuxRoutesByKind(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		type email struct{ To string }
		var mu sync.Mutex
		seen := map[string]string{}
		m := leaseq.NewMux()
		leaseq.HandleJSON(m, "email", func(ctx context.Context, c leaseq.Claim, args email) error {
			mu.Lock()
			defer mu.Unlock()
			seen[c.ID] = "email to " + args.To
			return nil
		})
		m.Handle("", func(ctx context.Context, c leaseq.Claim) error {
			mu.Lock()
			defer mu.Unlock()
			seen[c.ID] = "no kind"
			return nil
		})
		mustEnqueue(t, f.q, leaseq.Job{ID: "e1", Kind: "email", Payload: []byte(`{"To":"ann","Extra":1}`)},
			leaseq.Job{ID: "plain"}, leaseq.Job{ID: "unknown", Kind: "sms"},
			leaseq.Job{ID: "bad", Kind: "email", Payload: []byte(`{"To":`)})
		l := newOutcomeLog()
		runWork(t, f.q, workOpts(l), m.ServeJob)
		got := l.wait(t, 4)
		for id, want := range map[string]string{"e1": leaseq.OutcomeFinished, "plain": leaseq.OutcomeFinished,
			"unknown": leaseq.OutcomeFailed, "bad": leaseq.OutcomeFailed} {
			if got[id].Result != want {
				t.Errorf("outcome of %s: %q (%v), want %q", id, got[id].Result, got[id].Err, want)
			}
		}
		if seen["e1"] != "email to ann" || seen["plain"] != "no kind" || len(seen) != 2 {
			t.Fatalf("handlers saw %v", seen)
		}
		f.wantRow(leaseq.State{ID: "unknown", Kind: "sms", Status: leaseq.StatusQuarantined, Owner: "w", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(3_600_000), Reason: `no handler for kind "sms"`, EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		reason := f.get("bad").Reason
		for _, part := range []string{`kind "email"`, "leaseq_test.email", "unexpected end of JSON input"} {
			if !strings.Contains(reason, part) {
				t.Fatalf("reason of the undecodable job: %q, want it to say %q", reason, part)
			}
		}
		if f.get("bad").Status != leaseq.StatusQuarantined || f.get("e1").Status != leaseq.StatusDone {
			t.Fatalf("rows:\n%s", f.dump())
		}
	})
}

// TestMuxHandlePanics: a duplicate kind, a kind no job could have, and a
// nil handler are mistakes in the program: Handle panics saying which.
func TestMuxHandlePanics(t *testing.T) {
	m := leaseq.NewMux()
	h := func(context.Context, leaseq.Claim) error { return nil }
	m.Handle("a", h)
	for _, tc := range []struct {
		what string
		call func()
		says string
	}{
		{"duplicate", func() { m.Handle("a", h) }, `kind "a" has a handler already`},
		{"duplicate through HandleJSON", func() {
			leaseq.HandleJSON(m, "a", func(context.Context, leaseq.Claim, int) error { return nil })
		}, `kind "a" has a handler already`},
		{"too long", func() { m.Handle(strings.Repeat("k", leaseq.MaxKindLen+1), h) }, "over the limit of 64"},
		{"NUL", func() { m.Handle("a\x00", h) }, "NUL"},
		{"nil", func() { m.Handle("b", nil) }, `nil handler for kind "b"`},
		{"nil JSON", func() { leaseq.HandleJSON[int](m, "b", nil) }, `nil handler for kind "b"`},
	} {
		func() {
			defer func() {
				v := recover()
				if v == nil || !strings.Contains(fmt.Sprint(v), tc.says) {
					t.Errorf("%s: panic %v, want one saying %q", tc.what, v, tc.says)
				}
			}()
			tc.call()
		}()
	}
	if err := m.ServeJob(context.Background(), leaseq.Claim{Kind: "b"}); !strings.Contains(fmt.Sprint(err), `no handler for kind "b"`) {
		t.Fatalf("ServeJob of kind b after the refused Handle calls: %v", err)
	}
}

// TestOutcomes: every result a handler can have, and what the fence made
// of it: finished; released (attempts left); quarantined (the release
// found the attempts used up; and one whose delay reaches the deadline);
// failed (Permanent); refused (the handler's own job cancelled under it);
// each with the handler's error, the claim, and the wait since the job
// became claimable on the queue's clock. The rows are as the outcomes say.
func TestOutcomes(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		boom := errors.New("boom")
		mustEnqueue(t, f.q, leaseq.Job{ID: "ok", Kind: "k"}, leaseq.Job{ID: "retry"},
			leaseq.Job{ID: "last", MaxAttempts: 1}, leaseq.Job{ID: "late", Deadline: ms(10_000)},
			leaseq.Job{ID: "perm"}, leaseq.Job{ID: "cancelled"}, leaseq.Job{ID: "delayed", RunAt: ms(200)})
		f.at(300)
		h := func(ctx context.Context, c leaseq.Claim) error {
			switch c.ID {
			case "retry", "last":
				return boom
			case "late":
				return leaseq.RetryAfter(9700*time.Millisecond, boom) // 300 + 9700 reaches the deadline
			case "perm":
				return leaseq.Permanent(boom)
			case "cancelled":
				if err := f.q.Cancel(ctx, c.ID, "operator"); err != nil {
					return err
				}
			}
			return nil
		}
		l := newOutcomeLog()
		runWork(t, f.q, workOpts(l), h)
		got := l.wait(t, 7)
		want := map[string]string{"ok": leaseq.OutcomeFinished, "retry": leaseq.OutcomeReleased,
			"last": leaseq.OutcomeQuarantined, "late": leaseq.OutcomeQuarantined, "perm": leaseq.OutcomeFailed,
			"cancelled": leaseq.OutcomeRefused, "delayed": leaseq.OutcomeFinished}
		for id, w := range want {
			o := got[id]
			if o.Result != w {
				t.Errorf("outcome of %s: %q, want %q", id, o.Result, w)
			}
			if wantWait := map[bool]time.Duration{true: 100 * time.Millisecond, false: 300 * time.Millisecond}[id == "delayed"]; o.Wait != wantWait {
				t.Errorf("wait of %s: %v, want %v", id, o.Wait, wantWait)
			}
			if o.Claim.ID != id || o.Claim.Token != 1 || o.Claim.Owner != "w" || o.Run < 0 {
				t.Errorf("outcome of %s: claim %+v run %v", id, o.Claim, o.Run)
			}
		}
		if got["ok"].Claim.Kind != "k" || !got["delayed"].Claim.RunAt.Equal(ms(200)) || !got["ok"].Claim.EnqueuedAt.Equal(ms(0)) {
			t.Errorf("claims in the outcomes: %+v, %+v", got["ok"].Claim, got["delayed"].Claim)
		}
		for _, id := range []string{"retry", "last", "late", "perm"} {
			if !errors.Is(got[id].Err, boom) {
				t.Errorf("error of %s: %v, want boom", id, got[id].Err)
			}
		}
		if got["ok"].Err != nil || got["cancelled"].Err != nil {
			t.Errorf("errors of handlers that returned nil: %v, %v", got["ok"].Err, got["cancelled"].Err)
		}
		f.wantRow(leaseq.State{ID: "retry", Status: leaseq.StatusPending, Owner: "w", Token: 1, Attempts: 1, MaxAttempts: 3,
			LeaseUntil: ms(300), RunAt: ms(5300), Reason: "boom", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.wantRow(leaseq.State{ID: "last", Status: leaseq.StatusQuarantined, Owner: "w", Token: 1, Attempts: 1, MaxAttempts: 1,
			LeaseUntil: ms(300), RunAt: ms(5300), Reason: "max attempts reached, released: boom", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.wantRow(leaseq.State{ID: "late", Status: leaseq.StatusQuarantined, Owner: "w", Token: 1, Attempts: 1, MaxAttempts: 3,
			LeaseUntil: ms(300), RunAt: ms(10_000), Deadline: ms(10_000), Reason: "released past the deadline: boom",
			EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.wantRow(leaseq.State{ID: "cancelled", Status: leaseq.StatusQuarantined, Owner: "w", Token: 1, Attempts: 1, MaxAttempts: 3,
			LeaseUntil: ms(3_600_300), Reason: "operator", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
	})
}

// TestMiddlewareWraps: the first middleware is the outermost, each sees the
// claim and the inner one's error, and the outcome is of the error the
// outermost returns (here a middleware turns the handler's error into
// Permanent). A panic in OnOutcome is logged and the pool goes on.
func TestMiddlewareWraps(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		var mu sync.Mutex
		var trace []string
		note := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
		named := func(name string) func(leaseq.Handler) leaseq.Handler {
			return func(next leaseq.Handler) leaseq.Handler {
				return func(ctx context.Context, c leaseq.Claim) error {
					note(name + " before " + c.ID)
					err := next(ctx, c)
					note(fmt.Sprintf("%s after %v", name, err))
					return err
				}
			}
		}
		permanent := func(next leaseq.Handler) leaseq.Handler {
			return func(ctx context.Context, c leaseq.Claim) error {
				if err := next(ctx, c); err != nil {
					return leaseq.Permanent(err)
				}
				return nil
			}
		}
		mustEnqueue(t, f.q, leaseq.Job{ID: "a"})
		l := newOutcomeLog()
		opts := workOpts(l, named("outer"), permanent, named("inner"))
		opts.Concurrency = 1
		sink, logger := newLogSink()
		opts.Logger = logger
		first := true
		opts.OnOutcome = func(o leaseq.Outcome) {
			l.add(o)
			if first {
				first = false
				panic("in OnOutcome")
			}
		}
		runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			note("handler " + c.ID)
			return errors.New("bad")
		})
		if o := l.wait(t, 1)["a"]; o.Result != leaseq.OutcomeFailed || o.Err == nil || o.Err.Error() != "bad" {
			t.Fatalf("outcome: %+v, want failed with the error bad", o)
		}
		sink.waitFor(t, "the OnOutcome panic logged", func(e logEntry) bool { return strings.Contains(e.msg, "OnOutcome panicked") })
		mustEnqueue(t, f.q, leaseq.Job{ID: "b"})
		if o := l.wait(t, 1)["b"]; o.Result != leaseq.OutcomeFailed {
			t.Fatalf("outcome after the panic: %+v", o)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{"outer before a", "inner before a", "handler a", "inner after bad", "outer after bad"}
		if got := trace[:5]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("order: %q, want %q", got, want)
		}
	})
}

// TestMiddlewareInvalid: a nil middleware, or one that returns a nil
// Handler, is ErrInvalid from Work at once, naming which; nothing is
// claimed.
func TestMiddlewareInvalid(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		mustEnqueue(t, f.q, leaseq.Job{ID: "a"})
		before := f.snapshot()
		h := func(context.Context, leaseq.Claim) error { return nil }
		keep := func(next leaseq.Handler) leaseq.Handler { return next }
		for _, tc := range []struct {
			mw   []func(leaseq.Handler) leaseq.Handler
			says string
		}{
			{[]func(leaseq.Handler) leaseq.Handler{keep, nil}, "Middleware[1] is nil"},
			{[]func(leaseq.Handler) leaseq.Handler{func(leaseq.Handler) leaseq.Handler { return nil }, keep}, "Middleware[0] returned a nil Handler"},
		} {
			err := f.q.Work(f.ctx, leaseq.WorkerOptions{Owner: "w", Middleware: tc.mw}, h)
			wantErrSays(t, err, leaseq.ErrInvalid, tc.says)
		}
		f.unchanged(before, "Work with invalid middleware")
	})
}

// TestOutcomeUnrecorded: a result that cannot be written because the
// database was closed under the pool is unrecorded, and Work returns once
// OnOutcome has heard it.
func TestOutcomeUnrecorded(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		mustEnqueue(t, f.q, leaseq.Job{ID: "a"})
		l := newOutcomeLog()
		opts := workOpts(l)
		_, opts.Logger = newLogSink()
		w := runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			return f.db.Close()
		})
		if o := l.wait(t, 1)["a"]; o.Result != leaseq.OutcomeUnrecorded || o.Err != nil {
			t.Fatalf("outcome after db.Close: %+v, want unrecorded", o)
		}
		if err := w.wait(t, 30*time.Second, "Work to return after db.Close"); err == nil {
			t.Fatal("Work returned nil after db.Close")
		}
	})
}

// TestOutcomeShutdown: handlers stopped by the drain are released (rule
// 32) with their attempt given back (rule 49), so the job on its last
// attempt is released too, not quarantined: its max attempts rise by one.
func TestOutcomeShutdown(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		mustEnqueue(t, f.q, leaseq.Job{ID: "more"}, leaseq.Job{ID: "last", MaxAttempts: 1})
		l := newOutcomeLog()
		opts := workOpts(l)
		opts.DrainTimeout = time.Millisecond
		started := make(chan string, 2)
		w := runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			started <- c.ID
			<-ctx.Done()
			return context.Cause(ctx)
		})
		waitFor(t, started, "a handler to start")
		waitFor(t, started, "the other handler to start")
		w.cancel()
		got := l.wait(t, 2)
		if got["more"].Result != leaseq.OutcomeReleased || got["last"].Result != leaseq.OutcomeReleased {
			t.Fatalf("outcomes at shutdown: %q, %q; want released, released", got["more"].Result, got["last"].Result)
		}
		if s := f.get("last"); s.Status != leaseq.StatusPending || s.Attempts != 1 || s.MaxAttempts != 2 {
			t.Fatalf("row of last: %s; want pending, 1 of 2 attempts", fmtRow(s))
		}
		if !errors.Is(got["more"].Err, leaseq.ErrShutdown) {
			t.Fatalf("error of the stopped handler: %v", got["more"].Err)
		}
		if s := f.get("more"); s.Status != leaseq.StatusPending || s.Reason != "worker shut down: worker shut down" {
			t.Fatalf("row of more: %s", fmtRow(s))
		}
	})
}

// TestAfterOutcome: a function registered through a Work handler's context
// hears the run's outcome before OnOutcome does; any other context
// registers nothing (false), and so does the run's once it was reported.
func TestAfterOutcome(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		mustEnqueue(t, f.q, leaseq.Job{ID: "a"})
		if leaseq.AfterOutcome(context.Background(), func(leaseq.Outcome) {}) {
			t.Fatal("AfterOutcome on a context of no run reported true")
		}
		var order []string
		kept := make(chan context.Context, 1)
		l := newOutcomeLog()
		opts := workOpts(l)
		opts.Concurrency = 1
		opts.OnOutcome = func(o leaseq.Outcome) { order = append(order, "OnOutcome "+o.Result); l.add(o) }
		w := runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			ok := leaseq.AfterOutcome(ctx, func(o leaseq.Outcome) { order = append(order, "after "+o.Claim.ID+" "+o.Result) })
			order = append(order, fmt.Sprint("registered ", ok))
			kept <- ctx
			return nil
		})
		l.wait(t, 1)
		ctx := waitFor(t, kept, "the handler's context")
		if leaseq.AfterOutcome(ctx, func(leaseq.Outcome) { t.Error("called after the outcome was reported") }) {
			t.Fatal("AfterOutcome after the run's outcome reported true")
		}
		w.stop(t)
		if want := "[registered true after a finished OnOutcome finished]"; fmt.Sprint(order) != want {
			t.Fatalf("order: %v, want %s", order, want)
		}
		mustEnqueue(t, f.q, leaseq.Job{ID: "p"})
		_, err := f.q.Process(f.ctx, "w", time.Minute, func(ctx context.Context, c leaseq.Claim) error {
			if leaseq.AfterOutcome(ctx, func(leaseq.Outcome) {}) {
				t.Error("AfterOutcome in a Process handler reported true")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestOutcomesRealClock: on the system clock (the server's on PostgreSQL,
// where a pool's finishes go through its step), the fence's instant still
// decides: a release on the last attempt and one whose delay reaches the
// deadline are quarantined, one with attempts and time left released.
func TestOutcomesRealClock(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		q := realQueue(t, e)
		boom := errors.New("boom")
		mustEnqueue(t, q, leaseq.Job{ID: "ok"}, leaseq.Job{ID: "last", MaxAttempts: 1},
			leaseq.Job{ID: "late", Deadline: time.Now().Add(time.Hour)}, leaseq.Job{ID: "retry"})
		l := newOutcomeLog()
		runWork(t, q, workOpts(l), func(ctx context.Context, c leaseq.Claim) error {
			switch c.ID {
			case "last", "retry":
				return boom
			case "late":
				return leaseq.RetryAfter(2*time.Hour, boom)
			}
			return nil
		})
		got := l.wait(t, 4)
		for id, want := range map[string]string{"ok": leaseq.OutcomeFinished, "last": leaseq.OutcomeQuarantined,
			"late": leaseq.OutcomeQuarantined, "retry": leaseq.OutcomeReleased} {
			if got[id].Result != want {
				t.Errorf("outcome of %s: %q, want %q", id, got[id].Result, want)
			}
			if st := mustGet(t, q, id); (st.Status == leaseq.StatusQuarantined) != (want == leaseq.OutcomeQuarantined) {
				t.Errorf("row of %s: %s, outcome %s", id, st.Status, got[id].Result)
			}
		}
	})
}

// TestWorkOnOutcomeBlocks: an OnOutcome that blocks holds the pool back
// (no more than Concurrency runs wait for it beside the running handlers,
// one cycle's claim more at most), never a goroutine per job, and once
// Work's context ended and every result is recorded, Work returns after
// DrainTimeout without the blocked calls, and says so at Error (rule 51).
func TestWorkOnOutcomeBlocks(t *testing.T) { forEnginesInTurn(t, testWorkOnOutcomeBlocks) }

func testWorkOnOutcomeBlocks(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	const jobs, concurrency = 50, 2
	for i := range jobs {
		mustEnqueue(t, q, leaseq.Job{ID: fmt.Sprintf("j%02d", i)})
	}
	unblock := make(chan struct{})
	t.Cleanup(func() { close(unblock) })
	var runs, blocked atomic.Int64
	sink, logger := newLogSink()
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: concurrency, DrainTimeout: 100 * time.Millisecond,
		Logger: logger, OnOutcome: func(leaseq.Outcome) {
			blocked.Add(1)
			<-unblock
		}},
		func(context.Context, leaseq.Claim) error {
			runs.Add(1)
			return nil
		})
	waitUntil(t, 10*time.Second, "every run's OnOutcome to block", func() bool {
		n := runs.Load()
		return n > 0 && blocked.Load() == n
	})
	w.cancel()
	if err := w.wait(t, 10*time.Second, "Work to return with its OnOutcome calls blocked"); err != nil {
		t.Fatalf("Work: %v, want nil", err)
	}
	if n := runs.Load(); n > 3*concurrency {
		t.Fatalf("%d runs while every OnOutcome blocked, want at most %d (Concurrency waiting, Concurrency running, one claim more)", n, 3*concurrency)
	}
	if got := sink.all(record(slog.LevelError, "have not returned", "")); len(got) != 1 {
		t.Fatalf("%d Error records of the abandoned calls, want 1:\n%s", len(got), sink)
	}
	if n := stats(t, q).Done; int64(n) != runs.Load() {
		t.Fatalf("%d done, want each of the %d runs recorded", n, runs.Load())
	}
}

// TestHandleJSONEmptyPayload: an empty payload (a Periodic template's is
// nil) arrives as T's zero value, for struct{} and for a struct with fields,
// and the job finishes.
func TestHandleJSONEmptyPayload(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		type email struct{ To string }
		var mu sync.Mutex
		seen := map[string]string{}
		m := leaseq.NewMux()
		leaseq.HandleJSON(m, "tick", func(ctx context.Context, c leaseq.Claim, args struct{}) error {
			mu.Lock()
			defer mu.Unlock()
			seen[c.ID] = "tick"
			return nil
		})
		leaseq.HandleJSON(m, "email", func(ctx context.Context, c leaseq.Claim, args email) error {
			mu.Lock()
			defer mu.Unlock()
			seen[c.ID] = "email to " + args.To
			return nil
		})
		mustEnqueue(t, f.q, leaseq.Job{ID: "t", Kind: "tick"}, leaseq.Job{ID: "e", Kind: "email", Payload: []byte{}})
		l := newOutcomeLog()
		runWork(t, f.q, workOpts(l), m.ServeJob)
		got := l.wait(t, 2)
		for _, id := range []string{"t", "e"} {
			if got[id].Result != leaseq.OutcomeFinished {
				t.Errorf("outcome of %s: %q (%v), want finished", id, got[id].Result, got[id].Err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if seen["t"] != "tick" || seen["e"] != "email to " || len(seen) != 2 {
			t.Fatalf("handlers saw %v", seen)
		}
	})
}
