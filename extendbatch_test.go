package leaseq_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Every test here runs on each engine (forEngines in engine_test.go).
// ExtendBatch is also one of the fencedCalls (helpers_test.go), so every
// test of the fence refuses it as it refuses Extend.

// TestExtendBatchFencesEachClaim: each claim of the batch is judged on its
// own at one instant — a lease ending exactly then is refused, one ending
// after is renewed (capped at its deadline), a stale token is refused —
// and the refused rows are untouched.
func TestExtendBatchFencesEachClaim(t *testing.T) { forEngines(t, testExtendBatchFencesEachClaim) }

func testExtendBatchFencesEachClaim(t *testing.T, eng testEngine) {
	for _, at := range []int64{499, 500, 501} {
		t.Run(fmt.Sprint("at ", at, "ms"), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueueBatch(leaseq.Job{ID: "short"}, leaseq.Job{ID: "long"}, leaseq.Job{ID: "capped", Deadline: ms(1200)})
			short := f.at(0).mustClaim("A", 500*time.Millisecond)
			long := f.mustClaim("A", time.Second)
			capped := f.mustClaim("A", time.Second)
			stale := long
			stale.Owner = "B" // a claim that is not the job's current lease

			got, oks, err := f.at(at).q.ExtendBatch(f.ctx, []leaseq.Claim{short, long, capped, stale}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantShort := at < 500
			if want := []bool{wantShort, true, true, false}; fmt.Sprint(oks) != fmt.Sprint(want) {
				t.Fatalf("ExtendBatch(short, long, capped, stale): got %v, want %v; rows:\n%s", oks, want, f.dump())
			}
			if got[1].LeaseUntil != ms(at+1000) || got[2].LeaseUntil != ms(1200) || fmt.Sprintf("%+v", got[3]) != fmt.Sprintf("%+v", stale) {
				t.Fatalf("returned claims: long until %s, capped until %s, stale %+v; want %s, 1200ms, unchanged",
					relMS(got[1].LeaseUntil), relMS(got[2].LeaseUntil), got[3], relMS(ms(at+1000)))
			}
			shortUntil := ms(500)
			if wantShort {
				shortUntil = ms(at + 1000)
			}
			if got[0].LeaseUntil != shortUntil {
				t.Fatalf("short: returned lease end %s, want %s", relMS(got[0].LeaseUntil), relMS(shortUntil))
			}
			f.wantRow(leaseq.State{ID: "short", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: shortUntil})
			f.wantRow(leaseq.State{ID: "long", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(at + 1000)})
			f.wantRow(leaseq.State{ID: "capped", Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3,
				LeaseUntil: ms(1200), Deadline: ms(1200)})
		})
	}
}

// TestExtendBatchInvalidWritesNothing: a lease under a millisecond, or a
// claim Claim could not have returned, is ErrInvalid (naming its index) and
// writes nothing; an empty batch does nothing.
func TestExtendBatchInvalidWritesNothing(t *testing.T) {
	forEngines(t, testExtendBatchInvalidWritesNothing)
}

func testExtendBatchInvalidWritesNothing(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	a := f.mustClaim("A", time.Second)
	before := f.snapshot()
	for _, lease := range []time.Duration{0, time.Millisecond - 1, -time.Second} {
		_, _, err := f.q.ExtendBatch(f.ctx, []leaseq.Claim{a}, lease)
		wantErrSays(t, err, leaseq.ErrInvalid, "lease")
		f.unchanged(before, fmt.Sprintf("ExtendBatch with lease %v", lease))
	}
	_, _, err := f.q.ExtendBatch(f.ctx, []leaseq.Claim{a, {ID: "b", Owner: "A"}}, time.Second)
	wantErrSays(t, err, leaseq.ErrInvalid, `claims[1] "b"`, "token 0")
	f.unchanged(before, "ExtendBatch with an invalid claim")
	if got, oks, err := f.q.ExtendBatch(f.ctx, nil, time.Second); err != nil || len(got) != 0 || len(oks) != 0 {
		t.Fatalf("ExtendBatch(nil): got %v, %v, %v; want empty, nil", got, oks, err)
	}
}

// TestExtendBatchOtherQueue: a claim of another queue is refused (false,
// nil) beside a renewed one of this queue, and its own row is untouched.
func TestExtendBatchOtherQueue(t *testing.T) { forEngines(t, testExtendBatchOtherQueue) }

func testExtendBatchOtherQueue(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	other := f.queue("other")
	f.enqueue(leaseq.Job{ID: "a"})
	if err := other.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	mine := f.mustClaim("A", time.Second)
	theirs, ok, err := other.Claim(f.ctx, "A", time.Second)
	if err != nil || !ok {
		t.Fatalf("other.Claim: %v %v", ok, err)
	}
	_, oks, err := f.at(100).q.ExtendBatch(f.ctx, []leaseq.Claim{mine, theirs}, time.Second)
	if err != nil || fmt.Sprint(oks) != "[true false]" {
		t.Fatalf("ExtendBatch(mine, theirs): got %v, %v; want [true false], nil", oks, err)
	}
	if s, err := other.Get(f.ctx, "a"); err != nil || s.LeaseUntil != ms(1000) {
		t.Fatalf("other queue's row: %s, %v; want its lease end 1000ms untouched", fmtState(s), err)
	}
}
