package leaseq

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"
)

// Claim leases the next claimable job of the queue to owner for lease. A
// job is claimable when it is pending and due (run_at at or before now), or
// leased with a lease that has ended (lease_until <= now); a live lease is
// never handed over. Of the claimable jobs Claim takes one of the highest
// priority, preferring the one due earliest. The claim gets a new token, the
// job's attempts go up by one, and its lease ends at min(now+lease,
// deadline).
//
// In the same transaction, before any token is issued, jobs that can no
// longer be finished are quarantined: those whose lease expired with their
// attempts used up, and those whose deadline is at or before now.
//
// With nothing claimable, ok is false and err nil; that answer comes from a
// read, without taking the write lock, so idle workers polling a queue do
// not slow its writers. owner must be a non-empty name of at most
// [MaxIDLen] bytes; lease is truncated to the millisecond and must be at
// least one, or the error wraps [ErrInvalid]. Claim holds no lock once it
// returns. A Claim whose context ends first returns the context's error
// and leaves no job leased to it: on PostgreSQL, a claim the server
// commits after its caller left is released at once, with no delay, as a
// Work shutdown releases a job (the attempt stays counted). Pass the claim to
// [Queue.Finish], [Queue.Extend], [Queue.Release] or [Queue.Fail].
func (q *Queue) Claim(ctx context.Context, owner string, lease time.Duration) (Claim, bool, error) {
	cs, err := q.claimN(ctx, "claim", owner, lease, 1, shareCalls)
	if err != nil || len(cs) == 0 {
		return Claim{}, false, err
	}
	return cs[0], true, nil
}

// ClaimBatch leases to owner for lease, in one transaction, up to max of the
// jobs [Queue.Claim] would have taken one by one, and returns them highest
// priority first, then in enqueue order. Each job is claimed exactly as
// Claim would claim it: its own new token and attempt, its lease capped at
// its deadline, and the same quarantine sweep first. With nothing claimable
// the result is an empty slice and a nil error, decided without the write
// lock. max must be from 1 to [MaxCount]; owner and lease are checked as in
// Claim.
func (q *Queue) ClaimBatch(ctx context.Context, owner string, lease time.Duration, max int) ([]Claim, error) {
	if max < 1 {
		return nil, opError("claim batch", as(owner), invalid("max %d is not positive", max))
	}
	if err := problem(countProblem("max", max)); err != nil {
		return nil, opError("claim batch", as(owner), err)
	}
	cs, err := q.claimN(ctx, "claim batch", owner, lease, max, shareNone)
	if err == nil && cs == nil {
		cs = []Claim{} // idle: decided without a transaction
	}
	return cs, err
}

// claimN claims up to max jobs in one transaction, which share says it
// may share with other calls. Nothing claimable is nil, nil.
func (q *Queue) claimN(ctx context.Context, op, owner string, lease time.Duration, max int, share sharing) ([]Claim, error) {
	if err := q.callable(ctx); err != nil {
		return nil, opError(op, as(owner), err)
	}
	why := nameProblem("owner", owner)
	if why == "" {
		why = leaseProblem(lease)
	}
	if err := problem(why); err != nil {
		return nil, opError(op, as(owner), err)
	}
	cs, err := q.e.claim(ctx, q, owner, lease, max, share)
	for i := range cs {
		cs[i].Queue = q.name // set here, so every engine's claim path carries it
	}
	if err != nil {
		return nil, opError(op, as(owner), err)
	}
	return cs, nil
}

// claim runs claimTx in a write transaction, which only a Claim whose idle
// check found work begins.
func (s *store) claim(ctx context.Context, q *Queue, owner string, lease time.Duration, max int, share sharing) ([]Claim, error) {
	var cs []Claim
	body := func(ctx context.Context, tx execer) error {
		var err error
		cs, err = q.claimTx(ctx, tx, owner, lease, max)
		return err
	}
	var err error
	if share != shareNone {
		err = s.groupTx(ctx, q, q.claimIdle, body)
	} else {
		err = s.writeTx(ctx, q.claimIdle, body)
	}
	if errors.Is(err, errIdle) {
		// Not cs: a try that claimed and was then rolled back may have
		// left claims there before the retry found nothing to do.
		return nil, nil
	}
	if errors.Is(err, errCommitUnknown) {
		s.releaseUnknown(ctx, q, cs)
	}
	return cs, err
}

