package leaseq

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// The fence (rules 3, 14, 17–19 and 49 in docs/rules.md): a call that
// changes a claimed job — Finish, Extend, Release, Fail, Snooze — changes the row
// only if the job is leased by this very claim, in the same queue, with the
// same ID, owner and token, and both the lease and the deadline are still
// running at now. At
// now == lease_until the lease is over. Each such call is one UPDATE with
// this WHERE clause (a lookup in the unique index on (queue, id)), so the
// check and the change cannot be separated; a refused call matches no row
// and changes nothing.
//
// The statements are each engine's (internal/sqlite/sql, internal/postgres/sql:
// finish.sql, extend.sql, release.sql, fail.sql); the root validates the
// call and asks the engine only about a claim that could match a row.

// fenced is one fenced call on the claim c: c for the checks made here,
// call for the engine.
type fenced struct {
	c    Claim
	call engine.Fenced
}

// fence is the fenced call of kind on c, with no arguments of its own.
func fence(c Claim, kind engine.FenceKind) fenced {
	return fenced{c: c, call: engine.Fenced{Kind: kind, ID: c.ID, Owner: c.Owner, Token: c.Token, LeaseUntil: toMillis(c.LeaseUntil)}}
}

// settle runs one fenced call in a (possibly shared) transaction, judged at
// the queue's clock read under the lock. why, if not "", refuses the call's
// own arguments; a claim that Claim could not have returned is refused
// too. Both are ErrInvalid and write nothing.
func (q *Queue) settle(ctx context.Context, op string, f fenced, why string, share engine.Sharing) (leaseUntil int64, ok bool, err error) {
	if err := q.callable(ctx); err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	if p := claimProblem(f.c); p != "" {
		why = p
	}
	if err := problem(why); err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	if !q.fences(f.c) {
		return 0, false, nil
	}
	r, err := q.e.JobSettle(ctx, engine.JobSettleParams{Queue: q.ref(), Calls: []engine.Fenced{f.call}, Share: share})
	if err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	return r[0].LeaseUntil, r[0].OK, nil
}

// settleBatch runs fenced calls in one transaction, each fenced on its own,
// all judged at one instant read under the lock, and reports for each
// whether it matched and the lease end it left (the zero Settled for a
// refused one). A claim Claim could not have returned is ErrInvalid
// naming its index, and then nothing is written. how gives the engine's
// Share and SkipLocked; its Queue and Calls are set here.
func (q *Queue) settleBatch(ctx context.Context, op string, fs []fenced, how engine.JobSettleParams) ([]engine.Settled, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError(op, "", err)
	}
	for i, f := range fs {
		if err := problem(claimProblem(f.c)); err != nil {
			return nil, opError(op, entry("claims", i, f.c.ID), err)
		}
	}
	out := make([]engine.Settled, len(fs))
	var asked []int // the index in fs of each claim the engine is asked about
	for i, f := range fs {
		if q.fences(f.c) {
			asked = append(asked, i)
		}
	}
	if len(asked) == 0 {
		return out, nil
	}
	ask := make([]engine.Fenced, len(asked))
	for k, i := range asked {
		ask[k] = fs[i].call
	}
	how.Queue, how.Calls = q.ref(), ask
	rs, err := q.e.JobSettle(ctx, how)
	if err != nil {
		return nil, opError(op, "", err)
	}
	for k, r := range rs {
		out[asked[k]] = r
	}
	return out, nil
}

// fences reports whether c can match a row of q at all, so that the engine
// is asked: a claim of another queue is refused without a look, since the
// same ID, owner and token may be live there. "" is q itself (see
// Claim.Queue).
func (q *Queue) fences(c Claim) bool {
	return (c.Queue == "" || c.Queue == q.name) && storedNames(c)
}

// storedNames reports whether c's ID and owner could be stored at all. A
// name that Enqueue or Claim would refuse (not UTF-8, a NUL byte, too long)
// is in no row, so a call that names it is refused, or finds nothing,
// without asking the database — which PostgreSQL could not even be asked:
// its text type refuses such bytes with an error.
func storedNames(c Claim) bool {
	return nameProblem("ID", c.ID) == "" && nameProblem("owner", c.Owner) == ""
}
