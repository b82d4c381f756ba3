package leaseq

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
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
	if _, err := tx.ExecContext(ctx, "SAVEPOINT leaseq_enqueue"); err != nil {
		return opError(op, "", err)
	}
	// Inside the savepoint: on PostgreSQL a failed read would abort tx.
	why, err := q.e.foreign(ctx, tx)
	if err == nil && why != "" {
		err = invalid("%s", why)
	}
	if err != nil {
		return opError(op, "", undoEnqueueTx(ctx, tx, err))
	}
	for i, j := range jobs {
		if err := q.e.insert(ctx, tx, q, j, now); err != nil {
			return opError(op, entry("jobs", i, j.ID), undoEnqueueTx(ctx, tx, err))
		}
	}
	if _, err := tx.ExecContext(ctx, "RELEASE SAVEPOINT leaseq_enqueue"); err != nil {
		return opError(op, "", err)
	}
	return nil
}

// undoEnqueueTx takes back what EnqueueTx wrote in tx, so that tx stays
// usable, and returns cause with any error of doing so.
func undoEnqueueTx(ctx context.Context, tx *sql.Tx, cause error) error {
	_, rbErr := tx.ExecContext(context.WithoutCancel(ctx), "ROLLBACK TO SAVEPOINT leaseq_enqueue")
	_, relErr := tx.ExecContext(context.WithoutCancel(ctx), "RELEASE SAVEPOINT leaseq_enqueue")
	return errors.Join(cause, rbErr, relErr)
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

// identity is what tells a queue's database apart from others, read once
// (identify) and kept for EnqueueTx's check of the caller's transaction.
type identity struct {
	mu sync.Mutex
	v  dbIdentity
}

// dbIdentity is the identity read from a database: id to compare, name for
// messages.
type dbIdentity struct{ id, name string }

// kept returns the identity read last.
func (k *identity) kept() dbIdentity {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.v
}

// refresh reads the identity with read and keeps it.
func (k *identity) refresh(read func() (dbIdentity, error)) (dbIdentity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, err := read()
	if err == nil {
		k.v = v
	}
	return v, err
}

// mainFileSQL names the file of a SQLite connection's main database.
const mainFileSQL = "SELECT file FROM pragma_database_list WHERE name = 'main'"

// mainFile is the file of db's main database.
func mainFile(ctx context.Context, db execer) (string, error) {
	var file string
	err := db.QueryRowContext(ctx, mainFileSQL).Scan(&file)
	return file, err
}

func (s *store) identify(ctx context.Context) error {
	_, err := s.ident.refresh(func() (dbIdentity, error) {
		file, err := retryBusyOnce(ctx, func() (string, error) { return mainFile(ctx, s.dbh) })
		return dbIdentity{file, file}, err
	})
	return err
}

// foreign compares tx's main file with the queue's: as SQLite names them
// (absolute, symbolic links resolved), and if the names differ, as files,
// so that a hard link or another mount of the same file is the same
// database.
func (s *store) foreign(ctx context.Context, tx *sql.Tx) (string, error) {
	file, err := s.txMainFile(ctx, tx)
	var se *sqlite.Error
	switch {
	case err != nil && !errors.As(err, &se) && !errors.Is(err, sql.ErrTxDone) && ctx.Err() == nil:
		return fmt.Sprintf("tx is not on the queue's database %q: it is not a SQLite transaction (%v)", s.ident.kept().name, err), nil
	case err != nil:
		return "", err
	}
	own := s.ident.kept().id
	if file == own || sameFile(file, own) {
		return "", nil
	}
	if file == "" {
		file = "an in-memory or temporary database"
	}
	return fmt.Sprintf("tx is a transaction on %q, not on the queue's database %q", file, own), nil
}

// txMainFile is mainFile on tx. On a tx of the queue's own *sql.DB, the
// usual case, the statement prepared on the pool runs, prepared once per
// connection (parsing it would cost more than running it); on a tx of
// another *sql.DB, which database/sql refuses it for, the query runs
// unprepared.
func (s *store) txMainFile(ctx context.Context, tx *sql.Tx) (string, error) {
	if st, err := s.readStmt(ctx, mainFileSQL); err == nil {
		ts := tx.StmtContext(ctx, st)
		defer ts.Close()
		var file string
		if err := ts.QueryRowContext(ctx).Scan(&file); err == nil {
			return file, nil
		}
	}
	return mainFile(ctx, tx)
}

// sameFile reports whether paths a and b name one file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// pgIdentitySQL identifies a PostgreSQL database: its server's start time
// (as seconds, to the microsecond, whatever the session's time zone), which
// two servers share only if started in the same microsecond; the
// database's OID on that server; and the leaseq_jobs table the search_path
// finds (0 if none); and the database's name. Every role may read them.
// (The system identifier would add a read of the control file, about a
// third of the query's time on the server, to tell apart only copies of one
// server started in the same microsecond.)
const pgIdentitySQL = `SELECT concat_ws('/', extract(epoch FROM pg_postmaster_start_time()), d.oid,
    coalesce(to_regclass('leaseq_jobs')::oid, 0)), d.datname
FROM pg_database d WHERE d.datname = current_database()`

// pgIdentity is the identity of db's database.
func pgIdentity(ctx context.Context, db execer) (dbIdentity, error) {
	var v dbIdentity
	err := db.QueryRowContext(ctx, pgIdentitySQL).Scan(&v.id, &v.name)
	return v, pgError(err)
}

func (e *pgEngine) identify(ctx context.Context) error {
	_, err := e.ident.refresh(func() (dbIdentity, error) { return pgIdentity(ctx, e.dbh) })
	return err
}

// foreign compares tx's database with the queue's. On a difference it reads
// the queue's again first: after a restart of the server, or a database
// restored or recreated under its name since New, it is still the queue's.
func (e *pgEngine) foreign(ctx context.Context, tx *sql.Tx) (string, error) {
	theirs, err := pgIdentity(ctx, tx)
	var se *sqlite.Error
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("tx is not on the queue's database %q: it is a SQLite transaction", e.ident.kept().name), nil
	case err != nil:
		return "", err
	}
	own := e.ident.kept()
	if own.id != theirs.id {
		if own, err = e.ident.refresh(func() (dbIdentity, error) { return pgIdentity(ctx, e.dbh) }); err != nil {
			return "", err
		}
	}
	if own.id == theirs.id {
		return "", nil
	}
	return fmt.Sprintf("tx is a transaction on database %q (server start/database/leaseq_jobs %s), not on the queue's %q (%s)",
		theirs.name, theirs.id, own.name, own.id), nil
}
