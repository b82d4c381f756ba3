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
// the COMMIT met it. Fn's error and a refused Finish roll the whole
// transaction back (errUndo), as nothing else shares it. FinishTx's row is
// locked before its fence is checked, so no other transaction changes it
// while Fn runs; the Finish after Fn reads the clock again.
func (e *Engine) TxRun(ctx context.Context, p engine.TxRunParams) (engine.TxOutcome, error) {
	var undone engine.TxOutcome // the outcome of the last try that errUndo rolled back
	out, err := write(ctx, e, func(run context.Context, tx engine.Execer) (engine.TxOutcome, error) {
		out, err := e.fnTx(ctx, run, tx, p)
		if err == nil && (out.FnErr != nil || out.Refused) {
			undone, err = out, errUndo
		}
		return out, err
	})
	if errors.Is(err, errUndo) {
		return undone, nil
	}
	return out, err
}

// errUndo rolls back a TxRun try whose outcome is Fn's error or a refused
// Finish: nothing of it may be kept.
var errUndo = errors.New("leaseq: the function's transaction is rolled back")

// fnTx is one try of TxRun in tx, whose statements run on run: the row
// locked and its fence checked (FinishTx), Fn, the Finish. Fn's error and
// a refused fence are the outcome; a serialization failure or deadlock in
// Fn is the try's error, for write to run it again.
func (e *Engine) fnTx(ctx, run context.Context, tx engine.Execer, p engine.TxRunParams) (engine.TxOutcome, error) {
	if p.Finish != nil {
		ok, err := fenceHolds(run, tx, p.Queue, *p.Finish)
		if err != nil || !ok {
			return engine.TxOutcome{Refused: true}, err
		}
	}
	if out, err := e.fnRun(ctx, run, tx, p.Queue, p.Fn); err != nil || out.FnErr != nil {
		return out, err
	}
	if p.Finish != nil {
		r, err := fencedTx(run, tx, p.Queue.Name, *p.Finish, instant(p.Queue, p.Queue.Clock.Now()))
		return engine.TxOutcome{Refused: err == nil && !r.OK}, err
	}
	return engine.TxOutcome{}, nil
}

// fnRun runs fn on tx, whose statements run on run: fn's error is the
// outcome, but a serialization failure or deadlock in it is the try's
// error, for write to run it again.
func (e *Engine) fnRun(ctx, run context.Context, tx engine.Execer, q engine.Queue, fn engine.TxFunc) (engine.TxOutcome, error) {
	t := engine.NewTx(run, tx, e.db, insertSaved(q), placeholderError)
	err := fn(ctx, t)
	_, closeErr := t.End()
	switch {
	case retryable(err):
		return engine.TxOutcome{}, err
	case err != nil:
		return engine.TxOutcome{FnErr: err}, nil
	}
	return engine.TxOutcome{}, closeErr
}

// fenceHolds locks f's row and reports whether f's fence matches it at the
// clock read then (fence_check, which reads the server's itself).
func fenceHolds(ctx context.Context, tx engine.Execer, q engine.Queue, f engine.Fenced) (bool, error) {
	if err := lockJobs(ctx, tx, q.Name, f.ID); err != nil {
		return false, err
	}
	var until int64
	err := tx.QueryRowContext(ctx, stmt("fence_check"), q.Name, f.ID, f.Owner, f.Token, q.Clock.Arg()).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// insertSaved is Tx.Insert for q: the jobs under a savepoint (that of
// EnqueueTx), all or none, with the transaction going on after an error.
// One job needs none: a taken ID inserts no row (insert.sql's ON
// CONFLICT), which aborts nothing.
func insertSaved(q engine.Queue) func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
	return func(ctx context.Context, tx engine.Execer, jobs []engine.JobRow) (int, error) {
		if len(jobs) == 1 {
			if err := insert(ctx, tx, q, jobs[0], nil); err != nil {
				return 0, err
			}
			return -1, nil
		}
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
