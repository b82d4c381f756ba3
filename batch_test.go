package leaseq_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Every test here runs on each engine (forEngines in engine_test.go).

// enqueueBatch enqueues jobs in one batch or fails the test.
func (f *fixture) enqueueBatch(jobs ...leaseq.Job) {
	f.t.Helper()
	if err := f.q.EnqueueBatch(f.ctx, jobs); err != nil {
		f.t.Fatalf("EnqueueBatch(%+v): %v", jobs, err)
	}
}

// claimBatch claims up to max jobs as owner or fails the test.
func (f *fixture) claimBatch(owner string, lease time.Duration, max int) []leaseq.Claim {
	f.t.Helper()
	cs, err := f.q.ClaimBatch(f.ctx, owner, lease, max)
	if err != nil {
		f.t.Fatalf("ClaimBatch(%q, %v, %d): %v", owner, lease, max, err)
	}
	return cs
}

// wantNotWritten fails the test unless no job id is in the queue.
func (f *fixture) wantNotWritten(ids ...string) {
	f.t.Helper()
	for _, id := range ids {
		if s, err := f.q.Get(f.ctx, id); !errors.Is(err, leaseq.ErrNotFound) {
			f.t.Fatalf("Get(%q): got %s, %v; want ErrNotFound (nothing written); rows:\n%s", id, fmtState(s), err, f.dump())
		}
	}
}

// wantErrSays fails the test unless err wraps target and its text holds every
// part.
func wantErrSays(t *testing.T, err, target error, parts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one wrapping %v", err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

func TestEnqueueBatchWritesEveryJob(t *testing.T) { forEngines(t, testEnqueueBatchWritesEveryJob) }

func testEnqueueBatchWritesEveryJob(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(
		leaseq.Job{ID: "a", Qty: 1, Payload: []byte("pa")},
		leaseq.Job{ID: "b", Qty: 2, Deadline: ms(5000), MaxAttempts: 5},
		leaseq.Job{ID: "c"},
	)
	f.wantRow(leaseq.State{ID: "a", Qty: 1, Payload: []byte("pa"), Status: leaseq.StatusPending, MaxAttempts: 3})
	f.wantRow(leaseq.State{ID: "b", Qty: 2, Status: leaseq.StatusPending, MaxAttempts: 5, Deadline: ms(5000)})
	f.wantRow(leaseq.State{ID: "c", Status: leaseq.StatusPending, MaxAttempts: 3})
	if err := f.q.EnqueueBatch(f.ctx, nil); err != nil {
		t.Fatalf("EnqueueBatch(nil): %v, want nil", err)
	}
}

func TestEnqueueBatchInvalidJobWritesNothing(t *testing.T) {
	forEngines(t, testEnqueueBatchInvalidJobWritesNothing)
}

func testEnqueueBatchInvalidJobWritesNothing(t *testing.T, eng testEngine) {
	for _, tc := range []struct {
		name  string
		bad   leaseq.Job
		parts []string
	}{
		{"empty ID", leaseq.Job{ID: ""}, []string{"jobs[1]", "ID is empty"}},
		{"negative Qty", leaseq.Job{ID: "x", Qty: -1}, []string{"jobs[1]", "Qty -1"}},
		{"negative MaxAttempts", leaseq.Job{ID: "x", MaxAttempts: -2}, []string{"jobs[1]", "MaxAttempts -2"}},
		{"deadline now", leaseq.Job{ID: "x", Deadline: ms(0)}, []string{"jobs[1]", "deadline"}},
		{"payload too big", leaseq.Job{ID: "x", Payload: make([]byte, 11)}, []string{"jobs[1]", "Payload is 11 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{MaxPayload: 10})
			err := f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "ok-0"}, tc.bad, {ID: "ok-2"}})
			wantErrSays(t, err, leaseq.ErrInvalid, tc.parts...)
			f.wantNotWritten("ok-0", "ok-2", "x")
		})
	}
}

func TestEnqueueBatchDuplicateInBatchWritesNothing(t *testing.T) {
	forEngines(t, testEnqueueBatchDuplicateInBatchWritesNothing)
}

func testEnqueueBatchDuplicateInBatchWritesNothing(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	err := f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "a"}, {ID: "b"}, {ID: "a", Qty: 9}})
	wantErrSays(t, err, leaseq.ErrDuplicate, `jobs[2] "a"`, "jobs[0]")
	f.wantNotWritten("a", "b")
}

func TestEnqueueBatchDuplicateInStoreWritesNothing(t *testing.T) {
	forEngines(t, testEnqueueBatchDuplicateInStoreWritesNothing)
}

func testEnqueueBatchDuplicateInStoreWritesNothing(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "b", Qty: 7})
	f.finish(f.mustClaim("A", time.Second))
	err := f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "a"}, {ID: "b", Qty: 1}, {ID: "c"}})
	wantErrSays(t, err, leaseq.ErrDuplicate, `jobs[1] "b"`)
	f.wantNotWritten("a", "c")
	f.wantRow(leaseq.State{ID: "b", Qty: 7, Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})
}

