package leaseq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// This file covers Snooze (rule 49 in docs/rules.md): the fenced
// Queue.Snooze, the handler's Snooze result, and the shutdown release that
// gives the attempt back.

// snooze snoozes c and fails the test unless the fence matched.
func (f *fixture) snooze(c leaseq.Claim, delay time.Duration, reason string) {
	f.t.Helper()
	if ok, err := f.q.Snooze(f.ctx, c, delay, reason); err != nil || !ok {
		f.t.Fatalf("Snooze(%+v, %v) at %s: got %v, %v; want true; rows:\n%s", c, delay, relMS(f.clock.Now()), ok, err, f.dump())
	}
}

// TestSnooze: a Snooze whose fence matched releases the job like Release
// with its delay and raises MaxAttempts by one, the token kept; the next
// claim counts its attempt and gets the next token (rule 49).
func TestSnooze(t *testing.T) { forEngines(t, testSnooze) }

func testSnooze(t *testing.T, eng testEngine) {
	t.Run("at once", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 2, Priority: 7, Payload: []byte("p")})
		c := f.mustClaim("A", time.Second)
		f.at(300).snooze(c, 0, "rate limited")
		f.wantRow(leaseq.State{ID: "a", Qty: 2, Priority: 7, Payload: []byte("p"), Status: leaseq.StatusPending,
			Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 4, LeaseUntil: ms(300), RunAt: ms(300),
			Reason: "rate limited", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.refusedEverywhere(f.q, c, "snoozed claim")
		wantClaim(t, f.mustClaim("B", time.Second), "a", 2, 2, ms(1300))
	})
	t.Run("with a delay", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		c := f.mustClaim("A", time.Second)
		f.at(300).snooze(c, 400*time.Millisecond, "Retry-After: 0.4")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 4, LeaseUntil: ms(300), RunAt: ms(700), Reason: "Retry-After: 0.4", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.at(699).nothingClaimable("snoozed until 700")
		wantClaim(t, f.at(700).mustClaim("B", time.Second), "a", 2, 2, ms(1700))
	})
	t.Run("the last attempt is not spent", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 1})
		f.snooze(f.mustClaim("A", time.Second), 0, "not yet")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 2, LeaseUntil: ms(0), RunAt: ms(0), Reason: "not yet", EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		c := f.at(10).mustClaim("A", time.Second)
		wantClaim(t, c, "a", 2, 2, ms(1010))
		f.at(20).snooze(c, 0, "not yet again")
		c = f.at(30).mustClaim("A", time.Second)
		wantClaim(t, c, "a", 3, 3, ms(1030))
		// A real failure spends the one attempt the job was given.
		f.at(40).release(c, 0, "failed")
		f.wantReason(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, Owner: "A", Token: 3, Attempts: 3,
			MaxAttempts: 3, LeaseUntil: f.get("a").LeaseUntil, RunAt: f.get("a").RunAt, EnqueuedAt: ms(0), UpdatedAt: ms(40)},
			"max attempts", "failed")
	})
	t.Run("at MaxCount attempts", func(t *testing.T) {
		// MaxAttempts stops rising at MaxCount, the largest PostgreSQL's
		// integer column holds: a snooze there spends its attempt
		// rather than fail, and the job is claimed again as usual.
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", MaxAttempts: leaseq.MaxCount})
		f.snooze(f.mustClaim("A", time.Second), 0, "not yet")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: leaseq.MaxCount, LeaseUntil: ms(0), RunAt: ms(0), Reason: "not yet", EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		wantClaim(t, f.at(10).mustClaim("A", time.Second), "a", 2, 2, ms(1010))
	})
	t.Run("delay ending 1 ms before the deadline", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1000)})
		c := f.mustClaim("A", time.Second)
		f.at(300).snooze(c, 699*time.Millisecond, "later")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 4, LeaseUntil: ms(300), Deadline: ms(1000), RunAt: ms(999), Reason: "later",
			EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		wantClaim(t, f.at(999).mustClaim("B", time.Second), "a", 2, 2, ms(1000))
	})
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"delay ending exactly at the deadline", 700 * time.Millisecond}, {"delay past the deadline", time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1000)})
			c := f.mustClaim("A", time.Second)
			f.at(300).snooze(c, tc.delay, "later")
			// As after a Release, the lease end and run_at of a job
			// quarantined so are not compared; MaxAttempts stays.
			got := f.get("a")
			f.wantReason(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1,
				MaxAttempts: 3, LeaseUntil: got.LeaseUntil, Deadline: ms(1000), RunAt: got.RunAt,
				EnqueuedAt: ms(0), UpdatedAt: ms(300)}, "deadline", "later")
			f.at(999).nothingClaimable("quarantined")
		})
	}
}

// TestSnoozeRefused: Snooze is fenced as Release is — before, exactly at
// and after the lease end, another owner, a stale token, another queue's
// claim — and a bad argument is ErrInvalid; neither changes anything.
func TestSnoozeRefused(t *testing.T) { forEngines(t, testSnoozeRefused) }

