package leaseq

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// Enqueue adds a job as pending, claimable from j.RunAt (at once if zero).
// Invalid input is an error wrapping [ErrInvalid] that names the field; an
// ID already in the queue, in whatever state, is [ErrDuplicate]. Either way
// nothing is written. An ID that was purged may be enqueued again; its
// tokens continue where the purged job's ended (see [Queue.Purge]).
func (q *Queue) Enqueue(ctx context.Context, j Job) error {
	if err := q.callable(ctx); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	now := q.now()
	if err := problem(q.jobProblem(j, now)); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	p := engine.JobInsertManyParams{Queue: q.ref(), Jobs: []engine.JobRow{q.newRow(j, now)}, One: true}
	if _, err := q.e.JobInsertMany(ctx, p); err != nil {
		return opError("enqueue", job(j.ID), err)
	}
	q.e.Wakers().Signal(q.name)
	return nil
}

// EnqueueBatch adds jobs as [Queue.Enqueue] would, all or nothing, in one
// transaction. An invalid job is an error wrapping [ErrInvalid] that names
// its index and field; an ID that appears twice in jobs, or is already in
// the queue in whatever state, is [ErrDuplicate] naming it. On any error
// nothing is written. An empty batch does nothing.
func (q *Queue) EnqueueBatch(ctx context.Context, jobs []Job) error {
	const op = "enqueue batch"
	if err := q.callable(ctx); err != nil {
		return opError(op, "", err)
	}
	now := q.now()
	if err := q.batchProblem(jobs, now); err != nil {
		return opError(op, "", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	bad, err := q.e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q.ref(), Jobs: q.newRows(jobs, now)})
	if err != nil {
		return insertError(op, jobs, bad, err)
	}
	q.e.Wakers().Signal(q.name)
	return nil
}

// insertError is the error of a batch insert that failed: it names the job
// bad whose INSERT failed, if one did.
func insertError(op string, jobs []Job, bad int, err error) error {
	if bad >= 0 {
		return opError(op, entry("jobs", bad, jobs[bad].ID), err)
	}
	return opError(op, "", err)
}

// EnqueueTx adds jobs inside the caller's own transaction tx, so that they
// are enqueued exactly if the caller's other writes commit: an order row
// and the job that ships it, say. tx must belong to the queue's database
// ([Queue.DB]). The jobs become visible, and claimable, when the caller
// commits; the caller commits or rolls back, never the queue. This
// process's idle workers look again over the next moments, so jobs
// committed within 100 ms start at once (rule 45). [Queue.InTx] does the
// same in the queue's own transaction, which on SQLite costs far less than
// tx (see below). Their enqueue
// time, and the check that a deadline is still ahead, are the queue's clock
// at the call.
//
// A transaction on another database, of either engine, is refused with
// [ErrInvalid], and nothing is written in either, at the cost of one read
// on tx: on SQLite, one whose main database is another file (the queue's
// file reached by another path is the queue's); on PostgreSQL, one on
// another server (told by its start time) or database, or whose search_path
// finds another leaseq_jobs table. What it cannot tell, on SQLite, is a
// TEMP table named leaseq_jobs on tx's connection, which would take the
// jobs instead of the file's.
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
	if err := q.callable(ctx); err != nil {
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
	bad, err := q.e.JobInsertTx(ctx, tx, engine.JobInsertTxParams{Queue: q.ref(), Jobs: q.newRows(jobs, now)})
	if err != nil {
		return insertError(op, jobs, bad, err)
	}
	q.e.Wakers().SignalSoon(q.name) // the caller commits soon: look then (rule 45)
	return nil
}

// newRow is the row of job j enqueued at now: its limits with the queue's
// defaults filled in, and when it is due.
func (q *Queue) newRow(j Job, now int64) engine.JobRow {
	r := engine.JobRow{ID: j.ID, Qty: j.Qty, Payload: j.Payload, MaxAttempts: cmp.Or(j.MaxAttempts, q.maxAttempts),
		Deadline: nullMillis(j.Deadline), RunAt: nullMillis(j.RunAt), Priority: j.Priority, Due: now, Created: now,
		Kind: j.Kind}
	if r.Payload == nil {
		r.Payload = []byte{} // a nil []byte binds as NULL
	}
	if r.RunAt.Valid && r.RunAt.Int64 > now {
		r.Due = r.RunAt.Int64
	}
	return r
}

// newRows is newRow of each job.
func (q *Queue) newRows(jobs []Job, now int64) []engine.JobRow {
	rows := make([]engine.JobRow, len(jobs))
	for i, j := range jobs {
		rows[i] = q.newRow(j, now)
	}
	return rows
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
