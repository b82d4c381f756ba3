package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// TxRun runs p.Fn, and p.Finish around it, in the writer's turn (rule 43 in
// docs/rules.md): with group commit on, as one call of a shared
// transaction, inside a savepoint of its own; alone, in a transaction of
// its own. A transaction that fails as a whole (SQLITE_BUSY, at COMMIT
// most often) is run again, Fn with it. Fn gets ctx; its statements run on
// the transaction's context (see engine.Tx).
func (e *Engine) TxRun(ctx context.Context, p engine.TxRunParams) (engine.TxOutcome, error) {
	body := func(run context.Context, tx engine.Execer) (engine.TxOutcome, error) {
		return e.fnTx(ctx, run, tx, p)
	}
	if grouped(p.Queue, engine.ShareCalls) {
		out, waited, err := groupTxWaited(ctx, e, p.Queue, nil, body)
		return saysWaited(ctx, out, waited), err
	}
	var waited error
	out, err := writeTx(ctx, e, write[engine.TxOutcome]{run: body,
		busy: func(_ engine.TxOutcome, err error) bool { waited = err; return true }})
	return saysWaited(ctx, out, waited), err
}

// saysWaited is out, whose try ended as its context did after an earlier
// try met SQLITE_BUSY, waited: the context ended while the call waited for
// the write lock, and its error says so (rule 47), as writeTx's does when
// the wait itself is cut short. A try that ran after the lock was refused
// and found the context ended (after Fn, or in a statement of Fn's, which
// then returned the context's error) rolls its savepoint back and commits
// nothing of it; its outcome, not a transaction error, carries the
// context's.
func saysWaited(ctx context.Context, out engine.TxOutcome, waited error) engine.TxOutcome {
	cause := ctx.Err()
	if waited == nil || cause == nil {
		return out
	}
	if errors.Is(out.Err, cause) || errors.Is(out.FnErr, cause) {
		out.Err, out.FnErr = lockWaitError(cause, waited), nil
	}
	return out
}

// fnTx is one try of TxRun in tx, whose statements run on run: the
// savepoint, the fence checked (FinishTx), Fn, the Finish, and a look at
// ctx. Fn's error, a refused fence and a ctx that ended roll back to the
// savepoint and are the call's outcome, not the transaction's error, so
// that the other calls of a shared transaction commit; an error of the
// savepoint's own statements, or a busy Fn, fails the transaction.
func (e *Engine) fnTx(ctx, run context.Context, tx engine.Execer, p engine.TxRunParams) (engine.TxOutcome, error) {
	if _, err := tx.ExecContext(run, stmt("tx_savepoint")); err != nil {
		return engine.TxOutcome{}, err
	}
	if p.Finish != nil {
		ok, err := fenceHolds(run, tx, p.Queue, *p.Finish)
		if err != nil || !ok {
			return undoFn(run, tx, engine.TxOutcome{Refused: true}, err)
		}
	}
	sctx, stop := callerBound(run, ctx)
	t := engine.NewTx(sctx, tx, e.dbh, insertSaved(p.Queue.Name), nil)
	err := p.Fn(ctx, t)
	_, closeErr := t.End()
	stop()
	switch {
	case isBusy(err):
		return engine.TxOutcome{}, err // the whole transaction is tried again
	case err != nil:
		return undoFn(run, tx, engine.TxOutcome{FnErr: err}, closeErr)
	case closeErr != nil:
		return engine.TxOutcome{}, closeErr
	}
	if p.Finish != nil {
		r, err := fencedTx(run, tx, p.Queue.Name, *p.Finish, p.Queue.Clock.Now())
		if err != nil || !r.OK {
			return undoFn(run, tx, engine.TxOutcome{Refused: true}, err)
		}
	}
	if err := ctx.Err(); err != nil { // its caller left: nothing of it may commit
		return undoFn(run, tx, engine.TxOutcome{Err: err}, nil)
	}
	_, err = tx.ExecContext(run, stmt("tx_savepoint_release"))
	return engine.TxOutcome{}, err
}

// fenceHolds reports whether f's fence matches its row now (fence_check).
func fenceHolds(ctx context.Context, tx engine.Execer, q engine.Queue, f engine.Fenced) (bool, error) {
	var until int64
	err := tx.QueryRowContext(ctx, stmt("fence_check"), q.Name, f.ID, f.Owner, f.Token, q.Clock.Now()).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// undoFn rolls back to Fn's savepoint and answers out, unless cause (a
// statement's error, which may have ended the transaction) or the rollback
// fails: then the transaction fails. A rollback fails most often because an
// error of Fn's (SQLITE_FULL, I/O, an interrupt) made SQLite roll back the
// whole transaction, savepoint and all: that error, not the missing
// savepoint, is then the transaction's.
func undoFn(run context.Context, tx engine.Execer, out engine.TxOutcome, cause error) (engine.TxOutcome, error) {
	if cause != nil {
		return engine.TxOutcome{}, cause
	}
	if _, err := tx.ExecContext(run, stmt("tx_savepoint_rollback")); err != nil {
		return engine.TxOutcome{}, outcomeErr(out, err)
	}
	if _, err := tx.ExecContext(run, stmt("tx_savepoint_release")); err != nil {
		return engine.TxOutcome{}, outcomeErr(out, err)
	}
	return out, nil
}

// outcomeErr is the error that ended out's call, or rbErr (that of the
// savepoint's rollback) when out carries none.
func outcomeErr(out engine.TxOutcome, rbErr error) error {
	switch {
	case out.FnErr != nil:
		return out.FnErr
	case out.Err != nil:
		return out.Err
	}
	return rbErr
}

// insertSaved is Tx.Insert for queue: the jobs under a savepoint (that of
// EnqueueTx), all or none, with the transaction going on after an error.
func insertSaved(queue string) func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
	return func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
		if _, err := tx.ExecContext(ctx, stmt("savepoint")); err != nil {
			return -1, err
		}
		for i, j := range jobs {
			if err := insert(ctx, tx, queue, j); err != nil {
				// A rollback that fails after err (SQLITE_FULL, I/O) finds
				// the transaction rolled back whole by SQLite: err is the
				// answer, and the transaction fails with it.
				if _, rbErr := tx.ExecContext(ctx, stmt("savepoint_rollback")); rbErr != nil {
					return -1, err
				}
				_, relErr := tx.ExecContext(ctx, stmt("savepoint_release"))
				return i, errors.Join(err, relErr)
			}
		}
		_, err := tx.ExecContext(ctx, stmt("savepoint_release"))
		return -1, err
	}
}

// callerBound is the context fn's statements run on: run, which the shared
// transaction's statements run on, ended too when the caller's ctx ends,
// so that a slow statement of fn is interrupted and the call answers soon
// after its context ends; the group then rolls the shared transaction back
// and runs its other calls again (errRegroup). stop releases it.
func callerBound(run, ctx context.Context) (context.Context, func()) {
	sctx, cancel := context.WithCancel(run)
	unhook := context.AfterFunc(ctx, cancel)
	return sctx, func() { unhook(); cancel() }
}
