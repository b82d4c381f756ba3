package leaseq

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"
)

// Enqueue adds a job as pending, claimable from j.RunAt (at once if zero).
// Invalid input is an error wrapping [ErrInvalid] that names the field; an
// ID already in the queue, in whatever state, is [ErrDuplicate]. Either way
// nothing is written. An ID that was purged may be enqueued again; its
// tokens continue where the purged job's ended (see [Queue.Purge]).
func (q *Queue) Enqueue(ctx context.Context, j Job) error {
	if err := q.usable(); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	now := q.now()
	if err := problem(q.jobProblem(j, now)); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	if _, err := q.e.enqueue(ctx, q, []Job{j}, now, true); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	q.e.wakers().signal(q.name)
	return nil
}

// EnqueueBatch adds jobs as [Queue.Enqueue] would, all or nothing, in one
// transaction. An invalid job is an error wrapping [ErrInvalid] that names
// its index and field; an ID that appears twice in jobs, or is already in
// the queue in whatever state, is [ErrDuplicate] naming it. On any error
// nothing is written. An empty batch does nothing.
func (q *Queue) EnqueueBatch(ctx context.Context, jobs []Job) error {
	const op = "enqueue batch"
	if err := q.usable(); err != nil {
		return opError(op, "", err)
	}
	now := q.now()
	if err := q.batchProblem(jobs, now); err != nil {
		return opError(op, "", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	bad, err := q.e.enqueue(ctx, q, jobs, now, false)
	switch {
	case err == nil:
		q.e.wakers().signal(q.name)
		return nil
	case bad >= 0:
		return opError(op, entry("jobs", bad, jobs[bad].ID), err)
	default:
		return opError(op, "", err)
	}
}

// EnqueueTx adds jobs inside the caller's own transaction tx, so that they
// are enqueued exactly if the caller's other writes commit: an order row
// and the job that ships it, say. tx must belong to the queue's database
// ([Queue.DB]). The jobs become visible, and claimable, when the caller
// commits; the caller commits or rolls back, never the queue. Their enqueue
// time, and the check that a deadline is still ahead, are the queue's clock
// at the call.
//
// It is all or nothing within tx: an invalid job is [ErrInvalid], an ID
// repeated in jobs or already in the queue is [ErrDuplicate], naming
// jobs[i], and then none of the call's jobs are written even if the caller
// commits. The call runs inside a savepoint, so tx stays usable after such
// an error.
//
// On SQLite, begin tx as an IMMEDIATE transaction ([Open]'s DSN makes
// db.BeginTx do so): a deferred transaction that read before its first
// write gets SQLITE_BUSY at once, whatever the busy timeout, if another
// connection wrote meanwhile, and then the caller must roll back and try
// again. While tx is open the file's write lock is the caller's, so the
// queue's own writers, on every connection, wait for it: keep tx short, and
// do not call the queue's writing methods from the goroutine that holds tx
// open — they would wait for a commit that cannot come (with a Background
// context, forever). A context cancelled while a statement runs makes
// SQLite roll back the whole of tx. On PostgreSQL, in a REPEATABLE READ or
// SERIALIZABLE tx, enqueueing an ID that a purge deleted after tx's
// snapshot was taken fails as a serialization failure (SQLSTATE 40001): the
// snapshot cannot see the tokens the purge remembered, so run tx again.
func (q *Queue) EnqueueTx(ctx context.Context, tx *sql.Tx, jobs ...Job) error {
	const op = "enqueue tx"
	if err := q.usable(); err != nil {
		return opError(op, "", err)
	}
	if tx == nil {
		return opError(op, "", invalid("tx is nil"))
	}
	now := q.now()
	if err := q.batchProblem(jobs, now); err != nil {
		return opError(op, "", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT leaseq_enqueue"); err != nil {
		return opError(op, "", err)
	}
	for i, j := range jobs {
		if err := q.e.insert(ctx, tx, q, j, now); err != nil {
			_, rbErr := tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT leaseq_enqueue")
			_, relErr := tx.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT leaseq_enqueue")
			return opError(op, entry("jobs", i, j.ID), errors.Join(err, rbErr, relErr))
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT leaseq_enqueue"); err != nil {
		return opError(op, "", err)
	}
	return nil
}

// newRow is what a job's row holds beyond the job's own fields, enqueued at
// now: its limits with the queue's defaults filled in, and when it is due.
type jobRow struct {
	maxAttempts int
	payload     []byte
	runAt       sql.NullInt64
	due         int64
}

func (q *Queue) newRow(j Job, now int64) jobRow {
	r := jobRow{maxAttempts: cmp.Or(j.MaxAttempts, q.maxAttempts), payload: j.Payload, runAt: nullMillis(j.RunAt), due: now}
	if r.payload == nil {
		r.payload = []byte{} // a nil []byte binds as NULL
	}
	if r.runAt.Valid && r.runAt.Int64 > now {
		r.due = r.runAt.Int64
	}
	return r
}

// batchProblem validates the jobs of one batch call at time now: each job,
// and no ID twice.
func (q *Queue) batchProblem(jobs []Job, now int64) error {
	first := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if why := q.jobProblem(j, now); why != "" {
			return fmt.Errorf("%s: %w", entry("jobs", i, j.ID), problem(why))
		}
		if k, seen := first[j.ID]; seen {
			return fmt.Errorf("%s has the ID of jobs[%d]: %w", entry("jobs", i, j.ID), k, ErrDuplicate)
		}
		first[j.ID] = i
	}
	return nil
}

// enqueue writes jobs in one transaction: a single Enqueue's may be shared
// with other calls (group commit).
func (s *store) enqueue(ctx context.Context, q *Queue, jobs []Job, now int64, group bool) (int, error) {
	bad := -1 // the job whose INSERT failed, if one did
	insertAll := func(ctx context.Context, tx execer) error {
		bad = -1
		for i, j := range jobs {
			if err := s.insert(ctx, tx, q, j, now); err != nil {
				bad = i
				return err
			}
		}
		return nil
	}
	if group {
		return bad, s.groupTx(ctx, q, nil, insertAll)
	}
	return bad, s.writeTx(ctx, nil, insertAll)
}

// insertSQL writes one job. A job whose ID was purged starts from the
// purged job's last token (leaseq_purged); any other from 0. A job due at
// once goes straight into leaseq_jobs_ready.
const insertSQL = `
INSERT INTO leaseq_jobs (queue, id, qty, payload, status, max_attempts, deadline, run_at, priority,
    due_at, ready, token, created_at, updated_at)
VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, ?7, ?8, ?9, ?9 <= ?10,
    coalesce((SELECT token FROM leaseq_purged WHERE queue = ?1 AND id = ?2), 0), ?10, ?10)`

// insert writes one validated job at time now. A unique-constraint failure
// on (queue, id) becomes ErrDuplicate; the failed INSERT changed nothing.
func (s *store) insert(ctx context.Context, tx execer, q *Queue, j Job, now int64) error {
	r := q.newRow(j, now)
	_, err := tx.ExecContext(ctx, insertSQL, q.name, j.ID, j.Qty, r.payload, r.maxAttempts,
		nullMillis(j.Deadline), r.runAt, j.Priority, r.due, now)
	if isCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) || isCode(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
		return ErrDuplicate
	}
	return err
}
