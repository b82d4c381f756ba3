package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leaseq/leaseq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestPurgeInChunks counts the deletions of each commit with SQLite's hooks
// and runs on SQLite only; every other test here runs on each engine
// (forEngines in engine_test.go).

// This file covers the calls that move a claimed job on — Extend, Release,
// Fail — and the operator's Cancel, Requeue and Purge (rules 17–22 in
// docs/rules.md), plus EnqueueTx.

// wantReason fails the test unless the row of want.ID equals want, with a
// reason that holds every part (its other wording is the implementation's).
func (f *fixture) wantReason(want leaseq.State, parts ...string) {
	f.t.Helper()
	got := f.get(want.ID)
	for _, p := range parts {
		if !strings.Contains(got.Reason, p) {
			f.t.Fatalf("row %q: reason %q does not say %q", want.ID, got.Reason, p)
		}
	}
	want.Reason = got.Reason
	f.wantRow(want)
}

// extend extends c and fails the test unless the fence matched.
func (f *fixture) extend(c leaseq.Claim, lease time.Duration) leaseq.Claim {
	f.t.Helper()
	e, ok, err := f.q.Extend(f.ctx, c, lease)
	if err != nil || !ok {
		f.t.Fatalf("Extend(%+v, %v) at %s: got %v, %v; want true; rows:\n%s", c, lease, relMS(f.clock.Now()), ok, err, f.dump())
	}
	return e
}

// release releases c and fails the test unless the fence matched.
func (f *fixture) release(c leaseq.Claim, delay time.Duration, reason string) {
	f.t.Helper()
	if ok, err := f.q.Release(f.ctx, c, delay, reason); err != nil || !ok {
		f.t.Fatalf("Release(%+v, %v) at %s: got %v, %v; want true; rows:\n%s", c, delay, relMS(f.clock.Now()), ok, err, f.dump())
	}
}

// fail fails c and fails the test unless the fence matched.
func (f *fixture) fail(c leaseq.Claim, reason string) {
	f.t.Helper()
	if ok, err := f.q.Fail(f.ctx, c, reason); err != nil || !ok {
		f.t.Fatalf("Fail(%+v) at %s: got %v, %v; want true; rows:\n%s", c, relMS(f.clock.Now()), ok, err, f.dump())
	}
}

// cancel cancels id and fails the test on error.
func (f *fixture) cancel(id, reason string) {
	f.t.Helper()
	if err := f.q.Cancel(f.ctx, id, reason); err != nil {
		f.t.Fatalf("Cancel(%q) at %s: %v; rows:\n%s", id, relMS(f.clock.Now()), err, f.dump())
	}
}

// purge purges and fails the test on error, returning the count.
func (f *fixture) purge(before time.Time, statuses ...leaseq.Status) int {
	f.t.Helper()
	n, err := f.q.Purge(f.ctx, before, statuses...)
	if err != nil {
		f.t.Fatalf("Purge(%s, %v): %v", relMS(before), statuses, err)
	}
	return n
}

// nothingClaimable fails the test if a Claim at the fixture's clock gets a
// job.
func (f *fixture) nothingClaimable(why string) {
	f.t.Helper()
	if c, ok := f.claim("Z", time.Second); ok {
		f.t.Fatalf("Claim at %s got %+v, want nothing (%s); rows:\n%s", relMS(f.clock.Now()), c, why, f.dump())
	}
}

// wantClaim fails the test unless c is a claim of id with token and attempt.
func wantClaim(t *testing.T, c leaseq.Claim, id string, token int64, attempt int, leaseUntil time.Time) {
	t.Helper()
	if c.ID != id || c.Token != token || c.Attempt != attempt || !c.LeaseUntil.Equal(leaseUntil) {
		t.Fatalf("claim %+v (lease until %s), want %q token %d attempt %d lease until %s",
			c, relMS(c.LeaseUntil), id, token, attempt, relMS(leaseUntil))
	}
}

// TestExtendBoundary: A claims at 0 for 1000 ms and at 400 extends by
// 1000 ms, counted from now: the lease now ends at 1400, token and attempt
// unchanged (rule 17). The old end means nothing any more; the new end is
// exact like any lease end (rule 4).
func TestExtendBoundary(t *testing.T) { forEngines(t, testExtendBoundary) }

func testExtendBoundary(t *testing.T, eng testEngine) {
	setup := func(t *testing.T) (*fixture, leaseq.Claim) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 1})
		c := f.mustClaim("A", time.Second)
		e := f.at(400).extend(c, time.Second)
		want := c
		want.LeaseUntil = ms(1400)
		if fmt.Sprintf("%+v", e) != fmt.Sprintf("%+v", want) {
			t.Fatalf("Extend returned %+v, want %+v", e, want)
		}
		f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(1400), EnqueuedAt: ms(0), UpdatedAt: ms(400)})
		return f, e
	}
	t.Run("live until 1 ms before the new end", func(t *testing.T) {
		f, e := setup(t)
		f.at(1000).nothingClaimable("the old lease end is not the lease end any more")
		f.at(1399).nothingClaimable("the extended lease is live")
		if !f.finish(e) {
			t.Fatalf("Finish at 1399, 1 ms before the new lease end: refused; rows:\n%s", f.dump())
		}
		f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(1400), EnqueuedAt: ms(0), UpdatedAt: ms(1399)})
	})
	t.Run("over exactly at the new end", func(t *testing.T) {
		f, e := setup(t)
		f.at(1400).refusedEverywhere(f.q, e, "lease ended at its new end")
		b := f.mustClaim("B", time.Second)
		wantClaim(t, b, "a", 2, 2, ms(2400))
	})
	t.Run("over after the new end", func(t *testing.T) {
		f, e := setup(t)
		f.at(1401).refusedEverywhere(f.q, e, "lease ended 1 ms ago")
	})
	t.Run("extended again from the later instant", func(t *testing.T) {
		f, e := setup(t)
		e = f.at(1399).extend(e, time.Second)
		f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(2399), EnqueuedAt: ms(0), UpdatedAt: ms(1399)})
		f.at(2398).nothingClaimable("the twice-extended lease is live")
		wantClaim(t, f.at(2399).mustClaim("B", time.Second), "a", 2, 2, ms(3399))
	})
}

