package postgres

import (
	"context"

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
		return engine.Operate(ctx, tx, operateSQL, p, now)
	})
}

// operateSQL are the statements of an operator's call.
var operateSQL = engine.OperateSQL{Requeue: stmt("requeue"), Cancel: stmt("cancel"), Refusal: stmt("operate_refusal")}

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
