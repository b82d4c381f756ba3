package postgres

import (
	"context"
	"database/sql"

	"github.com/leaseq/leaseq/internal/engine"
)

// SlotInsert writes a periodic slot's job (slot_insert.sql) unless the
// queue is paused or the ID is taken or was purged, and then reads
// leaseq_purged again (slot_purged.sql) for a purge that committed while
// the insert ran, whose row it deletes. A call cut short is answered as
// write answers it.
func (e *Engine) SlotInsert(ctx context.Context, p engine.SlotInsertParams) (engine.SlotAnswer, error) {
	j := p.Job
	return write(ctx, e, func(ctx context.Context, tx engine.Execer) (engine.SlotAnswer, error) {
		var seq sql.NullInt64
		var paused bool
		err := tx.QueryRowContext(ctx, stmt("slot_insert"), p.Queue.Name, j.ID, int64(j.Qty), j.Payload, int32(j.MaxAttempts),
			j.Deadline, j.RunAt, int32(j.Priority), instant(p.Queue, j.Created), j.Kind).Scan(&seq, &paused)
		switch {
		case err != nil:
			return 0, err
		case paused:
			return engine.SlotPaused, nil
		case !seq.Valid:
			return engine.SlotTaken, nil
		}
		r, err := tx.ExecContext(ctx, stmt("slot_purged"), seq.Int64, p.Queue.Name, j.ID)
		if err != nil {
			return 0, err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return 0, err
		}
		if n == 1 {
			return engine.SlotTaken, nil
		}
		return engine.SlotWritten, nil
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