// TestExtendCappedAtDeadline: the new lease end is min(now + lease,
// deadline) (rule 17, as rule 5 for Claim). Deadline 1200: an extension
// reaching past it stops at it, one ending 1 ms before it is not cut.
func TestExtendCappedAtDeadline(t *testing.T) { forEngines(t, testExtendCappedAtDeadline) }

func testExtendCappedAtDeadline(t *testing.T, eng testEngine) {
	for _, tc := range []struct {
		now   int64
		lease time.Duration
		want  int64
	}{
		{199, time.Second, 1199}, // 1 ms before the deadline: not capped
		{200, time.Second, 1200}, // exactly at it
		{201, time.Second, 1200}, // past it: capped
		{500, time.Second, 1200},
		{1199, time.Hour, 1200},
		{500, time.Millisecond, 501},
	} {
		t.Run(fmt.Sprintf("at %d for %v", tc.now, tc.lease), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1200)})
			c := f.at(tc.now).mustClaim("A", time.Millisecond)
			e := f.extend(c, tc.lease)
			if !e.LeaseUntil.Equal(ms(tc.want)) {
				t.Fatalf("Extend at %d by %v: lease until %s, want +%dms", tc.now, tc.lease, relMS(e.LeaseUntil), tc.want)
			}
			f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
				MaxAttempts: 3, LeaseUntil: ms(tc.want), Deadline: ms(1200), EnqueuedAt: ms(0), UpdatedAt: ms(tc.now)})
			if !f.at(tc.want - 1).finish(e) {
				t.Fatalf("Finish 1 ms before the extended lease end: refused; rows:\n%s", f.dump())
			}
		})
	}
	t.Run("finish 1 ms before the deadline, refused at it", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1200)})
		f.enqueue(leaseq.Job{ID: "b", Deadline: ms(1200)})
		ca := f.at(0).mustClaim("A", time.Second)
		cb := f.mustClaim("A", time.Second)
		ea := f.at(500).extend(ca, time.Hour)
		eb := f.extend(cb, time.Hour)
		if !f.at(1199).finish(ea) {
			t.Fatalf("Finish at 1199 of a lease extended to the deadline 1200: refused; rows:\n%s", f.dump())
		}
		f.at(1200).refusedEverywhere(f.q, eb, "deadline reached")
		f.nothingClaimable("b's deadline passed: it is quarantined, not claimed")
		f.wantReason(leaseq.State{ID: "b", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(1200), Deadline: ms(1200), EnqueuedAt: ms(0), UpdatedAt: ms(1200)}, "deadline")
	})
}

// TestExtendShortens: Extend counts from now, so a lease shorter than
// what is left ends the lease earlier, and another worker gets the job at
// the new end.
func TestExtendShortens(t *testing.T) { forEngines(t, testExtendShortens) }

func testExtendShortens(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	c := f.mustClaim("A", 10*time.Second)
	e := f.at(100).extend(c, time.Millisecond)
	if !e.LeaseUntil.Equal(ms(101)) {
		t.Fatalf("Extend at 100 by 1ms: lease until %s, want +101ms", relMS(e.LeaseUntil))
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
		MaxAttempts: 3, LeaseUntil: ms(101), EnqueuedAt: ms(0), UpdatedAt: ms(100)})
	f.nothingClaimable("the shortened lease is live until 101")
	f.at(101).refusedEverywhere(f.q, e, "shortened lease ended")
	// The claim as Claim returned it, with the old LeaseUntil, is the same lease.
	f.refusedEverywhere(f.q, c, "shortened lease ended, original claim value")
	wantClaim(t, f.mustClaim("B", time.Second), "a", 2, 2, ms(1101))
}

// TestFencedCallsInvalid: a claim no Claim could have returned, a lease
// under 1 ms for Extend and a negative delay for Release are ErrInvalid
// with nothing written (Errors, Part 2) — checked with a live claim
// that the call would otherwise have changed.
func TestFencedCallsInvalid(t *testing.T) { forEngines(t, testFencedCallsInvalid) }

