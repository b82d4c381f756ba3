package postgres

import (
	"context"
	"database/sql"
	"slices"

	"github.com/leaseq/leaseq/internal/engine"
)

// How a fenced call on the server's clock, one autocommitted statement
// with no transaction of its own (JobSettle, finishMany), finds out what it
// did when answered cut it short: unlike write's transactions it has no
// transaction ID known before it answers, which would cost it a round trip
// of its own on the path every single Finish takes. So the read looks at
// the rows, for the mark each kind of call leaves on its row and nothing
// else leaves there: what this call changed it to, with this claim's
// owner and token.

// fencedRow is what a fenced call's mark is read from.
type fencedRow struct {
	status, owner, reason string
	token                 int64
	leaseUntil, updatedAt sql.NullInt64
	runAt, deadline       sql.NullInt64
}

// settledRows reads the outcome of fs, fenced calls of queue cut short,
// from their rows (settled.sql): for each, whether its row shows its mark
// (shows), and the lease end it left.
func (e *Engine) settledRows(ctx context.Context, queue string, fs []engine.Fenced) ([]engine.Settled, error) {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	byID, err := e.fencedRows(ctx, queue, slices.Compact(slices.Sorted(slices.Values(ids))))
	if err != nil {
		return nil, err
	}
	out := make([]engine.Settled, len(fs))
	for i, f := range fs {
		if r, ok := byID[f.ID]; ok && shows(f, r) {
			out[i] = engine.Settled{OK: true, LeaseUntil: r.leaseUntil.Int64}
			delete(byID, f.ID) // as finishMany answers: the first of a claim named twice
		}
	}
	return out, nil
}

// fencedRows reads the rows of the jobs ids of queue by ID.
func (e *Engine) fencedRows(ctx context.Context, queue string, ids []string) (map[string]fencedRow, error) {
	rows, err := e.db.QueryContext(ctx, stmt("settled"), queue, ids)
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
	return byID, rows.Err()
}

// shows reports whether r bears f's mark: the job as f leaves it, with
// f's claim's owner and token. Finish: done. Fail: quarantined with its
// reason. Release and Snooze: not leased, with one of its reasons, its lease ended
// and its run_at set at the instant of the change, delay apart. Extend:
// leased, its lease end set from the instant of the change by its lease
// (or the deadline), and not the lease end the claim had. Each such row
// could be left only by a call of this claim that passed the fence: a
// Finish or Fail repeated, or an Extend by the same lease at the same
// instant, reads as this one.
func shows(f engine.Fenced, r fencedRow) bool {
	if r.owner != f.Owner || r.token != f.Token {
		return false
	}
	at := r.updatedAt.Int64
	switch f.Kind {
	case engine.FenceFinish:
		return r.status == "done"
	case engine.FenceFail:
		return r.status == "quarantined" && r.reason == f.Reason
	case engine.FenceRelease, engine.FenceSnooze:
		reasons := []string{f.Reason, f.ReasonAttempts, f.ReasonDeadline}
		return r.status != "leased" && slices.Contains(reasons, r.reason) &&
			r.leaseUntil.Int64 == at && r.runAt.Int64 == at+f.Delay
	}
	until := at + f.Lease
	if r.deadline.Valid {
		until = min(until, r.deadline.Int64)
	}
	prior, known := claimLeaseEnd(f)
	return r.status == "leased" && r.leaseUntil.Int64 == until && (!known || until != prior)
}

// claimLeaseEnd is the lease end the claim of f had before f, which an
// Extend's row must no longer show to count as extended: otherwise the
// row a claim left, unchanged, reads as extended by an Extend of the
// claim's own lease length that never ran. An engine's own release of a
// claim carries none (0), and is never an Extend.
func claimLeaseEnd(f engine.Fenced) (int64, bool) {
	return f.LeaseUntil, f.LeaseUntil != 0
}
