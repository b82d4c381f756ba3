package sqlite

import (
	"context"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobClaim leases up to p.Max claimable jobs to p.Owner in a write
// transaction (shared with other single calls unless p.Share is
// ShareNone), which only a Claim whose idle check found work begins.
// Nothing claimable is nil, nil. Claims whose COMMIT had an unknown outcome
// are released before the error returns.
func (e *Engine) JobClaim(ctx context.Context, p engine.JobClaimParams) ([]engine.ClaimRow, error) {
	idle := func(ctx context.Context, db engine.Execer) (bool, error) { return claimIdle(ctx, db, p.Queue) }
	body := func(ctx context.Context, tx engine.Execer) ([]engine.ClaimRow, error) { return claimTx(ctx, tx, p) }
	var cs []engine.ClaimRow
	var err error
	if grouped(p.Queue, p.Share) {
		cs, err = groupTx(ctx, e, p.Queue, idle, body)
	} else {
		cs, err = writeTx(ctx, e, write[[]engine.ClaimRow]{idle: idle, run: body})
	}
	switch {
	case errors.Is(err, errIdle):
		return nil, nil
	case errors.Is(err, errCommitUnknown):
		e.releaseUnknown(ctx, p.Queue, cs)
		return nil, err
	case err != nil:
		return nil, err
	}
	return cs, nil
}

// releaseUnknown releases claims whose transaction's COMMIT failed with an
// outcome the file could not tell: their caller gets an error, not the
// claims, so claims that did commit must not stay leased until their lease
// ends. The fence makes it safe either way: a claim that did not commit
// holds no lease, and its Release changes nothing. It is done on a context
// that the caller's cannot cut short, bounded by commitCheckWait; if it
// fails too, the leases end by themselves.
func (e *Engine) releaseUnknown(ctx context.Context, q engine.Queue, cs []engine.ClaimRow) {
	if len(cs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitCheckWait)
	defer cancel()
	fs := make([]engine.Fenced, len(cs))
	for i, c := range cs {
		// A snooze: no caller got the claim, so it spends no attempt (rule 49).
		fs[i] = engine.SnoozeFenced(c.ID, c.Owner, c.Token, 0, "released: the claim's commit failed, and whether it took effect was unknown")
	}
	p := engine.JobSettleParams{Queue: q, Calls: fs, Share: engine.ShareNone}
	if _, err := e.JobSettle(ctx, p); err == nil {
		e.wake.Signal(q.Name)
	}
}

// claimIdle reports, from a read, whether a Claim of q would find nothing
// to do. The clock is read after the connection is in hand, as in a
// transaction; the read's own lock makes its view consistent.
func claimIdle(ctx context.Context, db engine.Execer, q engine.Queue) (bool, error) {
	var busy bool
	err := db.QueryRowContext(ctx, stmt("claim_idle"), q.Name, q.Clock.Now()).Scan(&busy)
	return !busy, err
}

// claimSweeps run, in this order, before every claim: a job due for
// quarantine must never be promoted, let alone claimed.
var claimSweeps = []string{stmt("sweep_leased"), stmt("sweep_pending"), stmt("promote")}

// sweptAt reports whether the transaction tx already ran the claim sweeps
// of queue at the instant now, and notes that it is about to if not. A
// second run at the same instant in the same transaction would find
// nothing: no call writes a row the sweeps could take at its own instant —
// a claim or an extension leaves a lease that ends after now, every pending
// job it leaves has its deadline after now, and a job due at once goes
// straight into leaseq_jobs_ready. So in a shared transaction of many
// claims (group commit) the sweeps run once per millisecond, not once per
// claim. Outside a writeConn it always sweeps.
func sweptAt(tx engine.Execer, queue string, now int64) bool {
	wc, ok := tx.(*writeConn)
	if !ok {
		return false
	}
	if last, ok := wc.swept[queue]; ok && last == now {
		return true
	}
	if wc.swept == nil {
		wc.swept = make(map[string]int64)
	}
	wc.swept[queue] = now
	return false
}

// claimTx is the body of a claim transaction: quarantine, promote, lease.
// The clock is read here, after the lock is held, so a claim that waited for
// the lock does not start its lease in the past.
func claimTx(ctx context.Context, tx engine.Execer, p engine.JobClaimParams) ([]engine.ClaimRow, error) {
	now := p.Queue.Clock.Now()
	if !sweptAt(tx, p.Queue.Name, now) {
		for _, sweep := range claimSweeps {
			if _, err := tx.ExecContext(ctx, sweep, now, p.Queue.Name); err != nil {
				return nil, err
			}
		}
	}
	rows, err := tx.QueryContext(ctx, stmt("claim"), p.Owner, now, now+p.Lease, p.Max, p.Queue.Name)
	if err != nil {
		return nil, err
	}
	return engine.ScanClaims(rows, p.Owner)
}