func testFencedCallsInvalid(t *testing.T, eng testEngine) {
	zeroClaims := []struct {
		name  string
		claim func(c leaseq.Claim) leaseq.Claim
	}{
		{"zero claim", func(leaseq.Claim) leaseq.Claim { return leaseq.Claim{} }},
		{"empty ID", func(c leaseq.Claim) leaseq.Claim { c.ID = ""; return c }},
		{"empty owner", func(c leaseq.Claim) leaseq.Claim { c.Owner = ""; return c }},
		{"token 0", func(c leaseq.Claim) leaseq.Claim { c.Token = 0; return c }},
		{"negative token", func(c leaseq.Claim) leaseq.Claim { c.Token = -1; return c }},
	}
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	c := f.mustClaim("A", time.Second)
	before := f.snapshot()
	for _, fc := range fencedCalls {
		for _, z := range zeroClaims {
			ok, err := fc.call(f.ctx, f.q, z.claim(c))
			if ok || !errors.Is(err, leaseq.ErrInvalid) {
				t.Fatalf("%s with a %s: got %v, %v; want false and ErrInvalid", fc.name, z.name, ok, err)
			}
			f.unchanged(before, fc.name+" with a "+z.name)
		}
	}
	for _, lease := range []time.Duration{0, 999 * time.Microsecond, -time.Second} {
		e, ok, err := f.q.Extend(f.ctx, c, lease)
		if ok || fmt.Sprintf("%+v", e) != fmt.Sprintf("%+v", c) {
			t.Fatalf("Extend by %v: got %+v, %v; want the claim unchanged and false", lease, e, ok)
		}
		wantErrSays(t, err, leaseq.ErrInvalid, "lease")
		f.unchanged(before, fmt.Sprintf("Extend by %v", lease))
	}
	for _, delay := range []time.Duration{-time.Nanosecond, -time.Millisecond, -time.Hour} {
		ok, err := f.q.Release(f.ctx, c, delay, "r")
		if ok {
			t.Fatalf("Release with delay %v: got true", delay)
		}
		wantErrSays(t, err, leaseq.ErrInvalid, "delay")
		f.unchanged(before, fmt.Sprintf("Release with delay %v", delay))
	}
	// The claim was live all along: each refusal was for the arguments alone.
	if !f.finish(c) {
		t.Fatal("Finish of the untouched claim refused")
	}
}

// TestFencedCallsRefused: Finish, Extend, Release and Fail share one fence
// (rules 3 and 17–19): each refuses — false, nil error, nothing in the
// database changed — every claim that is not the job's current, live lease.
func TestFencedCallsRefused(t *testing.T) { forEngines(t, testFencedCallsRefused) }

func testFencedCallsRefused(t *testing.T, eng testEngine) {
	cases := []struct {
		name string
		// setup returns the queue to call and the claim to present; the
		// clock is at the moment of the calls when it returns.
		setup func(f *fixture) (*leaseq.Queue, leaseq.Claim)
	}{
		{"stale token", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			a := f.mustClaim("A", time.Second)
			f.at(1000).mustClaim("B", time.Second)
			f.at(1001)
			return f.q, a
		}},
		{"stale token, same owner", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			a := f.mustClaim("A", time.Second)
			f.at(1000).mustClaim("A", time.Second)
			return f.q, a
		}},
		{"forged future token", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			c.Token++
			return f.q, c
		}},
		{"wrong owner", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			c.Owner = "B"
			return f.q, c
		}},
		{"unknown ID", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			c.ID = "nope"
			return f.q, c
		}},
		{"lease ended exactly now", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(1000)
			return f.q, c
		}},
		{"lease ended long ago", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(4000)
			return f.q, c
		}},
		{"deadline reached", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			f.enqueue(leaseq.Job{ID: "dl", Deadline: ms(500)})
			f.mustClaim("A", time.Second) // a, leased
			c := f.mustClaim("A", time.Second)
			if c.ID != "dl" || !c.LeaseUntil.Equal(ms(500)) {
				f.t.Fatalf("setup: claim %+v, want dl with its lease capped at 500", c)
			}
			f.at(500)
			return f.q, c
		}},
		{"job done", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(10).finish(c)
			return f.q, c
		}},
		{"job cancelled", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(10).cancel("a", "stop")
			return f.q, c
		}},
		{"job failed", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(10).fail(c, "bad")
			return f.q, c
		}},
		{"job released", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(10).release(c, 0, "later")
			return f.q, c
		}},
		{"job released and claimed again", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			c := f.mustClaim("A", time.Second)
			f.at(10).release(c, 0, "later")
			f.mustClaim("A", time.Second)
			return f.q, c
		}},
		{"job in another named queue", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			// "a" of this queue was never claimed; "a" of queue other is
			// leased by A with token 1, and its claim is shown to this queue.
			other := f.queue("other")
			if err := other.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
				f.t.Fatal(err)
			}
			c, ok, err := other.Claim(f.ctx, "A", time.Second)
			if err != nil || !ok {
				f.t.Fatalf("claim in queue other: %v %v", ok, err)
			}
			return f.q, c
		}},
		{"claim of this queue shown to another", func(f *fixture) (*leaseq.Queue, leaseq.Claim) {
			other := f.queue("other")
			if err := other.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
				f.t.Fatal(err)
			}
			return other, f.mustClaim("A", time.Second)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", Qty: 3, Payload: []byte("p")})
			q, c := tc.setup(f)
			f.refusedEverywhere(q, c, tc.name)
		})
	}
}

// TestRelease: a Release whose fence matched puts the job back to pending,
// claimable from now + delay, token kept and attempt counted, reason stored
// (rule 18).
func TestRelease(t *testing.T) { forEngines(t, testRelease) }

