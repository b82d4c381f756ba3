package leaseq

import (
	"context"
	"database/sql"
	"errors"
)

// The fence (rules 3, 14 and 17–19 in docs/rules.md): a call that
// changes a claimed job — Finish, Extend, Release, Fail — changes the row
// only if the job is leased by this very claim, in the same queue, with the
// same ID, owner and token, and both the lease and the deadline are still
// running at now. At
// now == lease_until the lease is over. Each such call is one UPDATE with
// this WHERE clause (a lookup in the unique index on (queue, id)), so the
// check and the change cannot be separated; a refused call matches no row
// and changes nothing.
//
// Arguments: ?1 queue, ?2 ID, ?3 owner, ?4 token, ?5 now; a statement's own
// arguments follow from ?6. Every fenced statement returns the lease end it
// leaves, which only Extend reports.
const fenceSQL = `
WHERE queue = ?1 AND id = ?2 AND owner = ?3 AND token = ?4 AND status = 'leased'
  AND lease_until > ?5 AND (deadline IS NULL OR deadline > ?5)
RETURNING lease_until`

// sqliteFenced is each fenced call's statement on SQLite.
var sqliteFenced = [...]string{fenceFinish: finishSQL, fenceExtend: extendSQL, fenceRelease: releaseSQL, fenceFail: failSQL}

// fencedTx runs f at time now (nil: the statement reads the server's
// clock) in query and reports whether the fence matched and the lease end
// the row was left with. Both engines' fenced statements take the same
// arguments.
func fencedTx(ctx context.Context, tx execer, q *Queue, query string, f fenced, now any) (settled, error) {
	args := append([]any{q.name, f.c.ID, f.c.Owner, f.c.Token, now}, f.args...)
	var r settled
	err := tx.QueryRowContext(ctx, query, args...).Scan(&r.leaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return settled{}, nil
	}
	r.ok = err == nil
	return r, err
}

// settle runs fenced calls on SQLite: a single one in a (possibly shared)
// transaction at the clock read under the lock, a batch in one transaction
// at one instant.
func (s *store) settle(ctx context.Context, q *Queue, fs []fenced, share sharing) ([]settled, error) {
	out := make([]settled, len(fs))
	body := func(ctx context.Context, tx execer) error {
		now := q.now()
		for i, f := range fs {
			var err error
			if out[i], err = fencedTx(ctx, tx, q, sqliteFenced[f.kind], f, now); err != nil {
				return err
			}
		}
		return nil
	}
	if share != shareNone {
		return out, s.groupTx(ctx, q, nil, body)
	}
	return out, s.writeTx(ctx, nil, body)
}

// settle runs one fenced call in a (possibly shared) transaction, judged at
// the queue's clock read under the lock. why, if not "", refuses the call's
// own arguments; a claim that Claim could not have returned is refused
// too. Both are ErrInvalid and write nothing.
func (q *Queue) settle(ctx context.Context, op string, f fenced, why string, share sharing) (leaseUntil int64, ok bool, err error) {
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
	r, err := q.e.settle(ctx, q, []fenced{f}, share)
	if err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	return r[0].leaseUntil, r[0].ok, nil
}

// settleBatch runs fenced calls in one transaction, each fenced on its own,
// all judged at one instant read under the lock, and reports for each
// whether it matched. A claim Claim could not have returned is ErrInvalid
// naming its index, and then nothing is written.
func (q *Queue) settleBatch(ctx context.Context, op string, fs []fenced) ([]bool, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError(op, "", err)
	}
	for i, f := range fs {
		if err := problem(claimProblem(f.c)); err != nil {
			return nil, opError(op, entry("claims", i, f.c.ID), err)
		}
	}
	oks := make([]bool, len(fs))
	var asked []int // the index in fs of each claim the engine is asked about
	for i, f := range fs {
		if q.fences(f.c) {
			asked = append(asked, i)
		}
	}
	if len(asked) == 0 {
		return oks, nil
	}
	ask := make([]fenced, len(asked))
	for k, i := range asked {
		ask[k] = fs[i]
	}
	rs, err := q.e.settle(ctx, q, ask, shareNone)
	if err != nil {
		return nil, opError(op, "", err)
	}
	for k, r := range rs {
		oks[asked[k]] = r.ok
	}
	return oks, nil
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
