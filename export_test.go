package leaseq

import (
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
