package leaseq

import (
	"context"
	"database/sql"
	"errors"
)

// The fence (rules 3 and 17–19 in README's "The rules"): a call that
// changes a claimed job — Finish, Extend, Release, Fail — changes the row
// only if the job is leased by this very claim, with the same ID, owner and
// token, and both the lease and the deadline are still running at now. At
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

// fenced is one fenced call on the claim c: the statement to run and its
// own arguments after the fence's.
type fenced struct {
	c     Claim
	query string
	args  []any
}

// fencedTx runs f at time now and reports whether the fence matched and
// the lease end the row was left with.
func (q *Queue) fencedTx(ctx context.Context, tx execer, f fenced, now int64) (leaseUntil int64, ok bool, err error) {
	args := append([]any{q.name, f.c.ID, f.c.Owner, f.c.Token, now}, f.args...)
	err = tx.QueryRowContext(ctx, f.query, args...).Scan(&leaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return leaseUntil, err == nil, err
}

// settle runs one fenced call in a (possibly shared) transaction, judged at
// the queue's clock read under the lock. why, if not "", refuses the call's
// own arguments; a claim that Claim could not have returned is refused
// too. Both are ErrInvalid and write nothing.
func (q *Queue) settle(ctx context.Context, op string, f fenced, why string) (leaseUntil int64, ok bool, err error) {
	if err := q.usable(); err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	if p := claimProblem(f.c); p != "" {
		why = p
	}
	if err := problem(why); err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	err = q.groupTx(ctx, nil, func(ctx context.Context, tx execer) error {
		var err error
		leaseUntil, ok, err = q.fencedTx(ctx, tx, f, q.now())
		return err
	})
	if err != nil {
		return 0, false, opError(op, job(f.c.ID), err)
	}
	return leaseUntil, ok, nil
}

// settleBatch runs fenced calls in one transaction, each fenced on its own,
// all judged at one instant read under the lock, and reports for each
// whether it matched. A claim Claim could not have returned is ErrInvalid
// naming its index, and then nothing is written.
func (q *Queue) settleBatch(ctx context.Context, op string, fs []fenced) ([]bool, error) {
	if err := q.usable(); err != nil {
		return nil, opError(op, "", err)
	}
	for i, f := range fs {
		if err := problem(claimProblem(f.c)); err != nil {
			return nil, opError(op, entry("claims", i, f.c.ID), err)
		}
	}
	oks := make([]bool, len(fs))
	if len(fs) == 0 {
		return oks, nil
	}
	err := q.s.writeTx(ctx, nil, func(ctx context.Context, tx execer) error {
		now := q.now()
		for i, f := range fs {
			var err error
			if _, oks[i], err = q.fencedTx(ctx, tx, f, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, opError(op, "", err)
	}
	return oks, nil
}
