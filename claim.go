package leaseq

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// Claim is a worker's proof of one lease generation of a job. Pass it back
// unchanged to Finish: Finish compares its ID, Owner and Token with the
// current row.
type Claim struct {
	ID      string
	Qty     int
	Payload []byte
	// Owner is the worker name given to Claim. It is for people reading
	// logs: a restarted worker has the same name, so it never suffices to
	// finish a job on its own.
	Owner string
	// Token is the fencing token: the job's lease generation, 1 for the
	// first claim and +1 on every claim after. A token is a sequence number,
	// not a credential: it grants nothing and authenticates nobody.
	Token int64
	// Attempt counts the claims of this job, this one included.
	Attempt int
	// LeaseUntil is when the lease ends: min(now+lease, Deadline). At that
	// instant the lease is already over.
	LeaseUntil time.Time
	// Deadline is the job's deadline; zero means none.
	Deadline time.Time
}

// Claim leases the next claimable job to owner for lease. A job is claimable
// when it is pending, or leased with a lease that has ended (lease_until <=
// now); a live lease is never handed over. The claim gets a new token, the
// job's attempts go up by one, and its lease ends at min(now+lease,
// deadline).
//
// In the same transaction, before any token is issued, jobs that can no
// longer be finished are quarantined: those whose lease expired with their
// attempts used up, and those whose deadline is at or before now.
//
// With nothing claimable, ok is false and err nil. owner must be a
// non-empty name of at most MaxIDLen bytes; lease is truncated to the
// millisecond and must be at least one. Claim holds no lock once it returns.
func (q *Queue) Claim(ctx context.Context, owner string, lease time.Duration) (Claim, bool, error) {
	cs, err := q.claimN(ctx, "claim", owner, lease, 1, q.groupTx)
	if err != nil || len(cs) == 0 {
		return Claim{}, false, err
	}
	return cs[0], true, nil
}

// txRunner is how a call gets its write transaction: groupTx for single
// calls, which may share one, or soloTx for batch calls, which are a group
// already.
type txRunner func(ctx context.Context, fn func(ctx context.Context, tx execer) error) error

// claimN claims up to max jobs in one transaction run by runTx.
func (q *Queue) claimN(ctx context.Context, op, owner string, lease time.Duration, max int, runTx txRunner) ([]Claim, error) {
	if err := checkLease(op, owner, lease); err != nil {
		return nil, err
	}
	var cs []Claim
	err := runTx(ctx, func(ctx context.Context, tx execer) error {
		var err error
		cs, err = q.claimTx(ctx, tx, owner, lease, max)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("leaseq: %s as %q: %w", op, owner, err)
	}
	return cs, nil
}

// checkLease validates Claim's arguments.
func checkLease(op, owner string, lease time.Duration) error {
	if why := checkName("owner", owner); why != "" {
		return fmt.Errorf("leaseq: %s as %q: %s: %w", op, owner, why, ErrInvalid)
	}
	if lease < time.Millisecond {
		return fmt.Errorf("leaseq: %s as %q: lease %v is under the 1ms resolution of the queue's clock: %w",
			op, owner, lease, ErrInvalid)
	}
	return nil
}

// quarantineSQL moves claimable jobs that could never be finished out of the
// way before a token is issued (SPEC rule 6). Both statements are range scans
// of partial indexes that hold only rows they may take: leases that ended
// with their attempts used up or whose deadline passed (a prefix of
// leaseq_jobs_doomed, whose key expression the first WHERE repeats word for
// word), and pending jobs whose deadline passed (a prefix of
// leaseq_jobs_pending_deadline). A leased job whose deadline passed always
// has an expired lease, since no lease outlives its deadline, which is why
// the first statement's condition equals "lease ended, and attempts used up
// or deadline passed". They are two statements, not one script, so that a
// transaction can prepare each once and run it for every claim in a group.
var quarantineSQL = [...]string{`
UPDATE leaseq_jobs
SET status = 'quarantined', updated_at = ?1,
    reason = CASE WHEN deadline IS NOT NULL AND deadline <= ?1
        THEN 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
        ELSE 'max attempts reached: ' || attempts || ' of ' || max_attempts || ', last lease ended at ' || lease_until || ' (unix ms)'
    END
WHERE status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL)
  AND (CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END) <= ?1`, `
UPDATE leaseq_jobs
SET status = 'quarantined', updated_at = ?1,
    reason = 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= ?1`}

// claimSQL leases up to ?4 claimable jobs in one statement. The candidates
// are the first ?4 pending jobs in enqueue order (from leaseq_jobs_pending)
// and the ?4 leases that ended first (from leaseq_jobs_leased); of those it
// takes the ?4 enqueued earliest. Neither index holds done or quarantined
// rows, and live leases sort after every expired one, so the cost does not
// grow with the queue. Which claimable job is taken is not part of the
// contract; this order keeps old work moving.
const claimSQL = `
UPDATE leaseq_jobs
SET status = 'leased', owner = ?1, token = token + 1, attempts = attempts + 1,
    lease_until = CASE WHEN deadline IS NOT NULL AND deadline < ?3 THEN deadline ELSE ?3 END,
    updated_at = ?2
WHERE seq IN (
    SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE status = 'pending' ORDER BY seq LIMIT ?4)
    UNION ALL
    SELECT seq FROM (SELECT seq FROM leaseq_jobs WHERE status = 'leased' AND lease_until <= ?2
                     ORDER BY lease_until LIMIT ?4)
    ORDER BY seq LIMIT ?4)
RETURNING seq, id, qty, payload, token, attempts, lease_until, deadline`

// claimTx is the body of a claim transaction: quarantine, then lease. The
// clock is read here, after the lock is held, so a claim that waited for the
// lock does not start its lease in the past.
func (q *Queue) claimTx(ctx context.Context, tx execer, owner string, lease time.Duration, max int) ([]Claim, error) {
	now := q.now()
	for _, sweep := range quarantineSQL {
		if _, err := tx.ExecContext(ctx, sweep, now); err != nil {
			return nil, err
		}
	}
	rows, err := tx.QueryContext(ctx, claimSQL, owner, now, now+lease.Milliseconds(), max)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type seqClaim struct {
		seq int64
		Claim
	}
	var got []seqClaim
	for rows.Next() {
		c := seqClaim{Claim: Claim{Owner: owner}}
		var leaseUntil int64
		var deadline sql.NullInt64
		if err := rows.Scan(&c.seq, &c.ID, &c.Qty, &c.Payload, &c.Token, &c.Attempt, &leaseUntil, &deadline); err != nil {
			return nil, err
		}
		c.LeaseUntil, c.Deadline = fromMillis(leaseUntil), nullTime(deadline)
		if len(c.Payload) == 0 {
			c.Payload = nil
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// RETURNING gives rows in no promised order.
	slices.SortFunc(got, func(a, b seqClaim) int { return int(a.seq - b.seq) })
	cs := make([]Claim, len(got))
	for i, c := range got {
		cs[i] = c.Claim
	}
	return cs, nil
}
