package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// Requeue and Cancel are an operator's calls on one job by ID. They are not
// fenced (an operator holds no claim); what they may do depends only on the
// job's status, and a job they do not apply to is an error, not a refusal.

// JobOperate runs p's update in a transaction of its own, at the queue's
// clock read under the lock, and when it matches no row reads the row in
// the same transaction to say why.
func (e *Engine) JobOperate(ctx context.Context, p engine.JobOperateParams) (engine.Refusal, error) {
	return writeTx(ctx, e, write[engine.Refusal]{run: func(ctx context.Context, tx engine.Execer) (engine.Refusal, error) {
		return operateTx(ctx, tx, p, p.Queue.Clock.Now())
	}})
}

// operateTries bounds how often an operator's update is run again because
// the row read to explain its refusal says it should have matched.
const operateTries = 5

// operateTx is the body of an operator's transaction: p's update at now,
// and when it matched no row the row as it is. Under SQLite's write lock
// nothing commits between the two, so the row read agrees with the update;
// the loop is there for a read that says otherwise, as it is on PostgreSQL,
// whose READ COMMITTED statements each see what was committed when they
// began.
func operateTx(ctx context.Context, tx engine.Execer, p engine.JobOperateParams, now int64) (engine.Refusal, error) {
	for try := 1; ; try++ {
		r := engine.Refusal{Now: now}
		var err error
		r.Applied, err = runOperation(ctx, tx, p, now)
		if err != nil || r.Applied {
			return r, err
		}
		if err := readRefusal(ctx, tx, p, &r); err != nil || !matches(p.Kind, r) || try == operateTries {
			return r, err
		}
	}
}

// matches reports whether an update of kind would take the row r read: a
// refusal that r contradicts.
func matches(kind engine.OperationKind, r engine.Refusal) bool {
	switch {
	case !r.Found:
		return false
	case kind == engine.OpCancel:
		return r.Status == "pending" || r.Status == "leased"
	default:
		return r.Status == "quarantined" && (!r.Deadline.Valid || r.Deadline.Int64 > r.Now)
	}
}

// runOperation runs p's update at now and reports whether it matched the
// row.
func runOperation(ctx context.Context, tx engine.Execer, p engine.JobOperateParams, now int64) (bool, error) {
	var res sql.Result
	var err error
	switch p.Kind {
	case engine.OpRequeue:
		res, err = tx.ExecContext(ctx, stmt("requeue"), p.Queue.Name, p.ID, now)
	case engine.OpCancel:
		res, err = tx.ExecContext(ctx, stmt("cancel"), p.Queue.Name, p.ID, p.Reason, now)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// readRefusal reads the row of the job that p's update did not match into
// r.
func readRefusal(ctx context.Context, tx engine.Execer, p engine.JobOperateParams, r *engine.Refusal) error {
	err := tx.QueryRowContext(ctx, stmt("operate_refusal"), p.Queue.Name, p.ID).Scan(&r.Status, &r.Deadline)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading why nothing changed: %w", err)
	}
	r.Found = true
	return nil
}
