package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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
	start  string // the server's start as the transaction began
	unsure bool   // the COMMIT failed with no answer from the server (lost)
}

// write runs fn in one READ COMMITTED transaction and commits it, retrying
// the whole transaction on a serialization failure or a deadlock (rule 41
// in docs/rules.md), and answers with what the transaction did. A
// transaction whose context ended before COMMIT is rolled back, never
// committed, and the call answers ctx's error. A context that ends while a
// statement or the COMMIT runs gives it answerWait more to answer, as
// answered gives an enqueue's statement, so that the call still returns
// soon after ctx ends while the server does not answer (rule 24). A COMMIT
// that fails without the server's answer — cut short by ctx, or its
// connection lost — may have been carried out by the server all the same:
// the call then finds out whether the transaction committed (committed),
// and answers fn's result and nil if it did; if not, ctx's error once ctx
// has ended, else the COMMIT's; and, when even that read gets no answer,
// that it is not known. A caller told "failed" of a call that committed
// would do its work twice.
func write[T any](ctx context.Context, e *Engine, fn txFunc[T]) (T, error) {
	var zero T
	a, err := retry(ctx, e.db, func() (attempt[T], error) { return tryTx(ctx, e, fn) })
	if !a.unsure {
		if err != nil {
			return zero, interpretError(err)
		}
		return a.out, nil
	}
	done, ferr := findOut(ctx, func(fctx context.Context) (bool, error) { return e.committed(fctx, a.mark, a.xid, a.start) })
	switch {
	case ferr != nil:
		return zero, outcomeUnknown(ctx, err, ferr)
	case done:
		return a.out, nil
	case ctx.Err() != nil:
		return zero, ctx.Err()
	}
	return zero, interpretError(err)
}

// lostWait bounds the look-up of what a call whose connection was lost
// did, tried again while the server does not answer (a server restarting).
const lostWait = 5 * time.Second

// findOut runs find, the read that tells what a call cut short did, until
// it answers: within lostWait, and no longer than answerWait after ctx
// ends (rule 24). An errUnknowable answer is final.
func findOut[T any](ctx context.Context, find func(ctx context.Context) (T, error)) (T, error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lostWait)
	defer cancel()
	late := context.AfterFunc(ctx, func() { time.AfterFunc(answerWait, cancel) })
	defer late()
	for n := 0; ; n++ {
		v, err := find(fctx)
		if err == nil || errors.Is(err, errUnknowable) || fctx.Err() != nil {
			return v, err
		}
		t := time.NewTimer(faultDelay(n, 0) / 10)
		select {
		case <-t.C:
		case <-fctx.Done():
			t.Stop()
			return v, err
		}
	}
}

// errUnknowable is the answer of a look-up that cannot tell.
var errUnknowable = errors.New("the server cannot tell")

// lost reports whether err, a statement's or a COMMIT's, came without the
// server's answer, so that the server may have carried the statement out:
// any error but the server's own (a SQLSTATE, a taken ID) or no row. The server's
// errors of a connection it ends (class 08, and 57P: shutdown, crash,
// terminated) are no answer either: a backend terminated as its COMMIT
// completes, or in a crash restart, sends one of them for a COMMIT it
// carried out. The driver's word that nothing was sent is not taken:
// pgx answers a COMMIT whose answer was lost with "conn closed", as it
// does one never sent.
func lost(err error) bool {
	if err == nil || errors.Is(err, sql.ErrNoRows) || errors.Is(err, engine.ErrDuplicate) {
		return false
	}
	s := sqlState(err)
	return s == "" || strings.HasPrefix(s, "08") || strings.HasPrefix(s, "57P")
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
		err = tx.QueryRowContext(sctx, stmt("mark"), a.mark).Scan(&a.xid, &a.start)
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
		a.unsure = lost(err)
		return struct{}{}, err
	})
	return a, err
}

// committed reports whether the transaction of write a, with its mark,
// committed: one read, which waits for the transaction to end first — a
// COMMIT the server has not yet carried out may still be. Each transaction
// of write ends in its own COMMIT or abort, so the status of its ID says
// exactly whether the call was written, whatever happened to its rows
// since — unless the server restarted since the transaction began: an ID
// not yet durable at the crash is given again, so "committed" may be
// another transaction's then (errUnknowable), while "aborted" is still
// this one's.
func (e *Engine) committed(ctx context.Context, mark int64, xid, start string) (bool, error) {
	var status sql.NullString
	var restarted bool
	if err := e.db.QueryRowContext(ctx, stmt("committed"), mark, xid, start).Scan(&status, &restarted); err != nil {
		return false, err
	}
	switch {
	case status.String == "aborted":
		return false, nil
	case status.String == "committed" && !restarted:
		return true, nil
	case restarted:
		return false, fmt.Errorf("%w: the server restarted since the transaction began", errUnknowable)
	}
	return false, fmt.Errorf("%w: transaction %s is %q", errUnknowable, xid, status.String)
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
// (a server that does not answer), or its connection lost with no answer
// (lost), the call reads whether the statement's
// rows are there (found, within answerWait again) and answers found's
// result if they are, ctx's error if not; when even that read gets no
// answer, it says that whether anything was written is not known, without
// ctx's error. A wait for a connection heeds ctx: nothing was sent then.
func answered[T any](ctx context.Context, e *Engine, write txFunc[T], found func(ctx context.Context) (T, bool, error)) (T, error) {
	var zero T
	a, err := retry(ctx, e.db, func() (cutAnswer[T], error) {
		conn, err := e.db.Conn(ctx)
		if err != nil {
			return cutAnswer[T]{}, err
		}
		defer conn.Close()
		out, cut, err := graced(ctx, func(sctx context.Context) (T, error) { return write(sctx, conn) })
		return cutAnswer[T]{out, cut || lost(err)}, err
	})
	if !a.cut {
		return a.out, interpretError(err)
	}
	type seen struct {
		out   T
		there bool
	}
	s, ferr := findOut(ctx, func(fctx context.Context) (seen, error) {
		out, there, err := found(fctx)
		return seen{out, there}, err
	})
	switch {
	case ferr != nil:
		return zero, outcomeUnknown(ctx, err, ferr)
	case s.there:
		return s.out, nil
	case ctx.Err() != nil:
		return s.out, ctx.Err()
	}
	return s.out, interpretError(err)
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

// outcomeUnknown is the answer of a call cut short (by ctx, or by cause, its
// lost connection) whose read of
// what happened failed with err. Neither error is wrapped: the call may
// have been written, and a caller that took ctx's error for "nothing
// happened" would be misled.
func outcomeUnknown(ctx context.Context, cause, err error) error {
	if ctx.Err() != nil {
		cause = ctx.Err()
	}
	return fmt.Errorf("%v, and the read that finds out what the call did failed; whether the call was written is not known (%v)", cause, err)
}

// read runs a read on the *sql.DB, retried as write's transactions are.
func read[T any](ctx context.Context, e *Engine, fn func(ctx context.Context, db engine.Execer) (T, error)) (T, error) {
	v, err := retry(ctx, e.db, func() (T, error) { return fn(ctx, e.db) })
	return v, interpretError(err)
}
