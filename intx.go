package leaseq

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"

	"github.com/leaseq/leaseq/internal/engine"
)

// The service's transactions (rules 43–47 in docs/rules.md): InTx runs the
// service's own writes in the queue's writer turn, FinishTx commits them
// only with a fenced Finish. The engines run the function (TxRun); here
// are the checks, the Tx the function gets, and the wake-ups after.

// Tx is the transaction an [Queue.InTx] or [Queue.FinishTx] function runs
// on: the service's statements go through ExecContext, QueryContext and
// QueryRowContext, and its jobs through Enqueue, all in the one
// transaction the call commits. It is valid only until the function
// returns; Rows the function left open are closed then. Use it from the
// function's goroutine.
//
// Write the statements with $1, $2 placeholders: both engines bind them,
// so one text serves both; ? is SQLite-only. On PostgreSQL a statement
// with ? fails with an error that says to write $1, $2, wrapping the
// server's (rule 44).
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	// Enqueue adds jobs to the queue of the call in the transaction, all or
	// nothing for the call, with the errors of [Queue.EnqueueTx]: after
	// one, none of the call's jobs is written and the transaction goes on.
	Enqueue(ctx context.Context, jobs ...Job) error
}

// InTx runs fn on a transaction of the queue's database and commits it,
// so that the service's own rows and the jobs fn enqueues with
// tx.Enqueue commit together or not at all (rule 43). fn's error is
// InTx's, returned as it is, and then nothing fn wrote is kept; a panic in
// fn is rolled back and raised again in the caller.
//
// On SQLite the transaction runs in the writer's turn that every call of
// the queue's *sql.DB takes, so the service's writes never fight the
// queue's for the file lock, and InTx calls that arrive together share one
// commit (group commit; [Options.DisableGroupCommit] gives each its own),
// each fn inside a savepoint of its own: one fn's error rolls back its own
// writes alone. On PostgreSQL it is a READ COMMITTED transaction of its
// own.
//
// fn may run more than once: a transaction that fails as a whole
// (SQLITE_BUSY at COMMIT, a serialization failure or deadlock) is run
// again, fn with it. So fn must have no effect outside tx, and must not
// wait for anything outside it — on SQLite every other writer of the
// database waits while it runs. Inside fn, the queue is reached through tx
// only: any other call of a Queue with the ctx fn got is [ErrInvalid] at
// once (rule 44), where on SQLite it would wait for the turn fn holds.
// Statements through tx check the context they are given before they run,
// and run on the transaction's own (a statement interrupted midway would
// roll back other calls' work too): keep each short. A ctx that ends
// before the commit leaves nothing written and is InTx's error. After the
// commit, this process's idle workers of the queue wake at once if fn
// enqueued (rule 45). A nil fn is ErrInvalid.
func (q *Queue) InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	const op = "in tx"
	if err := q.callable(ctx); err != nil {
		return opError(op, "", err)
	}
	if fn == nil {
		return opError(op, "", invalid("fn is nil"))
	}
	t := q.newTxFn("InTx", fn)
	out, err := t.after(q.e.TxRun(ctx, engine.TxRunParams{Queue: q.ref(), Fn: t.fn}))
	if err != nil {
		return opError(op, "", err)
	}
	return out.FnErr
}

// FinishTx runs fn and the Finish of c in one transaction (rule 46): fn's
// writes, and the jobs it enqueues with tx.Enqueue (the next step of a
// workflow), commit only with an accepted Finish. The fence is checked
// before fn runs, and fn is not run at all when it already refuses; it is
// judged again at the Finish, after fn, with the clock read then. Refused,
// before or after fn, FinishTx returns false and a nil error and nothing
// of fn is kept: a worker whose lease was lost never commits its business
// writes after another took the job. fn's error is returned as it is,
// with false: nothing written, the job still leased. Everything else is as
// [Queue.InTx] (fn may run more than once; inside it, only tx reaches the
// queue); a zero Claim or a nil fn is [ErrInvalid], fn not run.
//
// Inside [Queue.Work] on SQLite, a FinishTx of the handler's claim runs in
// the pool's next write (rule 48): fn, the Finish, the pool's other results
// and the claim of the job that refills the slot share one transaction and
// one commit, and that job's handler starts once this one returned. A ctx that
// ends before that write took the call leaves with an error that says it
// waited for the pool's write, nothing written; once taken, the call waits
// for the write to end (its fn's statements see ctx's end). A handler that
// settled its job with FinishTx and returns nil gets nothing more written
// and no warning logged; its heartbeats stop.
func (q *Queue) FinishTx(ctx context.Context, c Claim, fn func(ctx context.Context, tx Tx) error) (bool, error) {
	const op = "finish tx"
	if err := q.callable(ctx); err != nil {
		return false, opError(op, job(c.ID), err)
	}
	why := claimProblem(c)
	if why == "" && fn == nil {
		why = "fn is nil"
	}
	if err := problem(why); err != nil {
		return false, opError(op, job(c.ID), err)
	}
	if !q.fences(c) {
		return false, nil
	}
	f := fence(c, engine.FenceFinish).call
	h := q.holds.settling(c)
	out, err := q.finishTx(ctx, h, f, fn)
	ok := err == nil && out.Accepted()
	h.settled(ok, err == nil && out.Refused)
	switch {
	case err != nil:
		return false, opError(op, job(c.ID), err)
	case out.FnErr != nil:
		return false, out.FnErr
	}
	return ok, nil
}

