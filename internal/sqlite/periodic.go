package sqlite

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// SlotInsert writes a periodic slot's job (slot_insert.sql) in a
// transaction that may be shared with other single calls, unless the queue
// is paused (slot_paused.sql, read under the same write lock) or the ID is
// taken or was purged.
func (e *Engine) SlotInsert(ctx context.Context, p engine.SlotInsertParams) (engine.SlotAnswer, error) {
	j := p.Job
	body := func(ctx context.Context, tx engine.Execer) (engine.SlotAnswer, error) {
		var paused bool
		if err := tx.QueryRowContext(ctx, stmt("slot_paused"), p.Queue.Name).Scan(&paused); err != nil {
			return 0, interpretError(err)
		}
		if paused {
			return engine.SlotPaused, nil
		}
		r, err := tx.ExecContext(ctx, stmt("slot_insert"), p.Queue.Name, j.ID, j.Qty, j.Payload, j.MaxAttempts,
			j.Deadline, j.RunAt, j.Priority, j.Due, j.Created, j.Kind)
		if err != nil {
			return 0, interpretError(err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return 0, err
		}
		if n != 1 {
			return engine.SlotTaken, nil
		}
		return engine.SlotWritten, nil
	}
	if !p.Queue.NoGroup {
		return groupTx(ctx, e, p.Queue, nil, body)
	}
	return writeTx(ctx, e, write[engine.SlotAnswer]{run: body})
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
