package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/leaseq/leaseq/internal/engine"
)

// Group commit: one commit costs the same four fsyncs whether it carries one
// job or a hundred (about 1.4 ms with journal_mode=DELETE and
// synchronous=FULL), so a queue that commits once per call cannot go past
// roughly 700 calls a second however fast its queries are. When many
// goroutines of one process call Enqueue, Claim or Finish at once, their
// calls wait in a list; one committer takes up to MaxGroupOps of them, runs
// them one after the other in a single transaction of writeTx, commits
// once, and hands every caller its own result.
//
// Each call keeps the meaning it has alone:
//
//   - It returns only after the transaction holding it committed. If the
//     transaction fails, every call in it gets the error, and none of them
//     took effect: the transaction was rolled back whole.
//   - Its own outcome is its own. A duplicate ID is a failed INSERT, which
//     SQLite undoes statement by statement without touching the rest of the
//     transaction, so it is that call's ErrDuplicate alone. Bad input never
//     gets this far: it is refused before the call joins the list. Any other
//     error from a statement (I/O, disk full, an interrupt) may have rolled
//     back the whole transaction inside SQLite, so it fails every call in it.
//   - Claim and Finish read the clock when their statements run, under the
//     lock, exactly as alone; a Claim and a Finish of the same job in one
//     transaction run in arrival order and see each other's writes.
//
// Contexts. A context cancelled in the middle of a statement makes SQLite
// roll back the whole transaction, which here holds other callers' work too.
// So the committer never runs a statement, BEGIN or COMMIT on a caller's
// context: it runs them on its own context, which nobody cancels, and looks
// at each caller's context only between statements. A caller whose context
// ends while its call is still in the list (this includes the time the
// committer waits for the file lock, since calls are taken from the list
// only once BEGIN IMMEDIATE has succeeded) leaves the list at once and gets
// its context's error; nothing of it was written. Once the committer has
// taken the call into a running transaction, the caller waits for that
// transaction's end, at most MaxGroupOps short statements and one COMMIT
// away, and the rule is writeTx's: a call whose context ended before COMMIT
// is not committed. If it had not run yet it is skipped; if it had, its
// statements cannot be undone alone, so the transaction is rolled back
// whole and the other calls run again in the next one (errRegroup). Either
// way the caller gets its context's error and nothing of its call was
// written. A context that ends during COMMIT is too late, as in writeTx: the
// call committed and reports its result.
//
// Other processes. The committer holds the write lock for one bounded
// transaction at a time and takes it again like any other writer, so other
// processes get their turn between two groups.

// MaxGroupOps bounds the calls in one shared transaction, so that the write
// lock is released every few milliseconds for other processes and the first
// caller in a group does not wait behind an unbounded tail. Exported for
// the root's tests that fill a group.
const MaxGroupOps = 128

// groupOp is one call waiting for, or running in, a shared transaction.
type groupOp struct {
	ctx context.Context
	// run does the call's work in the shared transaction. It may run more
	// than once (a transaction that hit SQLITE_BUSY is retried); its result
	// is v once done is closed.
	run txFunc[any]
	// idle, if set, is asked before the transaction begins; a call it
	// reports idle is answered errIdle without joining a write
	// transaction. Calls with the same idleKey (their queue) and the same
	// instant of now, if set, share one answer.
	idle    idleFunc
	idleKey any
	now     func() int64
	// busy means the idle check found the call's queue with work to do in
	// the current round, so the call may join the transaction; guarded by
	// group.mu. A call with an idle check joins none before it has been
	// asked: one that arrived while the transaction began may be idle.
	busy  bool
	state opState // guarded by group.mu
	v     any     // the call's result, set before done is closed
	err   error   // the call's outcome, set before done is closed
	ran   bool    // run was called in the current transaction
	// waited is the SQLITE_BUSY that the last transaction the call ran in
	// and that was tried again met (rule 47 in docs/rules.md); guarded by
	// group.mu.
	waited error
	done   chan struct{}
}

// opState is where a groupOp is; it decides whether the caller may still
// walk away.
type opState int

const (
	opWaiting opState = iota // in the list; the caller may leave
	opRunning                // taken into a transaction; the caller waits for it
	opLeft                   // the caller left, or the outcome was delivered
)

