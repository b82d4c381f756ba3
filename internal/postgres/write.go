package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// answerWait is how long a write whose context has ended still waits for
// the server's answer to the statement it sent, and then for the read that
// finds out what the statement did.
const answerWait = time.Second

// txFunc is the body of a transaction: its statements on tx, and the
// result the call answers with.
type txFunc[T any] func(ctx context.Context, tx engine.Execer) (T, error)

// attempt is one try of write's transaction: fn's result, and what tells
// whether its COMMIT, cut short, took effect.
type attempt[T any] struct {
	out    T
	mark   int64  // the advisory lock key of mark.sql
	xid    string // the transaction's ID
	unsure bool   // the COMMIT failed once ctx had ended
}

// write runs fn in one READ COMMITTED transaction and commits it, retrying
// the whole transaction on a serialization failure or a deadlock (rule 41
// in docs/rules.md), and answers with what the transaction did. A
// transaction whose context ended before COMMIT is rolled back, never
// committed, and the call answers ctx's error. A context that ends while a
// statement or the COMMIT runs gives it answerWait more to answer, as
// answered gives an enqueue's statement, so that the call still returns
// soon after ctx ends while the server does not answer (rule 24). A COMMIT
// that fails once ctx has ended — cut short, or its connection lost — may
// have been carried out by the server all the same: the call then finds
// out whether the transaction committed (committed), and answers fn's
// result and nil if it did, ctx's error if not (ctx's error only when
// nothing of the call was written), and, when even that read gets no
// answer, that it is not known. A COMMIT that fails while ctx runs is rule
// 41's lost connection: the driver's error.
func write[T any](ctx context.Context, e *Engine, fn txFunc[T]) (T, error) {
	var zero T
	a, err := retry(ctx, func() (attempt[T], error) { return tryTx(ctx, e, fn) })
	if !a.unsure || ctx.Err() == nil {
		if err != nil {
			return zero, interpretError(err)
		}
		return a.out, nil
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerWait)
	defer cancel()
	done, ferr := e.committed(fctx, a.mark, a.xid)
	switch {
	case ferr != nil:
		return zero, outcomeUnknown(ctx, ferr)
	case done:
		return a.out, nil
	}
	return zero, ctx.Err()
}

// tryTx is one try of write: a transaction marked for committed, fn, and
// the COMMIT, on a context graced past ctx's end.
func tryTx[T any](ctx context.Context, e *Engine, fn txFunc[T]) (attempt[T], error) {
	a := attempt[T]{mark: rand.Int64()}
	_, _, err := graced(ctx, func(sctx context.Context) (struct{}, error) {
		tx, err := e.db.BeginTx(sctx, nil)
		if err != nil {
			return struct{}{}, err
		}
		err = tx.QueryRowContext(sctx, stmt("mark"), a.mark).Scan(&a.xid)
		if err == nil {
			a.out, err = fn(sctx, tx)
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			tx.Rollback()
			return struct{}{}, err
		}
		err = tx.Commit()
		a.unsure = err != nil && ctx.Err() != nil
		return struct{}{}, err
	})
	return a, err
}

// committed reports whether the transaction of write marked mark, with the
// ID xid, committed: one read, which waits for the transaction to end
// first — a COMMIT the server has not yet carried out may still be. Each
// transaction of write ends in its own COMMIT or abort, so the status of
// its ID says exactly whether the call was written, whatever happened to
// its rows since.
func (e *Engine) committed(ctx context.Context, mark int64, xid string) (bool, error) {
	var status sql.NullString
	if err := e.db.QueryRowContext(ctx, stmt("committed"), mark, xid).Scan(&status); err != nil {
		return false, err
	}
	switch status.String {
	case "committed":
		return true, nil
	case "aborted":
		return false, nil
	}
	return false, fmt.Errorf("transaction %s is %q", xid, status.String)
}

// cutAnswer is one try of answered: the statements' result, and whether
// they failed as their graced context ended.
type cutAnswer[T any] struct {
	out T
	cut bool
}

// answered runs write, statements that commit on their own, and answers
// with what they did. A context that ends while they run does not cut them
// short at once: the server commits an autocommitted statement whatever
// the client does once it has the statement, so an answer of ctx's error
// then could be a lie, the jobs in the table, and a caller that tries again
// under new IDs would do the work twice. Instead the statement has
// answerWait after ctx ends to answer: its answer is what happened (ctx's
// error only when nothing of the call was written). Cut short after that
// (a server that does not answer), the call reads whether the statement's
// rows are there (found, within answerWait again) and answers found's
// result if they are, ctx's error if not; when even that read gets no
// answer, it says that whether anything was written is not known, without
// ctx's error. A wait for a connection heeds ctx: nothing was sent then.
func answered[T any](ctx context.Context, e *Engine, write txFunc[T], found func(ctx context.Context) (T, bool, error)) (T, error) {
	var zero T
	a, err := retry(ctx, func() (cutAnswer[T], error) {
		conn, err := e.db.Conn(ctx)
		if err != nil {
			return cutAnswer[T]{}, err
		}
		defer conn.Close()
		out, cut, err := graced(ctx, func(sctx context.Context) (T, error) { return write(sctx, conn) })
		return cutAnswer[T]{out, cut}, err
	})
	err = interpretError(err)
	if !a.cut || ctx.Err() == nil {
		return a.out, err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), answerWait)
	defer cancel()
	out, there, ferr := found(fctx)
	switch {
	case ferr != nil:
		return zero, outcomeUnknown(ctx, ferr)
	case there:
		return out, nil
	}
	return out, ctx.Err()
}

// graced runs op on a context that ends answerWait after ctx does, and
// reports whether op failed as that context ended: cut short, with what it
// sent to the server perhaps carried out all the same.
func graced[T any](ctx context.Context, op func(ctx context.Context) (T, error)) (out T, cut bool, err error) {
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	late := context.AfterFunc(ctx, func() { time.AfterFunc(answerWait, stop) })
	defer late()
	out, err = op(sctx)
	return out, err != nil && sctx.Err() != nil, err
}

// outcomeUnknown is the answer of a call cut short by ctx whose read of
// what happened failed with err. Neither error is wrapped: the call may
// have been written, and a caller that took ctx's error for "nothing
// happened" would be misled.
func outcomeUnknown(ctx context.Context, err error) error {
	return fmt.Errorf("%v, and the server did not answer within %v; whether the call was written is not known (%v)", ctx.Err(), answerWait, err)
}

// read runs a read on the *sql.DB, retried as write's transactions are.
func read[T any](ctx context.Context, e *Engine, fn func(ctx context.Context, db engine.Execer) (T, error)) (T, error) {
	v, err := retry(ctx, func() (T, error) { return fn(ctx, e.db) })
	return v, interpretError(err)
}