func testRelease(t *testing.T, eng testEngine) {
	t.Run("at once", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 2, Priority: 7, Payload: []byte("p")})
		c := f.mustClaim("A", time.Second)
		f.at(300).release(c, 0, "receiver busy")
		f.wantRow(leaseq.State{ID: "a", Qty: 2, Priority: 7, Payload: []byte("p"), Status: leaseq.StatusPending,
			Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(300), RunAt: ms(300),
			Reason: "receiver busy", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.refusedEverywhere(f.q, c, "released claim")
		b := f.mustClaim("B", time.Second)
		wantClaim(t, b, "a", 2, 2, ms(1300))
		if b.Priority != 7 || b.Qty != 2 || string(b.Payload) != "p" {
			t.Fatalf("claim after Release %+v lost the job's fields", b)
		}
	})
	t.Run("with a delay", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		c := f.mustClaim("A", time.Second)
		f.at(300).release(c, 400*time.Millisecond, "retry later")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(300), RunAt: ms(700), Reason: "retry later", EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.at(699).nothingClaimable("delayed until 700")
		if cs := f.claimBatch("Z", time.Second, 10); len(cs) != 0 {
			t.Fatalf("ClaimBatch at 699: got %+v, want nothing", cs)
		}
		wantClaim(t, f.at(700).mustClaim("B", time.Second), "a", 2, 2, ms(1700))
	})
	t.Run("delay ending 1 ms before the deadline", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1000)})
		c := f.mustClaim("A", time.Second)
		f.at(300).release(c, 699*time.Millisecond, "retry later")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: ms(300), Deadline: ms(1000), RunAt: ms(999), Reason: "retry later",
			EnqueuedAt: ms(0), UpdatedAt: ms(300)})
		f.at(998).nothingClaimable("delayed until 999")
		wantClaim(t, f.at(999).mustClaim("B", time.Second), "a", 2, 2, ms(1000))
	})
	t.Run("delay ending exactly at the deadline", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1000)})
		c := f.mustClaim("A", time.Second)
		f.at(300).release(c, 700*time.Millisecond, "retry later")
		// The rules do not say what lease end and run_at a job quarantined by
		// Release shows; every other field is compared.
		got := f.get("a")
		f.wantReason(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1,
			MaxAttempts: 3, LeaseUntil: got.LeaseUntil, Deadline: ms(1000), RunAt: got.RunAt,
			EnqueuedAt: ms(0), UpdatedAt: ms(300)}, "deadline", "retry later")
		f.at(999).nothingClaimable("quarantined")
		f.at(5000).nothingClaimable("quarantined")
	})
	t.Run("delay past the deadline", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(1000)})
		c := f.mustClaim("A", time.Second)
		f.at(300).release(c, time.Hour, "retry much later")
		if s := f.get("a"); s.Status != leaseq.StatusQuarantined || !strings.Contains(s.Reason, "deadline") {
			t.Fatalf("row after a Release past the deadline: %s, want quarantined with a reason naming the deadline", fmtRow(s))
		}
	})
	t.Run("attempts used up", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 2})
		f.release(f.mustClaim("A", time.Second), 0, "first try failed")
		c := f.at(10).mustClaim("A", time.Second)
		wantClaim(t, c, "a", 2, 2, ms(1010))
		f.at(20).release(c, 0, "second try failed")
		f.wantReason(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, Owner: "A", Token: 2, Attempts: 2,
			MaxAttempts: 2, LeaseUntil: f.get("a").LeaseUntil, RunAt: f.get("a").RunAt, EnqueuedAt: ms(0), UpdatedAt: ms(20)},
			"max attempts", "second try failed")
		f.nothingClaimable("quarantined with its attempts used up")
		if err := f.q.Requeue(f.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		wantClaim(t, f.mustClaim("B", time.Second), "a", 3, 1, ms(1020))
	})
	t.Run("attempts used up wins over a delay", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 1})
		f.release(f.mustClaim("A", time.Second), time.Minute, "try in a minute")
		if s := f.get("a"); s.Status != leaseq.StatusQuarantined || !strings.Contains(s.Reason, "try in a minute") {
			t.Fatalf("row after Release of the last attempt: %s, want quarantined with the given reason", fmtRow(s))
		}
	})
}

// TestFail: a Fail whose fence matched quarantines the job at once with
// the reason given (rule 19); only Requeue brings it back, and the next
// claim gets the next token.
func TestFail(t *testing.T) { forEngines(t, testFail) }