// TestClaimBatchFencesEachJob: one batch hands out a new token per job, each
// from that job's own history, and FinishBatch fences each on its own.
func TestClaimBatchFencesEachJob(t *testing.T) { forEngines(t, testClaimBatchFencesEachJob) }

func testClaimBatchFencesEachJob(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"}, leaseq.Job{ID: "c"})
	old := f.at(0).mustClaim("A", time.Second) // a, token 1, lease until 1000

	if cs := f.at(999).claimBatch("B", time.Second, 10); len(cs) != 2 || cs[0].ID != "b" || cs[1].ID != "c" {
		t.Fatalf("999ms ClaimBatch: got %+v, want b and c only (a's lease is live)", cs)
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})

	cs := f.at(1000).claimBatch("C", time.Second, 10)
	if len(cs) != 1 || cs[0].ID != "a" || cs[0].Token != 2 || cs[0].Attempt != 2 || cs[0].Owner != "C" || !cs[0].LeaseUntil.Equal(ms(2000)) {
		t.Fatalf("1000ms ClaimBatch: got %+v, want a with token=2 attempt=2 owner=C lease_until=+2000ms", cs)
	}
	newA := cs[0]
	b, c := leaseq.Claim{ID: "b", Owner: "B", Token: 1}, leaseq.Claim{ID: "c", Owner: "B", Token: 1}
	forged := c
	forged.Token = 2

	oks, err := f.at(1001).q.FinishBatch(f.ctx, []leaseq.Claim{old, newA, b, forged})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, true, false}; fmt.Sprint(oks) != fmt.Sprint(want) {
		t.Fatalf("1001ms FinishBatch(a token 1, a token 2, b token 1, c token 2): got %v, want %v; rows:\n%s", oks, want, f.dump())
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusDone, Owner: "C", Token: 2, Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000)})
	f.wantRow(leaseq.State{ID: "b", Status: leaseq.StatusDone, Owner: "B", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1999)})
	f.wantRow(leaseq.State{ID: "c", Status: leaseq.StatusLeased, Owner: "B", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1999)})
}

// TestFinishBatchStaleClaim: a claim whose lease ended is refused at exactly
// lease_until while the others in the batch are accepted.
func TestFinishBatchStaleClaim(t *testing.T) { forEngines(t, testFinishBatchStaleClaim) }

func testFinishBatchStaleClaim(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(leaseq.Job{ID: "short"}, leaseq.Job{ID: "long"})
	short := f.at(0).mustClaim("A", 500*time.Millisecond)
	long := f.mustClaim("A", time.Second)

	oks, err := f.at(500).q.FinishBatch(f.ctx, []leaseq.Claim{short, long, long})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, false}; fmt.Sprint(oks) != fmt.Sprint(want) {
		t.Fatalf("500ms FinishBatch(short, long, long again): got %v, want %v; rows:\n%s", oks, want, f.dump())
	}
	f.wantRow(leaseq.State{ID: "short", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(500)})
	f.wantRow(leaseq.State{ID: "long", Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})
}

func TestFinishBatchInvalidClaimWritesNothing(t *testing.T) {
	forEngines(t, testFinishBatchInvalidClaimWritesNothing)
}

func testFinishBatchInvalidClaimWritesNothing(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	a := f.mustClaim("A", time.Second)
	_, err := f.q.FinishBatch(f.ctx, []leaseq.Claim{a, {ID: "b", Owner: "A"}})
	wantErrSays(t, err, leaseq.ErrInvalid, `claims[1] "b"`, "token 0")
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})
	if oks, err := f.q.FinishBatch(f.ctx, nil); err != nil || len(oks) != 0 {
		t.Fatalf("FinishBatch(nil): got %v, %v; want empty, nil", oks, err)
	}
}

func TestClaimBatchEmptyQueue(t *testing.T) { forEngines(t, testClaimBatchEmptyQueue) }

func testClaimBatchEmptyQueue(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	cs, err := f.q.ClaimBatch(f.ctx, "A", time.Second, 100)
	if err != nil || cs == nil || len(cs) != 0 {
		t.Fatalf("ClaimBatch on an empty queue: got %#v, %v; want an empty slice, nil", cs, err)
	}
}

func TestClaimBatchInvalidArguments(t *testing.T) { forEngines(t, testClaimBatchInvalidArguments) }

func testClaimBatchInvalidArguments(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	for _, tc := range []struct {
		owner string
		lease time.Duration
		max   int
		part  string
	}{
		{"A", time.Second, 0, "max 0"},
		{"A", time.Second, -1, "max -1"},
		{"", time.Second, 1, "owner is empty"},
		{"A", 0, 1, "lease 0s"},
	} {
		_, err := f.q.ClaimBatch(f.ctx, tc.owner, tc.lease, tc.max)
		wantErrSays(t, err, leaseq.ErrInvalid, tc.part)
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusPending, MaxAttempts: 3})
}

