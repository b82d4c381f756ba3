package postgres

import (
	"context"
	"database/sql"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// TxRun runs p.Fn, and p.Finish around it, in a transaction of its own
// (rule 43 in docs/rules.md) through write: run again whole, Fn with it,
// after a serialization failure or a deadlock, whether Fn's statements or
// the COMMIT met it. FinishTx's row is locked before its fence is checked,
// so no other transaction changes it while Fn runs; the Finish after Fn
// reads the clock again.
func (e *Engine) TxRun(ctx context.Context, p engine.TxRunParams) (engine.TxOutcome, error) {
	return write(ctx, e, func(run context.Context, tx engine.Execer) (engine.TxOutcome, error) {
		return fnTx(ctx, run, tx, p)
	})
}

// fnTx is one try of TxRun in tx, whose statements run on run: the
// savepoint, the row locked and its fence checked (FinishTx), Fn, the
// Finish. Fn's error and a refused fence roll back to the savepoint and
// are the outcome; a serialization failure or deadlock in Fn is the try's
// error, for write to run it again.
func fnTx(ctx, run context.Context, tx engine.Execer, p engine.TxRunParams) (engine.TxOutcome, error) {
	if _, err := tx.ExecContext(run, stmt("tx_savepoint")); err != nil {
		return engine.TxOutcome{}, err
	}
	if p.Finish != nil {
		ok, err := fenceHolds(run, tx, p.Queue, *p.Finish)
		if err != nil || !ok {
			return undoFn(run, tx, engine.TxOutcome{Refused: true}, err)
		}
	}
	t := engine.NewTx(run, tx, insertSaved(p.Queue))
	err := p.Fn(ctx, t)
	_, closeErr := t.End()
	switch {
	case retryable(err):
		return engine.TxOutcome{}, err
	case err != nil:
		return undoFn(run, tx, engine.TxOutcome{FnErr: err}, closeErr)
	case closeErr != nil:
		return engine.TxOutcome{}, closeErr
	}
	if p.Finish != nil {
		r, err := fencedTx(run, tx, p.Queue.Name, *p.Finish, instant(p.Queue, p.Queue.Clock.Now()))
		if err != nil || !r.OK {
			return undoFn(run, tx, engine.TxOutcome{Refused: true}, err)
		}
	}
	_, err = tx.ExecContext(run, stmt("tx_savepoint_release"))
	return engine.TxOutcome{}, err
}

// fenceHolds locks f's row and reports whether f's fence matches it at the
// clock read then (fence_check).
func fenceHolds(ctx context.Context, tx engine.Execer, q engine.Queue, f engine.Fenced) (bool, error) {
	if err := lockJobs(ctx, tx, q.Name, f.ID); err != nil {
		return false, err
	}
	now, err := txNow(ctx, tx, q)
	if err != nil {
		return false, err
	}
	var until int64
	err = tx.QueryRowContext(ctx, stmt("fence_check"), q.Name, f.ID, f.Owner, f.Token, now).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// undoFn rolls back to Fn's savepoint and answers out, unless cause (a
// statement's error) or the rollback fails: then the try fails.
func undoFn(run context.Context, tx engine.Execer, out engine.TxOutcome, cause error) (engine.TxOutcome, error) {
	if cause != nil {
		return engine.TxOutcome{}, cause
	}
	if _, err := tx.ExecContext(run, stmt("tx_savepoint_rollback")); err != nil {
		return engine.TxOutcome{}, err
	}
	if _, err := tx.ExecContext(run, stmt("tx_savepoint_release")); err != nil {
		return engine.TxOutcome{}, err
	}
	return out, nil
}

// insertSaved is Tx.Insert for q: the jobs under a savepoint (that of
// EnqueueTx), all or none, with the transaction going on after an error.
func insertSaved(q engine.Queue) func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
	return func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
		if _, err := tx.ExecContext(ctx, stmt("savepoint")); err != nil {
			return -1, err
		}
		for i, j := range jobs {
			if err := insert(ctx, tx, q, j, nil); err != nil {
				_, rbErr := tx.ExecContext(ctx, stmt("savepoint_rollback"))
				_, relErr := tx.ExecContext(ctx, stmt("savepoint_release"))
				return i, errors.Join(err, rbErr, relErr)
			}
		}
		_, err := tx.ExecContext(ctx, stmt("savepoint_release"))
		return -1, err
	}
}