func testFail(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a", Qty: 4, MaxAttempts: 5})
	c := f.mustClaim("A", time.Second)
	f.at(200).fail(c, "malformed order")
	f.wantRow(leaseq.State{ID: "a", Qty: 4, Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1,
		MaxAttempts: 5, LeaseUntil: ms(1000), Reason: "malformed order", EnqueuedAt: ms(0), UpdatedAt: ms(200)})
	f.refusedEverywhere(f.q, c, "failed claim")
	f.at(5000).nothingClaimable("failed jobs stay quarantined")
	if err := f.q.Requeue(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	wantClaim(t, f.mustClaim("B", time.Second), "a", 2, 1, ms(6000))
}

// TestCancel: Cancel quarantines a pending or leased job (rule 20); a
// holder's later fenced calls are refused; done, quarantined and unknown
// jobs are errors that change nothing; Requeue undoes it.
func TestCancel(t *testing.T) { forEngines(t, testCancel) }

func testCancel(t *testing.T, eng testEngine) {
	t.Run("pending", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", RunAt: ms(500), Priority: 3})
		f.at(100).cancel("a", "order withdrawn")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, RunAt: ms(500), Priority: 3, MaxAttempts: 3,
			Reason: "order withdrawn", EnqueuedAt: ms(0), UpdatedAt: ms(100)})
		f.at(600).nothingClaimable("cancelled")
		if err := f.q.Requeue(f.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		wantClaim(t, f.mustClaim("B", time.Second), "a", 1, 1, ms(1600))
	})
	t.Run("leased", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		c := f.mustClaim("A", time.Second)
		f.at(100).cancel("a", "order withdrawn")
		f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3,
			LeaseUntil: ms(1000), Reason: "order withdrawn", EnqueuedAt: ms(0), UpdatedAt: ms(100)})
		f.refusedEverywhere(f.q, c, "holder of a cancelled job")
		f.at(2000).nothingClaimable("cancelled")
		if err := f.q.Requeue(f.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		wantClaim(t, f.mustClaim("B", time.Second), "a", 2, 1, ms(3000))
	})
	for _, tc := range []struct {
		name    string
		prepare func(f *fixture)
		id      string
		want    error
	}{
		{"done", func(f *fixture) { f.finish(f.mustClaim("A", time.Second)) }, "a", leaseq.ErrInvalid},
		{"failed", func(f *fixture) { f.fail(f.mustClaim("A", time.Second), "bad") }, "a", leaseq.ErrInvalid},
		{"cancelled", func(f *fixture) { f.cancel("a", "first") }, "a", leaseq.ErrInvalid},
		{"unknown", func(f *fixture) {}, "nope", leaseq.ErrNotFound},
		{"in another queue only", func(f *fixture) {
			if err := f.queue("other").Enqueue(f.ctx, leaseq.Job{ID: "b"}); err != nil {
				f.t.Fatal(err)
			}
		}, "b", leaseq.ErrNotFound},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a"})
			tc.prepare(f)
			f.at(50)
			before := f.snapshot()
			if err := f.q.Cancel(f.ctx, tc.id, "again"); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.id) {
				t.Fatalf("Cancel(%q): got %v, want %v naming the job", tc.id, err, tc.want)
			}
			f.unchanged(before, "refused Cancel")
		})
	}
}

// TestPurgeInstant: Purge deletes the jobs whose last change is strictly
// before its instant (rule 21). a finished at 99, b at 100: Purge(99)
// deletes nothing, Purge(100) only a, Purge(101) b.
func TestPurgeInstant(t *testing.T) { forEngines(t, testPurgeInstant) }

func testPurgeInstant(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	f.enqueue(leaseq.Job{ID: "b"})
	ca := f.mustClaim("A", 10*time.Second)
	cb := f.mustClaim("A", 10*time.Second)
	f.at(99).finish(ca)
	f.at(100).finish(cb)
	f.at(200)
	before := f.snapshot()
	if n := f.purge(ms(99)); n != 0 {
		t.Fatalf("Purge(99): deleted %d, want 0 (a finished at 99, not before)", n)
	}
	f.unchanged(before, "Purge(99)")
	if n := f.purge(ms(100)); n != 1 {
		t.Fatalf("Purge(100): deleted %d, want 1", n)
	}
	f.wantNotWritten("a")
	f.wantRow(leaseq.State{ID: "b", Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3,
		LeaseUntil: ms(10000), EnqueuedAt: ms(0), UpdatedAt: ms(100)})
	if n := f.purge(ms(101)); n != 1 {
		t.Fatalf("Purge(101): deleted %d, want 1", n)
	}
	f.wantNotWritten("b")
}

// TestPurgeStatuses: only the statuses given are purged, done when none is
// given; pending and leased jobs never are, and asking for them (or for
// anything else) is ErrInvalid with nothing deleted.
func TestPurgeStatuses(t *testing.T) { forEngines(t, testPurgeStatuses) }

func testPurgeStatuses(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "done"})
	f.enqueue(leaseq.Job{ID: "failed"})
	f.enqueue(leaseq.Job{ID: "leased"})
	f.enqueue(leaseq.Job{ID: "expired"})
	f.enqueue(leaseq.Job{ID: "cancelled"})
	f.enqueue(leaseq.Job{ID: "pending"})
	f.enqueue(leaseq.Job{ID: "delayed", RunAt: ms(5000)})
	f.finish(f.mustClaim("A", time.Hour))
	f.fail(f.mustClaim("A", time.Hour), "bad")
	f.mustClaim("A", time.Hour)
	f.mustClaim("A", 10*time.Millisecond)
	f.cancel("cancelled", "stop")
	f.at(100) // expired's lease ended at 10
	ids := func() []string {
		var out []string
		page, err := f.q.List(f.ctx, leaseq.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			out = append(out, s.ID)
		}
		return out
	}
	for _, bad := range [][]leaseq.Status{
		{leaseq.StatusPending}, {leaseq.StatusLeased}, {"bogus"}, {""},
		{leaseq.StatusDone, leaseq.StatusPending}, {leaseq.StatusQuarantined, leaseq.StatusLeased},
	} {
		before := f.snapshot()
		n, err := f.q.Purge(f.ctx, ms(1000), bad...)
		if n != 0 || !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("Purge(%v): got %d, %v; want 0 and ErrInvalid", bad, n, err)
		}
		f.unchanged(before, fmt.Sprintf("Purge(%v)", bad))
	}
	all := "[done failed leased expired cancelled pending delayed]"
	if got := fmt.Sprint(ids()); got != all {
		t.Fatalf("jobs: %s, want %s", got, all)
	}
	if n := f.purge(ms(1000)); n != 1 {
		t.Fatalf("Purge with no status: deleted %d, want 1 (done)", n)
	}
	if got, want := fmt.Sprint(ids()), "[failed leased expired cancelled pending delayed]"; got != want {
		t.Fatalf("after Purge of done jobs: %s, want %s", got, want)
	}
	if n := f.purge(ms(1000), leaseq.StatusQuarantined, leaseq.StatusQuarantined); n != 2 {
		t.Fatalf("Purge of quarantined jobs: deleted %d, want 2", n)
	}
	if got, want := fmt.Sprint(ids()), "[leased expired pending delayed]"; got != want {
		t.Fatalf("after Purge of quarantined jobs: %s, want %s", got, want)
	}
	if n := f.at(1<<40).purge(ms(1<<40), leaseq.StatusDone, leaseq.StatusQuarantined); n != 0 {
		t.Fatalf("Purge of both with only pending and leased jobs left: deleted %d, want 0", n)
	}

	t.Run("both at once", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "d"})
		f.enqueue(leaseq.Job{ID: "q"})
		f.finish(f.mustClaim("A", time.Hour))
		f.cancel("q", "stop")
		if n := f.at(1).purge(ms(1), leaseq.StatusQuarantined, leaseq.StatusDone); n != 2 {
			t.Fatalf("Purge of done and quarantined: deleted %d, want 2", n)
		}
		f.wantNotWritten("d", "q")
	})
}

