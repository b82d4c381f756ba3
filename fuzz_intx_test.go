package leaseq_test

import (
	"context"
	"errors"
	"maps"

	"github.com/leaseq/leaseq"
)

// FuzzQueueModel's InTx and FinishTx (rules 43 and 46 in docs/rules.md):
// opInTx and opFinishTx, decoded here. The function runs, on SQLite, in the
// group committer's goroutine, so it only records what its calls
// answered; they are checked once InTx or FinishTx returned.

// errFuzzFn is the error a fuzzed function returns when its input says so.
var errFuzzFn = errors.New("the fuzzed function failed")

// inTx runs two tx.Enqueue calls in one InTx, whose function then returns
// nil or an error: as enqueueTx with a commit or a rollback.
func (r *fuzzRun) inTx(in *opReader) {
	fail := in.next()%2 == 1
	batches := [2][]leaseq.Job{make([]leaseq.Job, in.pick(4)), nil}
	for i := range batches[0] {
		batches[0][i] = r.decodeJob(in, true)
	}
	batches[1] = make([]leaseq.Job, in.pick(3))
	for i := range batches[1] {
		batches[1][i] = r.decodeJob(in, true)
	}
	now, qi := r.clock.Now(), r.cur
	jobs0, seq0 := r.m.queues[qi].jobs, r.m.nextSeq
	var errs [2]error
	runs := 0
	err := r.qs[qi].InTx(r.ctx, func(ctx context.Context, tx leaseq.Tx) error {
		runs++
		for i, jobs := range batches {
			errs[i] = tx.Enqueue(ctx, jobs...)
		}
		if fail {
			return errFuzzFn
		}
		return nil
	})
	r.step("q%d InTx(fail=%v) = %v (fn ran %d times)", qi, fail, err, runs)
	r.m.queues[qi].jobs = maps.Clone(jobs0)
	for i, jobs := range batches {
		r.step("  tx.Enqueue #%d (%s) = %v", i+1, fmtJobs(jobs), errs[i])
		r.wantBatchError("tx.Enqueue", errs[i], r.m.enqueueBatch(qi, now, jobs))
	}
	switch {
	case fail && err != errFuzzFn:
		r.fail("InTx: got %v, want fn's error", err)
	case !fail && err != nil:
		r.fail("InTx: got %v, want nil", err)
	case fail:
		r.m.queues[qi].jobs, r.m.nextSeq = jobs0, seq0
	}
	for _, jobs := range batches {
		for _, j := range jobs {
			r.wantRow(qi, j.ID)
		}
	}
}

// finishTx runs FinishTx on a claim as opFinishAny picks and forges it,
// with a function that enqueues one job and returns nil or an error: fn
// runs only when the fence holds, and its job is written only with the
// accepted finish.
func (r *fuzzRun) finishTx(in *opReader) {
	h, ok := r.pickClaim(in)
	if !ok {
		return
	}
	qi, c, how := r.forge(h, in.next())
	fail := in.next()%2 == 1
	j := r.decodeJob(in, true)
	now := r.clock.Now()
	var enqErr error
	ran := false
	got, err := r.qs[qi].FinishTx(r.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
		ran = true
		enqErr = tx.Enqueue(ctx, j)
		if fail {
			return errFuzzFn
		}
		return nil
	})
	r.step("FinishTx(%s, fail=%v, enqueue %s) = %v, %v (fn ran: %v, its Enqueue: %v)",
		fmtClaim(qi, c, how), fail, fmtJob(j), got, err, ran, enqErr)
	wantRun := !malformedClaim(c) && r.m.fence(qi, msOf(now), c) != nil
	switch {
	case ran != wantRun:
		r.fail("FinishTx: fn ran %v, want %v", ran, wantRun)
	case malformedClaim(c):
		if got || !errors.Is(err, leaseq.ErrInvalid) {
			r.fail("FinishTx of a malformed claim: %v, %v; want false, ErrInvalid", got, err)
		}
	case !wantRun:
		if got || err != nil {
			r.fail("FinishTx refused: %v, %v; want false, nil", got, err)
		}
	case fail:
		if got || err != errFuzzFn {
			r.fail("FinishTx whose fn failed: %v, %v; want false and fn's error", got, err)
		}
		jobs0 := r.m.queues[qi].jobs
		r.m.queues[qi].jobs = maps.Clone(jobs0)
		seq0 := r.m.nextSeq
		r.wantBatchError("tx.Enqueue", enqErr, r.m.enqueueBatch(qi, now, []leaseq.Job{j}))
		r.m.queues[qi].jobs, r.m.nextSeq = jobs0, seq0
	default:
		r.wantBatchError("tx.Enqueue", enqErr, r.m.enqueueBatch(qi, now, []leaseq.Job{j}))
		want, wantErr := r.m.finish(qi, now, c)
		if got != want || err != wantErr {
			r.fail("FinishTx: got %v, %v; want %v, %v", got, err, want, wantErr)
		}
	}
	r.wantRow(qi, c.ID)
	r.wantRow(qi, j.ID)
}
