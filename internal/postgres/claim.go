package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobClaim runs leaseq_claim's two parts: the sweeps as a statement of their
// own (sweep.sql), committed as the server ends it, so that the lock that
// lets one claim of the queue at a time sweep is never held while the
// server waits for this process (a process that stalls before its COMMIT
// would stop the sweeps of every other claim); then the claim in a
// transaction of its own. A sweep cut short by ctx may have committed: it
// moved only jobs no claim may take and promoted due ones, as any claim's
// sweep would, so the claim still answers with ctx's error. An idle claim
// changes no row and so takes no row lock (rule 23 in docs/rules.md). The
// claim's injected clock is read once the claim holds its connection, so
// that a wait for one does not leave the claim judging at a stale instant
// (rule 8); the rows it takes it locks itself. A worker pool's claim on the
// server's clock is its cycle's (JobCycle, cycle.go).
//
// Every statement runs on ctx, so that a claim returns when ctx ends, also
// while the server does not answer (rule 24): the driver then closes the
// connection, and a transaction the server had not been asked to commit is
// rolled back once the server notices.
func (e *Engine) JobClaim(ctx context.Context, p engine.JobClaimParams) ([]engine.ClaimRow, error) {
	q := p.Queue
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, interpretError(engine.PoolWait(e.db, err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, stmt("sweep"), q.Name, q.Clock.Arg()); err != nil {
		if ctx.Err() != nil {
			// The driver answers a statement begun on an ended context
			// with database/sql's "bad connection" (nothing was sent);
			// the caller left, and is told so.
			return nil, ctx.Err()
		}
		return nil, interpretError(err)
	}
	cs, err := retry(ctx, e.db, func() ([]engine.ClaimRow, error) { return e.claimTx(ctx, conn, p) })
	if len(cs) == 0 {
		cs = nil
	}
	return cs, interpretError(err)
}

// claimTx is one try of a claim's transaction on conn. The claims are read
// before the COMMIT, so that a COMMIT cut short by ctx — which the server
// may carry out after its caller left — leaves claims this process knows:
// they are released at once (abandon), not left leased to nobody until
// their leases end.
func (e *Engine) claimTx(ctx context.Context, conn *sql.Conn, p engine.JobClaimParams) ([]engine.ClaimRow, error) {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	var cs []engine.ClaimRow
	rows, err := tx.QueryContext(ctx, stmt("claim"), p.Queue.Name, p.Owner, p.Queue.Clock.Arg(), p.Lease, p.Max)
	if err == nil {
		cs, err = engine.ScanClaims(rows, p.Owner)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		if ctx.Err() != nil || lost(err) {
			// The caller left, or the connection was lost: the COMMIT
			// may have been carried out all the same, and the claims,
			// whose answer the caller never gets, are undone.
			e.abandon(p.Queue, cs)
		}
		return nil, err
	}
	return cs, nil
}

// undoneReason is the reason a claim undone by abandon leaves.
const undoneReason = "claim undone: its caller left before the claim's answer came"

// abandonWait bounds the undoing of claims whose caller left.
const abandonWait = 30 * time.Second

// abandon undoes, in the background, claims of q that may have committed
// after their caller left with an error: each is released with no delay,
// fenced, as Work's shutdown releases a job (its attempt stays counted, as
// every claim's does; a job whose attempts are used up is quarantined). It
// first locks the jobs' rows, so that it waits for the claim's transaction
// while the server has not settled it: the release alone would see the
// rows as they were before the claim and pass them by. If the claims did
// not commit, nothing matches. A failed try is made again until
// abandonWait has passed or the database is closed; a server that does not
// answer for longer leaves the claims leased until their leases end, as a
// crashed worker's are. A release that matched wakes the queue's workers.
func (e *Engine) abandon(q engine.Queue, cs []engine.ClaimRow) {
	if len(cs) == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), abandonWait)
		defer cancel()
		for n := 1; ; n++ {
			undone, err := write(ctx, e, func(ctx context.Context, tx engine.Execer) (bool, error) {
				return releaseTx(ctx, tx, q, cs)
			})
			if err == nil {
				if undone {
					e.wake.Signal(q.Name)
				}
				return
			}
			if ctx.Err() != nil || e.Usable() != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(faultDelay(n, 0)):
			}
		}
	}()
}

// releaseTx is abandon's transaction: the claims' rows locked, then each
// claim released; it reports whether any release matched.
func releaseTx(ctx context.Context, tx engine.Execer, q engine.Queue, cs []engine.ClaimRow) (bool, error) {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	if err := lockJobs(ctx, tx, q.Name, ids...); err != nil {
		return false, err
	}
	now := q.Clock.Arg()
	undone := false
	for _, c := range cs {
		// A snooze: the claim never ran, so it spends no attempt (rule 49).
		r, err := fencedTx(ctx, tx, q.Name, engine.SnoozeFenced(c.ID, c.Owner, c.Token, 0, undoneReason), now)
		if err != nil {
			return false, err
		}
		undone = undone || r.OK
	}
	return undone, nil
}
