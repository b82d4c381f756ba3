package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite"
)

// JobInsertMany writes one job in a statement of its own, or a batch in one
// statement (insert_many.sql), and answers with what the statement did
// (answered): nil only when its jobs are written, ctx's error only when
// none is. A batch that ran into a taken ID names the first such job.
func (e *Engine) JobInsertMany(ctx context.Context, p engine.JobInsertManyParams) (int, error) {
	args := jobArrays(p.Queue, p.Jobs)
	mark := rand.Int64()
	ins := func(ctx context.Context, db engine.Execer) (struct{}, error) {
		if len(p.Jobs) == 1 {
			return struct{}{}, insert(ctx, db, p.Queue, p.Jobs[0], mark)
		}
		_, err := db.ExecContext(ctx, stmt("insert_many"), append(args, mark)...)
		return struct{}{}, err
	}
	_, err := answered(ctx, e, ins, func(ctx context.Context) (struct{}, bool, error) {
		ok, err := e.written(ctx, args, mark)
		return struct{}{}, ok, err
	})
	switch {
	case !errors.Is(err, engine.ErrDuplicate):
		return -1, err
	case len(p.Jobs) == 1: // the one job's ID is taken
		return 0, err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerWait)
	defer cancel()
	return e.firstTaken(fctx, p.Queue.Name, args[2].([]string)), engine.ErrDuplicate
}

// instant is the instant argument of a statement judged at now: now, or
// NULL when the statement reads the server's clock itself.
func instant(q engine.Queue, now int64) any {
	if q.Clock.Server {
		return nil
	}
	return now
}

// insert writes one job on tx with the mark of insert.sql (nil: none). A
// taken ID is engine.ErrDuplicate, with tx still usable.
func insert(ctx context.Context, tx engine.Execer, q engine.Queue, j engine.JobRow, mark any) error {
	var seq int64
	err := tx.QueryRowContext(ctx, stmt("insert"), q.Name, j.ID, j.Qty, j.Payload, j.MaxAttempts,
		j.Deadline, j.RunAt, j.Priority, instant(q, j.Created), mark, j.Kind).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.ErrDuplicate
	}
	return interpretError(err)
}

// jobArrays are the arguments of insert_many.sql and insert_written.sql:
// the queue, the instant, and one array per column.
func jobArrays(q engine.Queue, jobs []engine.JobRow) []any {
	n := len(jobs)
	ids, qtys, payloads := make([]string, n), make([]int64, n), make([][]byte, n)
	maxAttempts, priorities, kinds := make([]int32, n), make([]int32, n), make([]string, n)
	deadlines, runAts := make([]*int64, n), make([]*int64, n)
	for i, j := range jobs {
		ids[i], qtys[i], payloads[i] = j.ID, int64(j.Qty), j.Payload
		maxAttempts[i], priorities[i], kinds[i] = int32(j.MaxAttempts), int32(j.Priority), j.Kind
		if j.Deadline.Valid {
			deadlines[i] = &j.Deadline.Int64
		}
		if j.RunAt.Valid {
			runAts[i] = &j.RunAt.Int64
		}
	}
	return []any{q.Name, instant(q, jobs[0].Created), ids, qtys, payloads, maxAttempts, deadlines, runAts, priorities, kinds}
}

// written reports whether every job of args (jobArrays) is in the table as
// a call with them would have written it: the read that tells an enqueue
// cut short whether it was written. It first waits for the lock the
// statement marked itself with (insert.sql), so that it reads once the
// statement has ended, committed or not: a statement still running,
// waiting for a lock say, could otherwise commit after the read found
// nothing. It reads in a statement of its own, whose snapshot is taken
// after that wait (READ COMMITTED). A batch is one statement, so all or
// none of its jobs are its own. On the server's clock the instant is not
// known here, so a job with the same ID and fields enqueued by another
// call counts as this one's.
func (e *Engine) written(ctx context.Context, args []any, mark int64) (bool, error) {
	tx, err := e.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true})
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, stmt("mark_wait"), mark); err != nil {
		return false, err
	}
	var n int
	err = tx.QueryRowContext(ctx, stmt("insert_written"), args...).Scan(&n)
	return n == len(args[2].([]string)), err
}