// finishTx runs FinishTx's fn with the Finish f around it: on SQLite in
// the next cycle of the pool that holds the claim (h, rule 48: its commit
// also carries the pool's other results and the claim that refills the
// slot), else on a transaction of its own.
func (q *Queue) finishTx(ctx context.Context, h *hold, f engine.Fenced, fn func(ctx context.Context, tx Tx) error) (engine.TxOutcome, error) {
	t := q.newTxFn("FinishTx", fn)
	if p, j := h.runner(); p != nil && q.e.CycleTxs() {
		out, err, ran := p.finishTx(ctx, j, engine.CycleTx{Ctx: ctx, Finish: f, Fn: t.fn})
		if ran {
			return t.after(out, err)
		}
	}
	return t.after(q.e.TxRun(ctx, engine.TxRunParams{Queue: q.ref(), Finish: &f, Fn: t.fn}))
}

// txFn is the function of an InTx or FinishTx as the engine runs it: fn
// gets ctx marked as the ctx of call (rule 44), and the queue's Tx.
type txFn struct {
	q        *Queue
	fn       engine.TxFunc
	enqueued *atomic.Bool
}

func (q *Queue) newTxFn(call string, fn func(ctx context.Context, tx Tx) error) txFn {
	enqueued := new(atomic.Bool)
	return txFn{q: q, enqueued: enqueued, fn: func(ctx context.Context, t *engine.Tx) error {
		mark := &inTxMark{call: call}
		defer mark.ended.Store(true)
		return callFn(fn, context.WithValue(ctx, inTxKey{}, mark), &queueTx{q: q, t: t, enqueued: enqueued})
	}}
}

// after is the end of a run of t: a panic in fn, which rolled its
// transaction back, is raised again here; a call that ended with nothing
// written (out.Err) has that error; when the transaction committed with
// jobs fn enqueued, the idle workers wake.
func (t txFn) after(out engine.TxOutcome, err error) (engine.TxOutcome, error) {
	if pe, ok := out.FnErr.(*fnPanic); ok {
		panic(pe.v) // the value as fn raised it, as a recover upstream expects
	}
	if err == nil {
		err = out.Err
	}
	if err == nil && out.Accepted() && t.enqueued.Load() {
		t.q.e.Wakers().Signal(t.q.name)
	}
	return out, err
}

// fnPanic is a panic in an InTx or FinishTx function, carried out of the
// transaction as the function's error, so that the transaction is rolled
// back and the writer's turn given back before it is raised again.
type fnPanic struct{ v any }

func (p *fnPanic) Error() string { return fmt.Sprintf("panic: %v", p.v) }

// callFn calls fn, turning a panic into an *fnPanic.
func callFn(fn func(ctx context.Context, tx Tx) error, ctx context.Context, tx Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &fnPanic{v: v}
		}
	}()
	return fn(ctx, tx)
}

// inTxKey marks the context an InTx or FinishTx function gets; its value
// is an *inTxMark.
type inTxKey struct{}

// inTxMark names the call whose function got the context, and says when
// that function returned: a context fn kept, used afterwards, holds no
// transaction and is not refused.
type inTxMark struct {
	call  string
	ended atomic.Bool
}

// inTxProblem refuses a Queue call made with the context of a running InTx
// or FinishTx function (rule 44): on SQLite it would wait for the writer's
// turn the function holds, for ever.
func inTxProblem(ctx context.Context) error {
	mark, ok := ctx.Value(inTxKey{}).(*inTxMark)
	if !ok || mark.ended.Load() {
		return nil
	}
	return invalid("ctx is the context of the function of a running %s: inside it, reach the queue through its tx (tx.Enqueue); "+
		"another Queue call would wait for the transaction the function holds", mark.call)
}

// queueTx is the Tx of a function of q: the engine's, and Enqueue with the
// checks of EnqueueTx.
type queueTx struct {
	q        *Queue
	t        *engine.Tx
	enqueued *atomic.Bool
}

func (t *queueTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.t.ExecContext(ctx, query, args...)
}

func (t *queueTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.t.QueryContext(ctx, query, args...)
}

func (t *queueTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.t.QueryRowContext(ctx, query, args...)
}

// Enqueue validates jobs as EnqueueTx does and writes them in the
// transaction.
func (t *queueTx) Enqueue(ctx context.Context, jobs ...Job) error {
	const op = "tx enqueue"
	if ctx == nil {
		return opError(op, "", invalid("ctx is nil"))
	}
	now := t.q.now()
	if err := t.q.batchProblem(jobs, now); err != nil {
		return opError(op, "", err)
	}
	if len(jobs) == 0 {
		return nil
	}
	bad, err := t.t.Insert(ctx, t.q.newRows(jobs, now))
	if err != nil {
		return insertError(op, jobs, bad, err)
	}
	t.enqueued.Store(true)
	return nil
}
