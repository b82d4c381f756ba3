package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite"
)

// failedJob is one more than the index of the job whose INSERT failed, so
// that its zero value, which a try that never ran leaves, means none.
type failedJob int

// index is the failed job's index, or -1.
func (f failedJob) index() int { return int(f) - 1 }

// JobInsertMany writes p.Jobs in one transaction, all or nothing: a single
// Enqueue's (p.One) may be shared with other calls (group commit). bad is
// the index of the job whose INSERT failed, else -1.
func (e *Engine) JobInsertMany(ctx context.Context, p engine.JobInsertManyParams) (int, error) {
	body := func(ctx context.Context, tx engine.Execer) (failedJob, error) {
		for i, j := range p.Jobs {
			if err := insert(ctx, tx, p.Queue.Name, j); err != nil {
				return failedJob(i + 1), err
			}
		}
		return 0, nil
	}
	var f failedJob
	var err error
	if p.One && !p.Queue.NoGroup {
		f, err = groupTx(ctx, e, p.Queue, nil, body)
	} else {
		f, err = writeTx(ctx, e, write[failedJob]{run: body})
	}
	if err == nil {
		return -1, nil
	}
	return f.index(), err
}

// JobInsertTx writes p.Jobs on tx, the caller's transaction (EnqueueTx),
// inside a savepoint, after checking that tx is on the engine's database
// (DatabaseForeign, inside the savepoint too): on an error, a foreign tx
// included (engine.ErrInvalid saying why), none of the jobs is written and
// tx stays usable. bad is the index of the job whose INSERT failed, else -1.
func (e *Engine) JobInsertTx(ctx context.Context, tx *sql.Tx, p engine.JobInsertTxParams) (int, error) {
	return engine.InSavepoint(ctx, tx, savepointSQL, func(ctx context.Context, stx engine.Execer) (int, error) {
		why, err := e.DatabaseForeign(ctx, tx)
		if err == nil && why != "" {
			err = engine.Invalid("%s", why)
		}
		if err != nil {
			return -1, err
		}
		for i, j := range p.Jobs {
			if err := insert(ctx, stx, p.Queue.Name, j); err != nil {
				return i, err
			}
		}
		return -1, nil
	})
}

// savepointSQL is EnqueueTx's savepoint in the caller's transaction.
var savepointSQL = engine.SavepointSQL{Begin: stmt("savepoint"), Release: stmt("savepoint_release"),
	Rollback: stmt("savepoint_rollback")}

// insert writes one job of queue. A taken ID is engine.ErrDuplicate; the
// failed INSERT changed nothing.
func insert(ctx context.Context, tx engine.Execer, queue string, j engine.JobRow) error {
	_, err := tx.ExecContext(ctx, stmt("insert"), queue, j.ID, j.Qty, j.Payload, j.MaxAttempts,
		j.Deadline, j.RunAt, j.Priority, j.Due, j.Created, j.Kind)
	return interpretError(err)
}

// identity is the database's main file, read once (DatabaseIdentify) and
// kept for EnqueueTx's check of the caller's transaction.
type identity struct {
	mu   sync.Mutex
	file string
}

// kept returns the file read last.
func (k *identity) kept() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.file
}

// mainFile is the file of db's main database.
func mainFile(ctx context.Context, db engine.Execer) (string, error) {
	var file string
	err := db.QueryRowContext(ctx, stmt("main_file")).Scan(&file)
	return file, err
}

// DatabaseIdentify reads and keeps the database's main file, as SQLite
// names it, for DatabaseForeign.
func (e *Engine) DatabaseIdentify(ctx context.Context) error {
	file, err := retryBusyOnce(ctx, func() (string, error) { return mainFile(ctx, e.dbh) })
	if err != nil {
		return err
	}
	e.ident.mu.Lock()
	defer e.ident.mu.Unlock()
	e.ident.file = file
	return nil
}

// DatabaseForeign compares tx's main file with the queue's: as SQLite names
// them (absolute, symbolic links resolved), and if the names differ, as
// files, so that a hard link or another mount of the same file is the same
// database. A tx that is not SQLite's is foreign too.
func (e *Engine) DatabaseForeign(ctx context.Context, tx *sql.Tx) (string, error) {
	file, err := e.txMainFile(ctx, tx)
	var se *sqlite.Error
	switch {
	case err != nil && !errors.As(err, &se) && !errors.Is(err, sql.ErrTxDone) && ctx.Err() == nil:
		return fmt.Sprintf("tx is not on the queue's database %q: it is not a SQLite transaction (%v)", e.ident.kept(), err), nil
	case err != nil:
		return "", err
	}
	own := e.ident.kept()
	if file == own || sameFile(file, own) {
		return "", nil
	}
	if file == "" {
		file = "an in-memory or temporary database"
	}
	return fmt.Sprintf("tx is a transaction on %q, not on the queue's database %q", file, own), nil
}

// txMainFile is mainFile on tx. On a tx of the queue's own *sql.DB, the
// usual case, the statement prepared on the *sql.DB runs, prepared once per
// connection (parsing it would cost more than running it); on a tx of
// another *sql.DB, which database/sql refuses it for, the query runs
// unprepared.
func (e *Engine) txMainFile(ctx context.Context, tx *sql.Tx) (string, error) {
	if st, err := e.readStmt(ctx, stmt("main_file")); err == nil {
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
