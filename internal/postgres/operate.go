package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobOperate runs an operator's update, and reads the row when it matched
// none, in one transaction, at the queue's clock (or the server's, read in
// the transaction) once the transaction holds the row (rule 8 in
// docs/rules.md; see JobSettle).
func (e *Engine) JobOperate(ctx context.Context, p engine.JobOperateParams) (engine.Refusal, error) {
	return write(ctx, e, func(ctx context.Context, tx engine.Execer) (engine.Refusal, error) {
		if err := lockJobs(ctx, tx, p.Queue.Name, p.ID); err != nil {
			return engine.Refusal{}, err
		}
		now, err := txNow(ctx, tx, p.Queue)
		if err != nil {
			return engine.Refusal{}, err
		}
		return operateTx(ctx, tx, p, now)
	})
}

// operateTries bounds how often an operator's update is run again because
// the row read to explain its refusal says it should have matched.
const operateTries = 5

// operateTx is the body of an operator's transaction: p's update at now,
// and when it matched no row the row as it is. Under READ COMMITTED each
// statement sees what was committed when it began, so a row committed
// between the update and the read (an Enqueue of the ID, a claim moving
// the job) could explain a refusal with a status the update would have
// taken: the update is then run again, so that the answer and its reason
// come from the same view of the row.
func operateTx(ctx context.Context, tx engine.Execer, p engine.JobOperateParams, now int64) (engine.Refusal, error) {
	for try := 1; ; try++ {
		r := engine.Refusal{Now: now}
		var err error
		r.Applied, err = runOperation(ctx, tx, p, now)
		if err != nil || r.Applied {
			return r, err
		}
		if err := readRefusal(ctx, tx, p, &r); err != nil || !matches(p, r) || try == operateTries {
			return r, err
		}
	}
}

// matches reports whether p's update would take the row r read: a refusal
// that r contradicts.
func matches(p engine.JobOperateParams, r engine.Refusal) bool {
	switch {
	case !r.Found:
		return false
	case p.Kind == engine.OpCancel:
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

// readRefusal reads the row of the job that an operator's update did not
// match into r.
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

// JobPurgeChunk deletes one chunk (purge.sql) in a transaction of its own,
// and returns how many jobs it deleted: none when it fails (not committed,
// or not known to be: write).
func (e *Engine) JobPurgeChunk(ctx context.Context, p engine.JobPurgeChunkParams) (int, error) {
	return write(ctx, e, func(ctx context.Context, tx engine.Execer) (int, error) {
		res, err := tx.ExecContext(ctx, stmt("purge"), p.Queue, p.Status, p.Before, engine.PurgeChunk)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		return int(n), err
	})
}
