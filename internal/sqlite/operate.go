package sqlite

import (
	"context"

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
		return engine.Operate(ctx, tx, operateSQL, p, p.Queue.Clock.Now())
	}})
}

// operateSQL are the statements of an operator's call.
var operateSQL = engine.OperateSQL{Requeue: stmt("requeue"), Cancel: stmt("cancel"), Refusal: stmt("operate_refusal")}
