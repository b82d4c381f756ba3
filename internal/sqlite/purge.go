package sqlite

import (
	"context"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobPurgeChunk deletes at most engine.PurgeChunk jobs in a transaction of
// its own, and returns how many it deleted: none when it fails (rolled
// back, nothing of the chunk deleted).
func (e *Engine) JobPurgeChunk(ctx context.Context, p engine.JobPurgeChunkParams) (int, error) {
	n, err := writeTx(ctx, e, write[int]{run: func(ctx context.Context, tx engine.Execer) (int, error) {
		return purgeTx(ctx, tx, p)
	}})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// purgeTx remembers the chunk's tokens and deletes it. The write lock keeps
// the rows as they are between the two statements, which pick the same
// rows.
func purgeTx(ctx context.Context, tx engine.Execer, p engine.JobPurgeChunkParams) (int, error) {
	if _, err := tx.ExecContext(ctx, stmt("purge_tokens"), p.Queue, p.Status, p.Before, engine.PurgeChunk); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, stmt("purge"), p.Queue, p.Status, p.Before, engine.PurgeChunk)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
