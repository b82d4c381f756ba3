package sqlite

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// QueuePause writes or deletes the queue's row of leaseq_paused (rule 54)
// in a write transaction of its own. Every claim path reads that row, so
// the change holds for every process once it commits.
func (e *Engine) QueuePause(ctx context.Context, p engine.QueuePauseParams) error {
	_, err := writeTx(ctx, e, write[struct{}]{run: func(ctx context.Context, tx engine.Execer) (struct{}, error) {
		var err error
		if p.Paused {
			_, err = tx.ExecContext(ctx, stmt("pause"), p.Queue.Name, p.Queue.Clock.Now())
		} else {
			_, err = tx.ExecContext(ctx, stmt("resume"), p.Queue.Name)
		}
		return struct{}{}, err
	}})
	return err
}

// JobsLeased reads the jobs of queue leased to owner (leased.sql).
func (e *Engine) JobsLeased(ctx context.Context, queue, owner string) ([]engine.LeasedRow, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) ([]engine.LeasedRow, error) {
		rows, err := db.QueryContext(ctx, stmt("leased"), queue, owner)
		if err != nil {
			return nil, err
		}
		return engine.ScanLeased(rows)
	})
}