// group is the list of waiting calls and whether a committer is working it.
type group struct {
	mu      sync.Mutex
	waiting []*groupOp
	running bool // a committer goroutine is active
	// answered counts the calls answered in the committer's current round,
	// for the next round's gather.
	answered int
	// waited is the SQLITE_BUSY the committer's last try met, until a
	// transaction commits: what a caller that leaves the list waited for
	// (rule 47 in docs/rules.md). locking: the committer is beginning a
	// transaction, which waits for the lock.
	waited  error
	locking bool
}

// grouped reports whether a call of q that share allows to share its
// transaction goes to the group-commit list: a single call, with group
// commit on (Options.DisableGroupCommit off). The others go straight to
// writeTx.
func grouped(q engine.Queue, share engine.Sharing) bool {
	return share != engine.ShareNone && !q.NoGroup
}

// groupTx runs fn as one call of a shared write transaction of e, committed
// by the group's committer through writeTx. fn gets the context its
// statements must run on: the committer's. idle, if not nil, may answer the
// call from a read instead (errIdle).
func groupTx[T any](ctx context.Context, e *Engine, q engine.Queue, idle idleFunc, fn txFunc[T]) (T, error) {
	v, _, err := groupTxWaited(ctx, e, q, idle, fn)
	return v, err
}

// groupTxWaited is groupTx, and the SQLITE_BUSY that a transaction the call
// ran in before the one that answered it met (nil: none), for an answer
// that its context ended to say what the call waited for (TxRun).
func groupTxWaited[T any](ctx context.Context, e *Engine, q engine.Queue, idle idleFunc, fn txFunc[T]) (T, error, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, nil, err
	}
	op := &groupOp{ctx: ctx, idle: idle, idleKey: q.Name, now: q.Clock.Now, done: make(chan struct{}),
		run: func(ctx context.Context, tx engine.Execer) (any, error) { return fn(ctx, tx) }}
	v, err := e.group.join(e, op)
	e.group.mu.Lock()
	waited := op.waited
	e.group.mu.Unlock()
	t, _ := v.(T)
	return t, waited, err
}

// join puts op in the list, starts a committer if none runs, and waits for
// op's outcome, or for its context to end while it is still in the list.
func (g *group) join(e *Engine, op *groupOp) (any, error) {
	g.mu.Lock()
	g.waiting = append(g.waiting, op)
	if !g.running {
		g.running = true
		go e.commitGroups()
	}
	g.mu.Unlock()

	select {
	case <-op.done:
		return op.v, op.err
	case <-op.ctx.Done():
	}
	g.mu.Lock()
	if op.state == opWaiting {
		op.state = opLeft // the committer skips it
		waited, locking := g.waited, g.locking
		g.mu.Unlock()
		if waited != nil || locking {
			return nil, lockWaitError(op.ctx.Err(), waited)
		}
		if err := e.writeWait(op.ctx.Err()); err != op.ctx.Err() {
			return nil, err // the committer waits for the pool, or for the file's lock to read it
		}
		return nil, fmt.Errorf("waiting in line for a shared commit of this process's writer, busy with other calls: %w", op.ctx.Err())
	}
	g.mu.Unlock()
	<-op.done
	return op.v, op.err
}

// commitGroups is the committer: it commits groups until the list is empty.
// It is a goroutine of its own rather than one of the callers, so that no
// caller's context or return is tied to other callers' work.
func (e *Engine) commitGroups() {
	g := &e.group
	last := 0
	for {
		g.gather(last)
		g.mu.Lock()
		g.prune()
		if len(g.waiting) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		last = e.commitGroup()
	}
}

// gatherYields bounds how often the committer yields while it gathers a
// group: a few microseconds each, nothing next to a commit.
const gatherYields = 32

// gather lets the callers just answered run until as many calls wait as were
// in the last group, or gatherYields yields have passed. Those callers
// usually call again at once (a Claim is followed by a Finish); taking the
// next group before they have would split it into two half-full commits.
func (g *group) gather(want int) {
	for range gatherYields {
		runtime.Gosched()
		g.mu.Lock()
		g.prune()
		n := len(g.waiting)
		g.mu.Unlock()
		if n >= want {
			return
		}
	}
}

