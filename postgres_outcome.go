package leaseq

import (
	"context"
	"database/sql"
	"slices"
)

// How a fenced call on the server's clock, one autocommitted statement
// with no transaction of its own (settle, finishMany), finds out what it
// did when answered cut it short: unlike write's transactions it has no
// transaction ID known before it answers, which would cost it a round trip
// of its own on the path every single Finish takes. So the read looks at
// the rows, for the mark each kind of call leaves on its row and nothing
// else leaves there: what this call changed it to, with this claim's
// owner and token.

// pgSettledSQL reads the rows of fenced calls cut short. FOR SHARE waits
// for a transaction holding a row: the call's statement, which holds the
// row it changes until it ends, or, waiting for the row itself, is ahead
// of the read in the row's queue of waiters.
const pgSettledSQL = `SELECT id, status, owner, token, reason, lease_until, run_at, deadline, updated_at
FROM leaseq_jobs WHERE queue = $1 AND id = ANY($2) FOR SHARE`

// fencedRow is what a fenced call's mark is read from.
type fencedRow struct {
	status, owner, reason string
	token                 int64
	leaseUntil, updatedAt sql.NullInt64
	runAt, deadline       sql.NullInt64
}

// settledRows reads the outcome of fs, fenced calls of q cut short, from
// their rows: for each, whether its row shows its mark (shows), and the
// lease end it left.
func (e *pgEngine) settledRows(ctx context.Context, q *Queue, fs []fenced) ([]settled, error) {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.c.ID
	}
	rows, err := e.dbh.QueryContext(ctx, pgSettledSQL, q.name, slices.Compact(slices.Sorted(slices.Values(ids))))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[string]fencedRow{}
	for rows.Next() {
		var id string
		var r fencedRow
		if err := rows.Scan(&id, &r.status, &r.owner, &r.token, &r.reason, &r.leaseUntil, &r.runAt, &r.deadline, &r.updatedAt); err != nil {
			return nil, err
		}
		byID[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]settled, len(fs))
	for i, f := range fs {
		if r, ok := byID[f.c.ID]; ok && f.shows(r) {
			out[i] = settled{ok: true, leaseUntil: r.leaseUntil.Int64}
			delete(byID, f.c.ID) // as finishMany answers: the first of a claim named twice
		}
	}
	return out, nil
}

// shows reports whether r bears f's mark: the job as f leaves it, with
// f's claim's owner and token. Finish: done. Fail: quarantined with its
// reason. Release: not leased, with one of its reasons, its lease ended
// and its run_at set at the instant of the change, delay apart. Extend:
// leased, its lease end set from the instant of the change by its lease
// (or the deadline), and not the lease end the claim had. Each such row
// could be left only by a call of this claim that passed the fence: a
// Finish or Fail repeated, or an Extend by the same lease at the same
// instant, reads as this one.
func (f fenced) shows(r fencedRow) bool {
	if r.owner != f.c.Owner || r.token != f.c.Token {
		return false
	}
	at := r.updatedAt.Int64
	switch f.kind {
	case fenceFinish:
		return r.status == string(StatusDone)
	case fenceFail:
		return r.status == string(StatusQuarantined) && r.reason == f.args[0]
	case fenceRelease:
		delay := f.args[0].(int64)
		return r.status != string(StatusLeased) && slices.Contains(f.args[1:], any(r.reason)) &&
			r.leaseUntil.Int64 == at && r.runAt.Int64 == at+delay
	}
	until := at + f.args[0].(int64)
	if r.deadline.Valid {
		until = min(until, r.deadline.Int64)
	}
	return r.status == string(StatusLeased) && r.leaseUntil.Int64 == until && until != toMillis(f.c.LeaseUntil)
}
