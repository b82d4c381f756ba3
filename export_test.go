package leaseq

import (
	"sync"
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