func testSnoozeRefused(t *testing.T, eng testEngine) {
	refused := func(f *fixture, q *leaseq.Queue, c leaseq.Claim, why string) {
		t.Helper()
		before := f.snapshot()
		if ok, err := q.Snooze(f.ctx, c, 0, "x"); ok || err != nil {
			t.Fatalf("Snooze (%s): %v, %v; want false, nil", why, ok, err)
		}
		f.unchanged(before, "refused Snooze ("+why+")")
	}
	invalid := func(f *fixture, c leaseq.Claim, delay time.Duration, why string) {
		t.Helper()
		before := f.snapshot()
		if ok, err := f.q.Snooze(f.ctx, c, delay, "x"); ok || !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("Snooze (%s): %v, %v; want ErrInvalid", why, ok, err)
		}
		f.unchanged(before, "invalid Snooze ("+why+")")
	}
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	c := f.mustClaim("A", time.Second)
	invalid(f, c, -time.Millisecond, "negative delay")
	invalid(f, leaseq.Claim{}, 0, "zero claim")
	wrong := c
	wrong.Owner = "B"
	refused(f, f.q, wrong, "wrong owner")
	stale := c
	stale.Token = 0
	invalid(f, stale, 0, "token 0")
	stale.Token = 2
	refused(f, f.q, stale, "another token")
	refused(f, f.queue("other"), c, "another queue")
	f.at(1000)
	refused(f, f.q, c, "exactly at the lease end")
	f.at(1001)
	refused(f, f.q, c, "after the lease end")
	f.at(999).snooze(c, 0, "1 ms before the lease end")
	refused(f, f.q, c, "already snoozed")
}

// TestWorkSnooze: a handler that returns Snooze(d) has its job put off for
// d without spending an attempt, so a job with one attempt can be snoozed
// again and again and still finish; RetryAfter spends it (rule 49).
func TestWorkSnooze(t *testing.T) { forEnginesInTurn(t, testWorkSnooze) }

func testWorkSnooze(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "s", MaxAttempts: 1}, leaseq.Job{ID: "r", MaxAttempts: 1})
	done := make(chan leaseq.Claim, 2)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w"}, func(ctx context.Context, c leaseq.Claim) error {
		switch {
		case c.ID == "r":
			defer func() { done <- c }()
			return leaseq.RetryAfter(0, errors.New("503"))
		case c.Attempt < 3:
			return leaseq.Snooze(0)
		}
		done <- c
		return nil
	})
	for range 2 {
		waitFor(t, done, "both jobs' last runs")
	}
	waitUntil(t, 20*time.Second, "both results recorded", func() bool {
		return mustGet(t, q, "s").Status == leaseq.StatusDone && mustGet(t, q, "r").Status == leaseq.StatusQuarantined
	})
	if s := mustGet(t, q, "s"); s.Attempts != 3 || s.MaxAttempts != 3 || s.Token != 3 || s.Reason != "snoozed for 0s" {
		t.Fatalf("snoozed job %s; want done on its 3rd claim, MaxAttempts 1 + 2 snoozes, the last snooze's reason", fmtState(s))
	}
	if s := mustGet(t, q, "r"); s.Attempts != 1 || s.MaxAttempts != 1 {
		t.Fatalf("job retried after %s; want quarantined with its one attempt spent", fmtState(s))
	}
}

// TestWorkSnoozeDelay: Snooze(d) puts the job off by d from when the result
// is recorded, and says so in the reason.
func TestWorkSnoozeDelay(t *testing.T) { forEnginesInTurn(t, testWorkSnoozeDelay) }

func testWorkSnoozeDelay(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "s"})
	runWork(t, q, leaseq.WorkerOptions{Owner: "w"}, func(ctx context.Context, c leaseq.Claim) error {
		return leaseq.Snooze(time.Hour)
	})
	waitUntil(t, 20*time.Second, "the snooze recorded", func() bool {
		s := mustGet(t, q, "s")
		return s.Status == leaseq.StatusPending && s.Token == 1
	})
	s := mustGet(t, q, "s")
	if s.RunAt.Sub(s.UpdatedAt) != time.Hour || s.MaxAttempts != 4 || s.Attempts != 1 || s.Reason != "snoozed for 1h0m0s" {
		t.Fatalf("row %s (run at %v, updated %v); want pending an hour after the snooze, MaxAttempts 4", fmtState(s), s.RunAt, s.UpdatedAt)
	}
}

// TestWorkShutdownRefunds: a job released at shutdown gets its attempt
// back (rules 32 and 49), so a job on its last attempt is not quarantined by
// a rolling restart, however many there are.
func TestWorkShutdownRefunds(t *testing.T) { forEnginesInTurn(t, testWorkShutdownRefunds) }

func testWorkShutdownRefunds(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "s", MaxAttempts: 1})
	for restart := 1; restart <= 3; restart++ {
		started := make(chan struct{})
		w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", DrainTimeout: time.Millisecond}, func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
		waitFor(t, started, "the handler to start")
		if err := w.stop(t); err != nil {
			t.Fatalf("Work: %v", err)
		}
		s := mustGet(t, q, "s")
		if s.Status != leaseq.StatusPending || s.Attempts != restart || s.MaxAttempts != 1+restart ||
			!strings.HasPrefix(s.Reason, "worker shut down") {
			t.Fatalf("after restart %d: %s; want pending, its attempt given back", restart, fmtState(s))
		}
	}
	c, ok, err := q.Claim(context.Background(), "next", time.Second)
	if err != nil || !ok || c.Attempt != 4 || c.Token != 4 {
		t.Fatalf("Claim after three restarts: %+v %v %v; want attempt 4", c, ok, err)
	}
}
