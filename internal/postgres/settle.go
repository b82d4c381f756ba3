package postgres

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/leaseq/leaseq/internal/engine"
)

// JobSettle runs a single fenced call judged by the server's clock as one
// statement, which reads the clock itself, and answers with what it did
// (answered; cut short, it reads its row: settledFound). Anything else runs
// in one transaction at one instant, the queue's clock or the server's,
// read once the transaction holds the calls' rows (rule 8 in
// docs/rules.md): an injected clock is read in this process, and read
// before the statement it would be stale by however long the statement
// then took to reach the row — waiting for another transaction's lock on
// it, or in a process stalled between the reading and the sending — and a
// call could then be judged, at its earlier instant, on a row that a call
// judged later had already changed.
//
// On the server's clock a batch of finishes is one statement (finishMany);
// a worker pool's finishes and claim are JobCycle's (cycle.go).
func (e *Engine) JobSettle(ctx context.Context, p engine.JobSettleParams) ([]engine.Settled, error) {
	q, fs := p.Queue, p.Calls
	if p.SkipLocked {
		return write(ctx, e, func(ctx context.Context, tx engine.Execer) ([]engine.Settled, error) {
			return settleFreeTx(ctx, tx, q, fs)
		})
	}
	if len(fs) > 1 && q.Clock.Server && allFinishes(fs) {
		return e.finishMany(ctx, q.Name, fs)
	}
	if len(fs) == 1 && q.Clock.Server {
		one := func(ctx context.Context, db engine.Execer) ([]engine.Settled, error) {
			r, err := fencedTx(ctx, db, q.Name, fs[0], nil)
			return []engine.Settled{r}, err
		}
		return answered(ctx, e, one, e.settledFound(q.Name, fs))
	}
	return write(ctx, e, func(ctx context.Context, tx engine.Execer) ([]engine.Settled, error) {
		return settleTx(ctx, tx, q, fs)
	})
}

// allFinishes reports whether every call of fs is a Finish.
func allFinishes(fs []engine.Fenced) bool {
	return !slices.ContainsFunc(fs, func(f engine.Fenced) bool { return f.Kind != engine.FenceFinish })
}

// settleTx runs fs in tx at one instant, read once tx holds their rows.
func settleTx(ctx context.Context, tx engine.Execer, q engine.Queue, fs []engine.Fenced) ([]engine.Settled, error) {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	if err := lockJobs(ctx, tx, q.Name, ids...); err != nil {
		return nil, err
	}
	now, err := txNow(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Settled, len(fs))
	for i, f := range fs {
		if out[i], err = fencedTx(ctx, tx, q.Name, f, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settleFreeTx is settleTx for the calls whose rows no other transaction
// holds (lock_skip.sql); the others are Skipped, their rows untouched.
func settleFreeTx(ctx context.Context, tx engine.Execer, q engine.Queue, fs []engine.Fenced) ([]engine.Settled, error) {
	free, err := lockFreeJobs(ctx, tx, q.Name, fs)
	if err != nil {
		return nil, err
	}
	now, err := txNow(ctx, tx, q)
	if err != nil {
		return nil, err
	}
	out := make([]engine.Settled, len(fs))
	for i, f := range fs {
		if !free[f.ID] {
			out[i].Skipped = true
		} else if out[i], err = fencedTx(ctx, tx, q.Name, f, now); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lockFreeJobs locks the rows of fs's jobs that no other transaction holds
// (lock_skip.sql) and returns their IDs.
func lockFreeJobs(ctx context.Context, tx engine.Execer, queue string, fs []engine.Fenced) (map[string]bool, error) {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	rows, err := tx.QueryContext(ctx, stmt("lock_skip"), queue, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	free := make(map[string]bool, len(fs))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		free[id] = true
	}
	return free, rows.Err()
}

// fencedSQL is the statement of a fenced call of kind k.
func fencedSQL(k engine.FenceKind) string {
	switch k {
	case engine.FenceExtend:
		return stmt("extend")
	case engine.FenceRelease:
		return stmt("release")
	case engine.FenceFail:
		return stmt("fail")
	case engine.FenceSnooze:
		return stmt("snooze")
	}
	return stmt("finish")
}

// fencedTx runs f at now (nil: the statement reads the server's clock) and
// reports whether the fence matched and the lease end the row was left
// with.
func fencedTx(ctx context.Context, tx engine.Execer, queue string, f engine.Fenced, now any) (engine.Settled, error) {
	var r engine.Settled
	err := tx.QueryRowContext(ctx, fencedSQL(f.Kind), f.Args(queue, now)...).Scan(&r.LeaseUntil)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Settled{}, nil
	}
	r.OK = err == nil
	return r, err
}

// finishMany runs FinishBatch's claims in finish_many.sql, and answers with
// what it did, as JobSettle does a single call. A row is updated once
// however often the batch names its claim; as on SQLite, where the claims
// run in order, the first of them is the one accepted.
func (e *Engine) finishMany(ctx context.Context, queue string, fs []engine.Fenced) ([]engine.Settled, error) {
	ids, owners, tokens := make([]string, len(fs)), make([]string, len(fs)), make([]int64, len(fs))
	for i, f := range fs {
		ids[i], owners[i], tokens[i] = f.ID, f.Owner, f.Token
	}
	many := func(ctx context.Context, db engine.Execer) ([]engine.Settled, error) {
		rows, err := db.QueryContext(ctx, stmt("finish_many"), queue, nil, ids, owners, tokens)
		if err != nil {
			return nil, err
		}
		return scanFinished(rows, fs)
	}
	return answered(ctx, e, many, e.settledFound(queue, fs))
}

// scanFinished reads finish_many.sql's rows as the outcome of each of fs.
func scanFinished(rows *sql.Rows, fs []engine.Fenced) ([]engine.Settled, error) {
	defer rows.Close()
	out := make([]engine.Settled, len(fs))
	for rows.Next() {
		var id, owner string
		var token, leaseUntil int64
		if err := rows.Scan(&id, &owner, &token, &leaseUntil); err != nil {
			return nil, err
		}
		for i, f := range fs {
			if f.ID == id && f.Owner == owner && f.Token == token {
				out[i] = engine.Settled{OK: true, LeaseUntil: leaseUntil}
				break
			}
		}
	}
	return out, rows.Err()
}

// settledFound is the found of answered for fenced calls fs of queue in one
// autocommitted statement: their outcome read from their rows
// (settledRows), and whether any of them bears its mark.
func (e *Engine) settledFound(queue string, fs []engine.Fenced) func(ctx context.Context) ([]engine.Settled, bool, error) {
	return func(ctx context.Context) ([]engine.Settled, bool, error) {
		rs, err := e.settledRows(ctx, queue, fs)
		if err != nil {
			return nil, false, err
		}
		return rs, slices.ContainsFunc(rs, func(r engine.Settled) bool { return r.OK }), nil
	}
}

// lockJobs locks the rows of the jobs ids of queue in tx (lock.sql).
func lockJobs(ctx context.Context, tx engine.Execer, queue string, ids ...string) error {
	_, err := tx.ExecContext(ctx, stmt("lock"), queue, ids)
	return err
}

// txNow is the queue's clock, or the server's read in tx: on the
// transaction at hand, so that a call needs no second connection for it (a
// *sql.DB of one connection would have none to give).
func txNow(ctx context.Context, tx engine.Execer, q engine.Queue) (int64, error) {
	if !q.Clock.Server {
		return q.Clock.Now(), nil
	}
	var ms int64
	err := tx.QueryRowContext(ctx, stmt("now")).Scan(&ms)
	return ms, err
}