// TestClaimBatchQuarantinesAndCapsLease: the batch runs Claim's quarantine
// sweep before any token is issued, and caps each lease at its job's
// deadline.
func TestClaimBatchQuarantinesAndCapsLease(t *testing.T) {
	forEngines(t, testClaimBatchQuarantinesAndCapsLease)
}

func testClaimBatchQuarantinesAndCapsLease(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(
		leaseq.Job{ID: "spent", MaxAttempts: 1},
		leaseq.Job{ID: "late", Deadline: ms(1000)},
		leaseq.Job{ID: "capped", Deadline: ms(1500)},
		leaseq.Job{ID: "free"},
	)
	spent := f.at(0).mustClaim("A", 400*time.Millisecond)
	if spent.ID != "spent" {
		t.Fatalf("first claim: got %q, want spent", spent.ID)
	}
	cs := f.at(1000).claimBatch("B", time.Second, 10)
	if len(cs) != 2 || cs[0].ID != "capped" || cs[1].ID != "free" {
		t.Fatalf("1000ms ClaimBatch: got %+v, want capped and free", cs)
	}
	if !cs[0].LeaseUntil.Equal(ms(1500)) || !cs[1].LeaseUntil.Equal(ms(2000)) {
		t.Fatalf("lease ends: got capped %s free %s, want +1500ms (its deadline) and +2000ms", relMS(cs[0].LeaseUntil), relMS(cs[1].LeaseUntil))
	}
	f.wantRow(leaseq.State{ID: "spent", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 1, LeaseUntil: ms(400),
		Reason: fmt.Sprintf("max attempts reached: 1 of 1, last lease ended at %d (unix ms)", ms(400).UnixMilli())})
	f.wantRow(leaseq.State{ID: "late", Status: leaseq.StatusQuarantined, MaxAttempts: 3, Deadline: ms(1000),
		Reason: fmt.Sprintf("deadline passed at %d (unix ms), 0 of 3 attempts used", ms(1000).UnixMilli())})
	f.wantRow(leaseq.State{ID: "capped", Status: leaseq.StatusLeased, Owner: "B", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1500), Deadline: ms(1500)})
	if oks, err := f.at(1500).q.FinishBatch(f.ctx, cs); err != nil || !(oks[0] == false && oks[1] == true) {
		t.Fatalf("1500ms FinishBatch(capped, free): got %v, %v; want [false true] (capped's deadline is now)", oks, err)
	}
}

// TestClaimBatchQuarantinesEndedLeases: of the leases that ended, the sweep
// takes the ones with their attempts used up (from exactly lease_until on)
// and the ones whose deadline passed; one with attempts left and no
// deadline, or whose deadline is still ahead, is claimed again.
func TestClaimBatchQuarantinesEndedLeases(t *testing.T) {
	forEngines(t, testClaimBatchQuarantinesEndedLeases)
}

func testClaimBatchQuarantinesEndedLeases(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueueBatch(
		leaseq.Job{ID: "spent", MaxAttempts: 1},
		leaseq.Job{ID: "late", Deadline: ms(1500)},
		leaseq.Job{ID: "retry"},
		leaseq.Job{ID: "retry-deadline", Deadline: ms(5000)},
		leaseq.Job{ID: "spent-later", MaxAttempts: 1},
	)
	first := f.at(0).claimBatch("A", time.Second, 4) // all but spent-later, leases end at 1000
	if len(first) != 4 {
		t.Fatalf("0ms ClaimBatch: got %d claims, want 4", len(first))
	}
	if c := f.at(500).mustClaim("A", time.Second); c.ID != "spent-later" { // lease ends at 1500
		t.Fatalf("500ms claim: got %q, want spent-later", c.ID)
	}

	cs := f.at(1500).claimBatch("B", time.Second, 10)
	if len(cs) != 2 || cs[0].ID != "retry" || cs[1].ID != "retry-deadline" || cs[0].Token != 2 || cs[1].Token != 2 {
		t.Fatalf("1500ms ClaimBatch: got %+v, want retry and retry-deadline with token 2; rows:\n%s", cs, f.dump())
	}
	f.wantRow(leaseq.State{ID: "spent", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 1, LeaseUntil: ms(1000),
		Reason: fmt.Sprintf("max attempts reached: 1 of 1, last lease ended at %d (unix ms)", ms(1000).UnixMilli())})
	f.wantRow(leaseq.State{ID: "late", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000), Deadline: ms(1500),
		Reason: fmt.Sprintf("deadline passed at %d (unix ms), 1 of 3 attempts used", ms(1500).UnixMilli())})
	f.wantRow(leaseq.State{ID: "spent-later", Status: leaseq.StatusQuarantined, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 1, LeaseUntil: ms(1500),
		Reason: fmt.Sprintf("max attempts reached: 1 of 1, last lease ended at %d (unix ms)", ms(1500).UnixMilli())})
}