// firstTaken is the index of the first of ids that a job of queue has, or
// -1: which ID a failed batch insert ran into.
func (e *Engine) firstTaken(ctx context.Context, queue string, ids []string) int {
	rows, err := e.db.QueryContext(ctx, stmt("insert_taken"), queue, ids)
	if err != nil {
		return -1
	}
	defer rows.Close()
	taken := map[string]bool{}
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			taken[id] = true
		}
	}
	for i, id := range ids {
		if taken[id] {
			return i
		}
	}
	return -1
}

// JobInsertTx writes jobs inside tx, the caller's transaction (EnqueueTx),
// under a savepoint: first DatabaseForeign's check, inside it since on
// PostgreSQL a failed read would abort tx (a foreign tx is
// engine.ErrInvalid saying why), then each job. On an error what the call
// wrote is rolled back to the savepoint, so tx stays usable; bad is the
// job whose insert failed, else -1.
func (e *Engine) JobInsertTx(ctx context.Context, tx *sql.Tx, p engine.JobInsertTxParams) (int, error) {
	return engine.InSavepoint(ctx, tx, savepointSQL, func(ctx context.Context, stx engine.Execer) (int, error) {
		// Inside the savepoint: a failed read would abort tx.
		why, err := e.DatabaseForeign(ctx, tx)
		if err == nil && why != "" {
			err = engine.Invalid("%s", why)
		}
		if err != nil {
			return -1, err
		}
		for i, j := range p.Jobs {
			if err := insert(ctx, stx, p.Queue, j, nil); err != nil {
				return i, err
			}
		}
		// Rule 56: NOTIFY in tx is delivered when, and only if, the
		// caller commits it, which is when the jobs can be claimed.
		_, err = stx.ExecContext(ctx, stmt("notify"), engine.NotifyChannel, engine.NotifyWake+p.Queue.Name)
		return -1, err
	})
}

// savepointSQL is EnqueueTx's savepoint in the caller's transaction.
var savepointSQL = engine.SavepointSQL{Begin: stmt("savepoint"), Release: stmt("savepoint_release"),
	Rollback: stmt("savepoint_rollback")}

// identity is what tells the engine's database apart from others, read once
// (DatabaseIdentify) and kept for EnqueueTx's check of the caller's
// transaction.
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

// readIdentity is the identity of db's database (identity.sql).
func readIdentity(ctx context.Context, db engine.Execer) (dbIdentity, error) {
	var v dbIdentity
	err := db.QueryRowContext(ctx, stmt("identity")).Scan(&v.id, &v.name)
	return v, interpretError(err)
}

// DatabaseIdentify reads the database's identity and keeps it.
func (e *Engine) DatabaseIdentify(ctx context.Context) error {
	_, err := e.ident.refresh(func() (dbIdentity, error) { return readIdentity(ctx, e.db) })
	return err
}

// DatabaseForeign compares tx's database with the engine's. On a
// difference it reads the engine's again first: after a restart of the
// server, or a database restored or recreated under its name since New, it
// is still the queue's. A SQLite transaction fails the read with SQLite's
// error, which says what it is.
func (e *Engine) DatabaseForeign(ctx context.Context, tx *sql.Tx) (string, error) {
	theirs, err := readIdentity(ctx, tx)
	var se *sqlite.Error
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("tx is not on the queue's database %q: it is a SQLite transaction", e.ident.kept().name), nil
	case err != nil:
		return "", err
	}
	own := e.ident.kept()
	if own.id != theirs.id {
		if own, err = e.ident.refresh(func() (dbIdentity, error) { return readIdentity(ctx, e.db) }); err != nil {
			return "", err
		}
	}
	if own.id == theirs.id {
		return "", nil
	}
	return fmt.Sprintf("tx is a transaction on database %q (server start/database/leaseq_jobs %s), not on the queue's %q (%s)",
		theirs.name, theirs.id, own.name, own.id), nil
}
