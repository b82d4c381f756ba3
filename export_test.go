package leaseq

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/postgres"
	"github.com/leaseq/leaseq/internal/sqlite"
)

// WaitingCalls reports how many calls wait in the group-commit list of the
// queue's SQLite engine, so that a test can make sure they have all queued
// up before it lets the committer take the lock.
func (q *Queue) WaitingCalls() int { return q.e.(*sqlite.Engine).WaitingCalls() }

// MaxGroupOps is the most calls in one shared SQLite transaction, for tests
// that fill a group.
const MaxGroupOps = sqlite.MaxGroupOps

// SetWriteConnIdle sets how long the SQLite engine keeps its write
// connection pinned while idle, for one test, and returns the function that
// restores it.
func SetWriteConnIdle(d time.Duration) (restore func()) { return sqlite.SetWriteConnIdle(d) }

// PGClaimSQL is the statement a PostgreSQL Claim runs in its transaction.
var PGClaimSQL = postgres.Statements()["claim"].SQL

// timedHooks are the functions OnTimedPass registered, by loop and owner.
var timedHooks sync.Map

// OnTimedPass registers f to be called after each pass of the periodic
// ("periodic") or retention ("retention") loop of every pool whose Owner is
// owner, with the instant the pass judged at, and returns the function
// that removes it. Owners keep the tests that run at once apart.
func OnTimedPass(loop, owner string, f func(now time.Time)) (remove func()) {
	dispatch := func(loop, owner string, now time.Time) {
		if h, ok := timedHooks.Load(loop + "\x00" + owner); ok {
			h.(func(time.Time))(now)
		}
	}
	timedPassHook.CompareAndSwap(nil, &dispatch)
	timedHooks.Store(loop+"\x00"+owner, f)
	return func() { timedHooks.Delete(loop + "\x00" + owner) }
}

// TxTimes is how long the parts of one SQLite write transaction took.
type TxTimes = sqlite.TxTimes

// ObserveTxs has f told the TxTimes of every SQLite write transaction from
// now on, and returns the function that stops it.
func ObserveTxs(f func(TxTimes)) (restore func()) { return sqlite.ObserveTxs(f) }

// PGSchemaCurrent is the PostgreSQL schema version this leaseq writes.
const PGSchemaCurrent = postgres.SchemaCurrent

// LeaseCheckRacer is a ManualClock that, once armed, moves itself onto an
// instant right after a worker pool's loop read it to look for ended
// leases: a Set that lands between that read and the loop's wait.
type LeaseCheckRacer struct {
	*ManualClock
	to    atomic.Pointer[time.Time]
	moved atomic.Bool
}

// NewLeaseCheckRacer returns a LeaseCheckRacer that reads t until moved.
func NewLeaseCheckRacer(t time.Time) *LeaseCheckRacer {
	return &LeaseCheckRacer{ManualClock: NewManualClock(t)}
}

// MoveAfterLeaseCheck arms c: the next read of a loop's lease check moves
// c to t once it has read it.
func (c *LeaseCheckRacer) MoveAfterLeaseCheck(t time.Time) { c.to.Store(&t) }

// Moved reports whether an armed move was made.
func (c *LeaseCheckRacer) Moved() bool { return c.moved.Load() }

// Now reads the clock, then makes the armed move if a lease check reads it.
func (c *LeaseCheckRacer) Now() time.Time {
	now := c.ManualClock.Now()
	if calledBy("leaseq.(*pool).fireEnds") {
		if to := c.to.Swap(nil); to != nil {
			c.ManualClock.Set(*to)
			c.moved.Store(true)
		}
	}
	return now
}

// calledBy reports whether fn (package-qualified) is on the caller's stack.
func calledBy(fn string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for f, more := frames.Next(); ; f, more = frames.Next() {
		if strings.HasSuffix(f.Function, "/"+fn) {
			return true
		}
		if !more {
			return false
		}
	}
}

// heldCheckHooks are the functions OnHeldCheck registered, by owner.
var heldCheckHooks sync.Map

// OnHeldCheck registers f to be called by each check of the running claims
// of every pool whose Owner is owner, between the check's snapshot of them
// and its read, and returns the function that removes it.
func OnHeldCheck(owner string, f func()) (remove func()) {
	dispatch := func(owner string) {
		if h, ok := heldCheckHooks.Load(owner); ok {
			h.(func())()
		}
	}
	heldCheckHook.CompareAndSwap(nil, &dispatch)
	heldCheckHooks.Store(owner, f)
	return func() { heldCheckHooks.Delete(owner) }
}

// SQLiteSchema is the create script New hands the SQLite engine: the
// embedded schema.sql.
var SQLiteSchema = sqliteSchema
