package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/leaseq/leaseq/internal/engine"
)

// fencedSQL is each fenced call's statement.
var fencedSQL = [...]string{
	engine.FenceFinish:  stmt("finish"),
	engine.FenceExtend:  stmt("extend"),
	engine.FenceRelease: stmt("release"),
	engine.FenceFail:    stmt("fail"),
	engine.FenceSnooze:  stmt("snooze"),
}

// JobSettle runs fenced calls: a single one in a (possibly shared)
// transaction at the clock read under the lock, a batch in one transaction
// at one instant. Each reports whether its fence matched.
func (e *Engine) JobSettle(ctx context.Context, p engine.JobSettleParams) ([]engine.Settled, error) {
	body := func(ctx context.Context, tx engine.Execer) ([]engine.Settled, error) {
		return settleTx(ctx, tx, p.Queue, p.Calls)
	}
	if grouped(p.Queue, p.Share) {
		return groupTx(ctx, e, p.Queue, nil, body)
	}
	return writeTx(ctx, e, write[[]engine.Settled]{run: body})
}

// settleTx runs fs in tx, all at one instant of q's clock.
func settleTx(ctx context.Context, tx engine.Execer, q engine.Queue, fs []engine.Fenced) ([]engine.Settled, error) {
	now := q.Clock.Now()
	out := make([]engine.Settled, len(fs))
	for i, f := range fs {
		var err error
		if out[i], err = fencedTx(ctx, tx, q.Name, f, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fencedTx runs f at now in its statement and reports whether the fence
// matched and the lease end the row was left with.
func fencedTx(ctx context.Context, tx engine.Execer, queue string, f engine.Fenced, now int64) (engine.Settled, error) {
	var r engine.Settled
	err := tx.QueryRowContext(ctx, fencedSQL[f.Kind], f.Args(queue, now)...).Scan(&r.LeaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Settled{}, nil
	}
	r.OK = err == nil
	return r, err
}