// releaseUnknown releases claims whose transaction's COMMIT failed with an
// outcome the file could not tell: their caller gets an error, not the
// claims, so claims that did commit must not stay leased until their lease
// ends. The fence makes it safe either way: a claim that did not commit
// holds no lease, and its Release changes nothing. It is done on a context
// that the caller's cannot cut short, bounded by commitCheckWait; if it
// fails too, the leases end by themselves.
func (s *store) releaseUnknown(ctx context.Context, q *Queue, cs []Claim) {
	if len(cs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitCheckWait)
	defer cancel()
	fs := make([]fenced, len(cs))
	for i, c := range cs {
		fs[i] = releaseFenced(c, 0, "released: the claim's commit failed, and whether it took effect was unknown")
	}
	if _, err := s.settle(ctx, q, fs, shareNone); err == nil {
		s.wakers().signal(q.name)
	}
}

// claimableSQL says whether a pending or leased row is claimable at ?2:
// due (due_at <= now), or pending without a run_at after now. The second
// half matters only after the clock stepped back past the instant a job
// was enqueued or requeued: a job claimable at once (no run_at, or one
// already passed) stays claimable, as rules 1 and 15 in docs/rules.md
// say, instead of waiting for the clock to come back. Where the index at
// hand does not hold run_at, the row is read only when due_at alone says no.
const claimableSQL = `(due_at <= ?2 OR status = 'pending' AND coalesce(run_at, ?2) <= ?2)`

// idleSQL tells whether a Claim has anything to do: a job in
// leaseq_jobs_ready that is claimable, or a delayed job or lease in
// leaseq_jobs_waiting whose time has come. Every job the quarantine sweep
// may take is one of those too (a lease ends by its deadline at the latest,
// and a pending job is due before its deadline), so "no" means nothing is
// claimable and nothing is due for quarantine.
const idleSQL = `
SELECT EXISTS (SELECT 1 FROM leaseq_jobs WHERE queue = ?1 AND ready = 1 AND ` + claimableSQL + `)
    OR EXISTS (SELECT 1 FROM leaseq_jobs
               WHERE queue = ?1 AND ready = 0 AND status IN ('pending', 'leased') AND due_at <= ?2)`

// claimIdle reports, from a read, whether a Claim of the queue would find
// nothing to do. The clock is read after the connection is in hand, as in a
// transaction; the read's own lock makes its view consistent.
func (q *Queue) claimIdle(ctx context.Context, db execer) (bool, error) {
	var busy bool
	err := db.QueryRowContext(ctx, idleSQL, q.name, q.now()).Scan(&busy)
	return !busy, err
}

// quarantineSQL moves claimable jobs that could never be finished out of the
// way before a token is issued (rule 6 in docs/rules.md). Both
// statements are range scans of partial indexes that hold only rows they may
// take: leases that ended with their attempts used up or whose deadline
// passed (a prefix of leaseq_jobs_doomed, whose key expression the first
// WHERE repeats word for word), and pending jobs whose deadline passed (a
// prefix of leaseq_jobs_pending_deadline). A leased job whose deadline passed
// always has an expired lease, since no lease outlives its deadline, which is
// why the first statement's condition equals "lease ended, and attempts used
// up or deadline passed". They are separate statements so that a
// transaction prepares each once and runs it for every claim in a group.
var quarantineSQL = [...]string{`
UPDATE leaseq_jobs
SET status = 'quarantined', ready = 0, updated_at = ?1,
    reason = CASE WHEN deadline IS NOT NULL AND deadline <= ?1
        THEN 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
        ELSE 'max attempts reached: ' || attempts || ' of ' || max_attempts || ', last lease ended at ' || lease_until || ' (unix ms)'
    END
WHERE queue = ?2 AND status = 'leased' AND (attempts >= max_attempts OR deadline IS NOT NULL)
  AND (CASE WHEN attempts >= max_attempts THEN lease_until ELSE deadline END) <= ?1`, `
UPDATE leaseq_jobs
SET status = 'quarantined', ready = 0, updated_at = ?1,
    reason = 'deadline passed at ' || deadline || ' (unix ms), ' || attempts || ' of ' || max_attempts || ' attempts used'
WHERE queue = ?2 AND status = 'pending' AND deadline IS NOT NULL AND deadline <= ?1`}