// commitGroup commits one group through writeTx, which retries it on
// SQLITE_BUSY, and returns how many calls it answered. Between tries the
// calls of the failed try are back in the list, where their callers may
// leave; a retry takes whoever is still waiting. An error before any call
// was taken (the database was closed, no connection could be had) is every
// waiting call's answer: the committer must never go round again with
// nobody answered.
func (e *Engine) commitGroup() int {
	g := &e.group
	ops, err := writeTx(context.Background(), e, write[[]*groupOp]{ // see "Contexts" above
		idle: g.idle,
		run:  g.runReady,
		busy: func(ops []*groupOp, err error) bool { g.sawBusy(err); g.putBack(ops); return g.hasWaiting() },
	})
	g.mu.Lock()
	g.locking = false
	if !isBusy(err) {
		g.waited = nil // the lock was had, or the error is another
	}
	g.mu.Unlock()
	switch {
	case errors.Is(err, errIdle), isBusy(err):
		// Nobody ready, or everyone left while the lock was busy: the
		// calls of the last try are back in the list already.
	case err == nil:
		g.deliver(ops, nil)
	case errors.Is(err, errRegroup):
		g.putBack(ops) // at once: the lock is free, nobody to wait for
	case ops == nil:
		g.deliver(g.take(), err)
	default:
		g.deliver(ops, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.answered
	g.answered = 0
	return n
}

// idle is the group's idle check: it answers the waiting calls that are
// idle (answerIdle), and finds the group idle when no call is left that
// may join a transaction now.
func (g *group) idle(ctx context.Context, db engine.Execer) (bool, error) {
	if _, err := g.answerIdle(ctx, db); err != nil {
		return false, err
	}
	idle := !g.hasReady()
	g.mu.Lock()
	g.locking = !idle // BEGIN IMMEDIATE comes next
	g.mu.Unlock()
	return idle, nil
}

// runReady is the group's transaction: it takes the calls that may join,
// runs them, and ends the transaction with errRegroup when a call that ran
// has a context that ended since.
func (g *group) runReady(ctx context.Context, tx engine.Execer) ([]*groupOp, error) {
	g.mu.Lock()
	g.locking = false // the lock is held
	g.mu.Unlock()
	ops := g.takeReady()
	if err := g.runOps(ctx, tx, ops); err != nil {
		return ops, err
	}
	if cancelledAfterRunning(ops) {
		return ops, errRegroup
	}
	return ops, nil
}

// idleAt is the key under which calls share an idle check's answer: their
// queue, at the instant their clock reads.
type idleAt struct {
	key any
	now int64
}

// key is the key of op's idle check, read once per round.
func (op *groupOp) key() any {
	if op.now == nil {
		return op.idleKey
	}
	return idleAt{op.idleKey, op.now()}
}

// answerIdle asks the idle check of every waiting call that has one, once
// per key (the calls of one queue and instant share it), and answers the
// calls found idle, so that a group of idle Claims never takes the write
// lock. It returns how many it answered.
func (g *group) answerIdle(ctx context.Context, db engine.Execer) (int, error) {
	g.mu.Lock()
	var probes []*groupOp
	for _, op := range g.waiting {
		if op.state == opWaiting && op.idle != nil {
			probes = append(probes, op)
		}
	}
	g.mu.Unlock()
	if len(probes) == 0 {
		return 0, nil
	}
	keys := make([]any, len(probes))
	idle := make(map[any]bool)
	for i, op := range probes {
		keys[i] = op.key()
		if _, asked := idle[keys[i]]; asked {
			continue
		}
		v, err := op.idle(ctx, db)
		if err != nil {
			return 0, err
		}
		idle[keys[i]] = v
	}
	return g.answerProbes(probes, keys, idle), nil
}

// answerProbes marks the probed calls that still wait busy or answers them
// idle, by the answers of their keys, and returns how many it answered.
func (g *group) answerProbes(probes []*groupOp, keys []any, idle map[any]bool) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for i, op := range probes {
		if op.state != opWaiting {
			continue
		}
		op.busy = !idle[keys[i]]
		if !op.busy {
			op.state, op.err = opLeft, errIdle
			close(op.done)
			n++
		}
	}
	g.answered += n
	g.prune()
	return n
}

// errRegroup ends a shared transaction in which a call ran whose context
// has since ended. That call must not commit, as it would not alone (writeTx
// never commits once its context is done), but its statements cannot be
// taken back on their own: the transaction is rolled back whole and the
// other calls run again in the next one.
var errRegroup = errors.New("leaseq: a caller left the group; running it again without")

// cancelledAfterRunning reports whether a call that ran in this transaction
// has a context that ended since.
func cancelledAfterRunning(ops []*groupOp) bool {
	for _, op := range ops {
		if op.ran && op.ctx.Err() != nil {
			return true
		}
	}
	return false
}

// runOps runs the taken calls in order. A call whose context ended before its
// turn is skipped, its context's error its outcome (saying it waited for
// the write lock if an earlier transaction it was taken into met
// SQLITE_BUSY: rule 47 in docs/rules.md). ErrDuplicate is the call's own
// outcome; any other error ends the transaction.
func (g *group) runOps(ctx context.Context, tx engine.Execer, ops []*groupOp) error {
	for _, op := range ops {
		if err := op.ctx.Err(); err != nil {
			op.err = g.leftErr(op, err)
			continue
		}
		op.ran = true
		op.v, op.err = op.run(ctx, tx)
		if op.err != nil && !errors.Is(op.err, engine.ErrDuplicate) {
			if op.ctx.Err() != nil {
				// Its caller left, and SQLite may have rolled the
				// transaction back with its interrupted statement: the
				// others run again without it, as they would have.
				return errRegroup
			}
			return op.err
		}
	}
	return nil
}

// take moves up to MaxGroupOps waiting calls, in arrival order, into a
// running transaction.
func (g *group) take() []*groupOp {
	return g.takeIf(func(*groupOp) bool { return true })
}

// takeReady is take for the calls that may join a transaction now (see
// ready); the others keep their places.
func (g *group) takeReady() []*groupOp { return g.takeIf(ready) }

// ready reports whether op may join a write transaction now: it has no idle
// check, or its check found work. g.mu must be held.
func ready(op *groupOp) bool { return op.idle == nil || op.busy }

// takeIf moves up to MaxGroupOps waiting calls for which ok holds, in
// arrival order, into a running transaction.
func (g *group) takeIf(ok func(*groupOp) bool) []*groupOp {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune()
	ops := []*groupOp{}
	kept := g.waiting[:0]
	for _, op := range g.waiting {
		if len(ops) < MaxGroupOps && ok(op) {
			op.state = opRunning
			ops = append(ops, op)
			continue
		}
		kept = append(kept, op)
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
	return ops
}

// putBack puts the calls of a transaction that did not commit back at the
// head of the list, in their order, where their callers may leave. A call
// whose context already ended is answered with its context's error instead
// (saying it waited for the lock when its try met SQLITE_BUSY): its caller
// may be blocked waiting for it, and nothing of it was written.
func (g *group) putBack(ops []*groupOp) {
	if len(ops) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	back := make([]*groupOp, 0, len(ops))
	for _, op := range ops {
		if err := op.ctx.Err(); err != nil {
			op.v, op.err, op.state = nil, g.leftErrLocked(op, err), opLeft
			close(op.done)
			continue
		}
		op.state, op.v, op.err, op.ran = opWaiting, nil, nil, false
		if g.waited != nil {
			op.waited = g.waited
		}
		back = append(back, op)
	}
	g.waiting = append(back, g.waiting...)
}

// leftErr is the outcome of op, taken into a transaction, whose context
// ended, cause, before it could commit: cause, saying that the call waited
// for the write lock when the committer's last try, or an earlier
// transaction op was taken into, met SQLITE_BUSY (rule 47).
func (g *group) leftErr(op *groupOp, cause error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leftErrLocked(op, cause)
}

// leftErrLocked is leftErr with g.mu held.
func (g *group) leftErrLocked(op *groupOp, cause error) error {
	switch {
	case g.waited != nil:
		return lockWaitError(cause, g.waited)
	case op.waited != nil:
		return lockWaitError(cause, op.waited)
	}
	return cause
}

// deliver hands every call of a finished transaction its outcome: its own
// if the transaction committed, the transaction's error if it did not (then
// none of the calls took effect, unless the error says the outcome is
// unknown). It returns how many it answered.
func (g *group) deliver(ops []*groupOp, txErr error) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, op := range ops {
		if txErr != nil {
			op.err = txErr
		}
		op.state = opLeft
		close(op.done)
	}
	g.answered += len(ops)
	return len(ops)
}

// sawBusy records what the committer's last try met: err, SQLITE_BUSY, or
// nil once a transaction committed.
func (g *group) sawBusy(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waited, g.locking = err, false
}

// hasReady reports whether a waiting call may join a transaction now.
func (g *group) hasReady() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune()
	return slices.ContainsFunc(g.waiting, ready)
}

// hasWaiting reports whether any caller still waits in the list.
func (g *group) hasWaiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.prune()
	return len(g.waiting) > 0
}

// prune drops the calls whose callers left. g.mu must be held.
func (g *group) prune() {
	kept := g.waiting[:0]
	for _, op := range g.waiting {
		if op.state == opWaiting {
			kept = append(kept, op)
		}
	}
	clear(g.waiting[len(kept):])
	g.waiting = kept
}