// TestPurgeInChunks: a purge of 1200 jobs deletes them all and says so,
// in transactions of at most 500 deletions each, so the write lock is
// never held for the whole purge (rule 21). The commit and pre-update hooks
// sit on the database's only connection.
func TestPurgeInChunks(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.db.SetMaxOpenConns(1) // the queue pins nothing, so the hooks see every write
	const n = 1200
	jobs := make([]leaseq.Job, n)
	for i := range jobs {
		jobs[i] = leaseq.Job{ID: fmt.Sprintf("j%04d", i)}
	}
	f.enqueueBatch(jobs...)
	cs := f.claimBatch("A", time.Hour, n)
	if oks, err := f.q.FinishBatch(f.ctx, cs); err != nil || len(oks) != n {
		t.Fatalf("FinishBatch: %d results, %v", len(oks), err)
	}
	f.enqueue(leaseq.Job{ID: "kept"})
	var deletes int
	var perCommit []int
	setHooks(t, f.db, func(d sqlite.SQLitePreUpdateData) {
		if d.Op == sqlite3.SQLITE_DELETE && d.TableName == "leaseq_jobs" {
			deletes++
		}
	}, func() int32 {
		perCommit = append(perCommit, deletes)
		deletes = 0
		return 0
	}, nil)
	got := f.at(10).purge(ms(10))
	if got != n {
		t.Fatalf("Purge of %d done jobs: returned %d", n, got)
	}
	st, err := f.q.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != 0 || st.Pending != 1 {
		t.Fatalf("Stats after the purge: %+v, want no done jobs and the one pending", st)
	}
	if fmt.Sprint(perCommit) != "[500 500 200]" {
		t.Fatalf("jobs deleted per committed transaction: %v, want [500 500 200]", perCommit)
	}
}

// setHooks installs the pre-update, commit and rollback hooks (nil: none)
// on one pooled connection of db (with SetMaxOpenConns(1), the only one)
// until the test ends.
func setHooks(t *testing.T, db *sql.DB, update sqlite.PreUpdateHookFn, commit sqlite.CommitHookFn, rollback sqlite.RollbackHookFn) {
	t.Helper()
	set := func(update sqlite.PreUpdateHookFn, commit sqlite.CommitHookFn, rollback sqlite.RollbackHookFn) {
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Raw(func(dc any) error {
			h := dc.(sqlite.HookRegisterer)
			h.RegisterPreUpdateHook(update)
			h.RegisterCommitHook(commit)
			h.RegisterRollbackHook(rollback)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	set(update, commit, rollback)
	t.Cleanup(func() { set(nil, nil, nil) })
}

// TestPurgeKeepsTokens: a purged ID enqueued again continues the purged
// job's tokens, with its attempts from 0, so no claim from before the purge
// can finish, extend, release or fail the new job — not even one of the same
// owner (rule 21).
func TestPurgeKeepsTokens(t *testing.T) { forEngines(t, testPurgeKeepsTokens) }

func testPurgeKeepsTokens(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{MaxAttempts: 5})
	f.enqueue(leaseq.Job{ID: "a", Qty: 1})
	old := []leaseq.Claim{f.mustClaim("A", time.Second)}
	old = append(old, f.at(1000).mustClaim("A", time.Second))
	old = append(old, f.at(2000).mustClaim("A", time.Second))
	wantClaim(t, old[2], "a", 3, 3, ms(3000))
	f.at(2500).finish(old[2])
	if n := f.at(3000).purge(ms(3000)); n != 1 {
		t.Fatalf("Purge: deleted %d, want 1", n)
	}
	f.wantNotWritten("a")

	f.enqueue(leaseq.Job{ID: "a", Qty: 2})
	f.wantRow(leaseq.State{ID: "a", Qty: 2, Status: leaseq.StatusPending, Token: 3, MaxAttempts: 5,
		EnqueuedAt: ms(3000), UpdatedAt: ms(3000)})
	for i, c := range old {
		f.refusedEverywhere(f.q, c, fmt.Sprintf("claim %d from before the purge, new job pending", i+1))
	}
	c := f.mustClaim("A", time.Second)
	wantClaim(t, c, "a", 4, 1, ms(4000))
	if c.Qty != 2 {
		t.Fatalf("claim of the new job: qty %d, want 2", c.Qty)
	}
	for i, o := range old {
		f.refusedEverywhere(f.q, o, fmt.Sprintf("claim %d from before the purge, new job leased by the same owner", i+1))
	}
	if !f.finish(c) {
		t.Fatal("the new job's own claim was refused")
	}

	// Purged a second time, the ID continues from the second job's token.
	if n := f.at(3001).purge(ms(3001)); n != 1 {
		t.Fatalf("second Purge: deleted %d, want 1", n)
	}
	f.enqueue(leaseq.Job{ID: "a"})
	wantClaim(t, f.mustClaim("B", time.Second), "a", 5, 1, ms(4001))

	// Tokens are remembered per queue: the same ID in another queue starts
	// from its own history, which is empty.
	other := f.queue("other")
	if err := other.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	oc, ok, err := other.Claim(f.ctx, "A", time.Second)
	if err != nil || !ok {
		t.Fatalf("claim in queue other: %v %v", ok, err)
	}
	wantClaim(t, oc, "a", 1, 1, ms(4001))
}

// TestPurgeNeverClaimed: a job purged before it was ever claimed (token 0)
// leaves no token to continue; enqueued again, its first claim gets token 1.
func TestPurgeNeverClaimed(t *testing.T) { forEngines(t, testPurgeNeverClaimed) }

func testPurgeNeverClaimed(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	f.cancel("a", "never wanted")
	if n := f.at(1).purge(ms(1), leaseq.StatusQuarantined); n != 1 {
		t.Fatalf("Purge: deleted %d, want 1", n)
	}
	f.enqueue(leaseq.Job{ID: "a"})
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, MaxAttempts: 3, EnqueuedAt: ms(1), UpdatedAt: ms(1)})
	wantClaim(t, f.mustClaim("A", time.Second), "a", 1, 1, ms(1001))
}