// promoteSQL moves the delayed jobs and leases whose time has come into
// leaseq_jobs_ready: the due prefix of leaseq_jobs_waiting, so its cost is
// the number of jobs that just became claimable.
const promoteSQL = `
UPDATE leaseq_jobs SET ready = 1
WHERE queue = ?2 AND ready = 0 AND status IN ('pending', 'leased') AND due_at <= ?1`

// claimSweeps run, in this order, before every claim: a job due for
// quarantine must never be promoted, let alone claimed.
var claimSweeps = []string{quarantineSQL[0], quarantineSQL[1], promoteSQL}

// sweptAt reports whether the transaction tx already ran the claim sweeps
// of queue at the instant now, and notes that it is about to if not. A
// second run at the same instant in the same transaction would find
// nothing: no call writes a row the sweeps could take at its own instant —
// a claim or an extension leaves a lease that ends after now, every pending
// job it leaves has its deadline after now, and a job due at once goes
// straight into leaseq_jobs_ready. So in a shared transaction of many
// claims (group commit) the sweeps run once per millisecond, not once per
// claim. Outside a writeConn it always sweeps.
func sweptAt(tx execer, queue string, now int64) bool {
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

// claimSQL leases up to ?4 claimable jobs in one statement: the head of
// leaseq_jobs_ready, in its order (priority, then due time, then enqueue
// order). Only a clock set back can leave a job in that index that is not
// claimable now; claimableSQL skips it.
const claimSQL = `
UPDATE leaseq_jobs
SET status = 'leased', ready = 0, owner = ?1, token = token + 1, attempts = attempts + 1,
    lease_until = CASE WHEN deadline IS NOT NULL AND deadline < ?3 THEN deadline ELSE ?3 END,
    due_at = CASE WHEN deadline IS NOT NULL AND deadline < ?3 THEN deadline ELSE ?3 END,
    updated_at = ?2
WHERE seq IN (SELECT seq FROM leaseq_jobs WHERE queue = ?5 AND ready = 1 AND ` + claimableSQL + `
              ORDER BY priority DESC, due_at, seq LIMIT ?4)
RETURNING seq, id, qty, payload, token, attempts, lease_until, deadline, priority`

// claimTx is the body of a claim transaction: quarantine, promote, lease.
// The clock is read here, after the lock is held, so a claim that waited for
// the lock does not start its lease in the past.
func (q *Queue) claimTx(ctx context.Context, tx execer, owner string, lease time.Duration, max int) ([]Claim, error) {
	now := q.now()
	if !sweptAt(tx, q.name, now) {
		for _, stmt := range claimSweeps {
			if _, err := tx.ExecContext(ctx, stmt, now, q.name); err != nil {
				return nil, err
			}
		}
	}
	rows, err := tx.QueryContext(ctx, claimSQL, owner, now, now+lease.Milliseconds(), max, q.name)
	if err != nil {
		return nil, err
	}
	return scanClaims(rows, owner)
}

// scanClaims reads the rows of a claim statement (seq, id, qty, payload,
// token, attempts, lease_until, deadline, priority) as claims of owner,
// highest priority first, then in enqueue order.
func scanClaims(rows *sql.Rows, owner string) ([]Claim, error) {
	defer rows.Close()
	var got []seqClaim
	for rows.Next() {
		c := seqClaim{Claim: Claim{Owner: owner}}
		var leaseUntil int64
		var deadline sql.NullInt64
		if err := rows.Scan(&c.seq, &c.ID, &c.Qty, &c.Payload, &c.Token, &c.Attempt, &leaseUntil, &deadline, &c.Priority); err != nil {
			return nil, err
		}
		got = append(got, c.read(leaseUntil, deadline))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return claimOrder(got), nil
}

// seqClaim is a claim as a claim statement returns it, with the job's
// enqueue order.
type seqClaim struct {
	seq int64
	Claim
}

// read completes c from the stored lease end and deadline.
func (c seqClaim) read(leaseUntil int64, deadline sql.NullInt64) seqClaim {
	c.LeaseUntil, c.Deadline = fromMillis(leaseUntil), nullTime(deadline)
	if len(c.Payload) == 0 {
		c.Payload = nil
	}
	return c
}

// claimOrder returns the claims highest priority first, then in enqueue
// order: RETURNING gives rows in no promised order.
func claimOrder(got []seqClaim) []Claim {
	slices.SortFunc(got, func(a, b seqClaim) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.seq, b.seq))
	})
	cs := make([]Claim, len(got))
	for i, c := range got {
		cs[i] = c.Claim
	}
	return cs
}
