package postgres

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// SlotInsert writes a periodic slot's job (slot_insert.sql) and reports
// whether it was written: not when the ID is taken or was purged. A call
// cut short is answered as write answers it.
func (e *Engine) SlotInsert(ctx context.Context, p engine.SlotInsertParams) (bool, error) {
	j := p.Job
	return write(ctx, e, func(ctx context.Context, tx engine.Execer) (bool, error) {
		r, err := tx.ExecContext(ctx, stmt("slot_insert"), p.Queue.Name, j.ID, int64(j.Qty), j.Payload, int32(j.MaxAttempts),
			j.Deadline, j.RunAt, int32(j.Priority), instant(p.Queue, j.Created))
		if err != nil {
			return false, err
		}
		n, err := r.RowsAffected()
		return n == 1, err
	})
}

// SlotSeen reads whether an ID of the queue, or a purged one, starts with
// p.Prefix (slot_seen.sql).
func (e *Engine) SlotSeen(ctx context.Context, p engine.SlotSeenParams) (bool, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) (bool, error) {
		var seen bool
		err := db.QueryRowContext(ctx, stmt("slot_seen"), p.Queue, p.Prefix, engine.PrefixEnd(p.Prefix)).Scan(&seen)
		return seen, err
	})
}

// JobPurgeDue reads whether a purge chunk of p would delete a job
// (purge_due.sql).
func (e *Engine) JobPurgeDue(ctx context.Context, p engine.JobPurgeChunkParams) (bool, error) {
	return read(ctx, e, func(ctx context.Context, db engine.Execer) (bool, error) {
		var due bool
		err := db.QueryRowContext(ctx, stmt("purge_due"), p.Queue, p.Status, p.Before).Scan(&due)
		return due, err
	})
}