// TestReasons: a reason is stored cleaned, never refused (rule 22): cut to
// at most 1 KiB at a UTF-8 boundary, invalid UTF-8 as U+FFFD, NUL bytes
// dropped — whether it comes with Release, Fail or Cancel.
func TestReasons(t *testing.T) { forEngines(t, testReasons) }

func testReasons(t *testing.T, eng testEngine) {
	euro, grin := "€", "😀" // 3 and 4 bytes
	cases := []struct {
		name, give, want string
	}{
		{"short", "receiver busy", "receiver busy"},
		{"empty", "", ""},
		{"exactly 1 KiB", strings.Repeat("r", 1024), strings.Repeat("r", 1024)},
		{"1 KiB + 1 byte", strings.Repeat("r", 1025), strings.Repeat("r", 1024)},
		// Runes start at bytes 2, 5, ..., 1022: the one at 1022 would end
		// at byte 1025, so it goes whole.
		{"cut inside a 3-byte rune", "xy" + strings.Repeat(euro, 400), "xy" + strings.Repeat(euro, 340)},
		// Runes start at 1, 5, ..., 1021: the one at 1021 would end at 1025.
		{"cut inside a 4-byte rune", "x" + strings.Repeat(grin, 300), "x" + strings.Repeat(grin, 255)},
		// Runes end exactly at byte 1024.
		{"cut at a rune boundary", "x" + strings.Repeat(euro, 400), "x" + strings.Repeat(euro, 341)},
		{"invalid UTF-8", "a\xffb\xc3(", "a\uFFFDb\uFFFD("},
		{"NUL bytes", "a\x00b\x00", "ab"},
		// Each 0xff becomes 3 bytes, so the cleaned text passes 1 KiB and is
		// cut inside a U+FFFD (which starts at byte 1022).
		{"invalid UTF-8 grows past the cut", "b" + strings.Repeat("a\xff", 600), "b" + strings.Repeat("a\uFFFD", 255) + "a"},
		{"NULs do not count", strings.Repeat("\x00", 2000) + "end", "end"},
	}
	for _, tc := range cases {
		if len(tc.want) > leaseq.MaxReasonLen || !utf8.ValidString(tc.want) || strings.ContainsRune(tc.want, 0) {
			t.Fatalf("case %q: the expectation itself is not a clean reason", tc.name)
		}
	}
	ways := []struct {
		name  string
		apply func(f *fixture, reason string)
	}{
		{"Release", func(f *fixture, reason string) { f.release(f.mustClaim("A", time.Second), 0, reason) }},
		{"Fail", func(f *fixture, reason string) { f.fail(f.mustClaim("A", time.Second), reason) }},
		{"Cancel", func(f *fixture, reason string) { f.cancel("a", reason) }},
	}
	for _, w := range ways {
		for _, tc := range cases {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, eng, leaseq.Options{})
				f.enqueue(leaseq.Job{ID: "a"})
				w.apply(f, tc.give)
				if got := f.get("a").Reason; got != tc.want {
					t.Fatalf("%s with reason %q (%d bytes): stored %q (%d bytes), want %q (%d bytes)",
						w.name, tc.give, len(tc.give), got, len(got), tc.want, len(tc.want))
				}
			})
		}
	}
	t.Run("Release of the last attempt", func(t *testing.T) {
		// The reason that says why is added to the caller's; the whole is
		// still cleaned and cut.
		f := newFixture(t, eng, leaseq.Options{MaxAttempts: 1})
		f.enqueue(leaseq.Job{ID: "a"})
		f.release(f.mustClaim("A", time.Second), 0, "x\x00\xff"+strings.Repeat(euro, 400))
		got := f.get("a")
		if got.Status != leaseq.StatusQuarantined || len(got.Reason) > leaseq.MaxReasonLen || len(got.Reason) < leaseq.MaxReasonLen-3 ||
			!utf8.ValidString(got.Reason) || strings.ContainsRune(got.Reason, 0) || !strings.Contains(got.Reason, "x\uFFFD"+euro) {
			t.Fatalf("row %s (reason %d bytes): want quarantined with a clean reason of at most %d bytes holding the given text",
				fmtState(got), len(got.Reason), leaseq.MaxReasonLen)
		}
	})
}

// TestEnqueueTx: the jobs of EnqueueTx are written exactly if the caller's
// own transaction commits; a job the call refuses leaves none of the call's
// jobs written, even if the caller commits, and the caller's transaction
// usable (Errors, Part 2). db.BeginTx on a database from Open is BEGIN
// IMMEDIATE.
func TestEnqueueTx(t *testing.T) { forEngines(t, testEnqueueTx) }

func testEnqueueTx(t *testing.T, eng testEngine) {
	setup := func(t *testing.T) *fixture {
		f := newFixture(t, eng, leaseq.Options{})
		if _, err := f.db.Exec("CREATE TABLE orders (id TEXT PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		f.enqueue(leaseq.Job{ID: "stored"})
		return f
	}
	orders := func(f *fixture) string {
		return dumpQuery(f.t, f.db, "SELECT id FROM orders ORDER BY id")
	}
	begin := func(f *fixture) *sql.Tx {
		tx, err := f.db.BeginTx(f.ctx, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() })
		return tx
	}
	order := func(f *fixture, tx *sql.Tx, id string) {
		if _, err := tx.ExecContext(f.ctx, f.e.rebind("INSERT INTO orders VALUES (?1)"), id); err != nil {
			f.t.Fatal(err)
		}
	}
	t.Run("commits with the caller", func(t *testing.T) {
		f := setup(t)
		tx := begin(f)
		order(f, tx, "o1")
		if err := f.at(5).q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a", Qty: 1}, leaseq.Job{ID: "b", Priority: 9}); err != nil {
			t.Fatal(err)
		}
		f.wantNotWritten("a", "b") // not visible before the caller commits
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusPending, MaxAttempts: 3, EnqueuedAt: ms(5), UpdatedAt: ms(5)})
		f.wantRow(leaseq.State{ID: "b", Priority: 9, Status: leaseq.StatusPending, MaxAttempts: 3, EnqueuedAt: ms(5), UpdatedAt: ms(5)})
		if got := orders(f); !strings.Contains(got, "id=o1") {
			t.Fatalf("the caller's own write is missing:\n%s", got)
		}
		wantClaim(t, f.mustClaim("A", time.Second), "b", 1, 1, ms(1005))
	})
	t.Run("rolled back by the caller", func(t *testing.T) {
		f := setup(t)
		before, beforeOrders := f.snapshot(), orders(f)
		tx := begin(f)
		order(f, tx, "o1")
		if err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		f.unchanged(before, "EnqueueTx rolled back by the caller")
		if got := orders(f); got != beforeOrders {
			t.Fatalf("orders after the rollback:\n%s want\n%s", got, beforeOrders)
		}
	})
	for _, tc := range []struct {
		name string
		jobs []leaseq.Job
		want error
	}{
		{"invalid job", []leaseq.Job{{ID: "a"}, {ID: "b", Qty: -1}}, leaseq.ErrInvalid},
		{"RunAt at the deadline", []leaseq.Job{{ID: "a"}, {ID: "b", RunAt: ms(100), Deadline: ms(100)}}, leaseq.ErrInvalid},
		{"priority out of range", []leaseq.Job{{ID: "a"}, {ID: "b", Priority: 101}}, leaseq.ErrInvalid},
		{"ID twice in the call", []leaseq.Job{{ID: "a"}, {ID: "b"}, {ID: "a"}}, leaseq.ErrDuplicate},
		// a's INSERT has run when stored's fails: it must be undone.
		{"ID already stored", []leaseq.Job{{ID: "a"}, {ID: "b"}, {ID: "stored"}}, leaseq.ErrDuplicate},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			f := setup(t)
			before := f.snapshot()
			tx := begin(f)
			order(f, tx, "o1")
			err := f.q.EnqueueTx(f.ctx, tx, tc.jobs...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("EnqueueTx: got %v, want %v", err, tc.want)
			}
			order(f, tx, "o2") // the transaction is still the caller's to use
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit after the refused EnqueueTx: %v", err)
			}
			f.unchanged(before, "refused EnqueueTx, caller committed")
			if got := orders(f); !strings.Contains(got, "id=o1") || !strings.Contains(got, "id=o2") {
				t.Fatalf("the caller's writes before and after the refused call must both commit:\n%s", got)
			}
		})
	}
	t.Run("usable for the queue after a refusal", func(t *testing.T) {
		f := setup(t)
		tx := begin(f)
		if err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a"}, leaseq.Job{ID: "stored"}); !errors.Is(err, leaseq.ErrDuplicate) {
			t.Fatalf("EnqueueTx with a stored ID: %v, want ErrDuplicate", err)
		}
		if err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a"}); err != nil {
			t.Fatalf("second EnqueueTx in the same transaction: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		f.get("a")
	})
	t.Run("nil tx", func(t *testing.T) {
		f := setup(t)
		if err := f.q.EnqueueTx(f.ctx, nil, leaseq.Job{ID: "a"}); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("EnqueueTx(nil tx): %v, want ErrInvalid", err)
		}
	})
}
