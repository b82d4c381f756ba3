package leaseq

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
)

// engine is what differs between the databases a Queue runs on: how a
// call's statements run and commit, and their SQL. SQLite has one writer per
// file, so its engine ([store], tx.go, group.go) takes turns in-process,
// begins IMMEDIATE transactions, retries SQLITE_BUSY and gathers concurrent
// calls into shared commits. PostgreSQL has many writers and row locks, so
// its engine (postgres.go) runs each call as one statement or one short
// transaction on the pool and claims with FOR UPDATE SKIP LOCKED.
//
// Everything above the seam is shared: validation, the clock, errors,
// wake-ups, the rules' wording, [Queue.Process] and [Queue.Work]. A method
// here gets input that is already valid, and returns the database's error
// unwrapped; the Queue method names the call around it. Reads share their
// SQL (written with ?N placeholders, which the PostgreSQL engine rewrites);
// writes have each engine's own.
type engine interface {
	// migrate creates the schema or upgrades an older one; safe when
	// several processes or hosts do it at once.
	migrate(ctx context.Context) error
	// schemaVersion reads the database's schema version (0: none) without
	// writing.
	schemaVersion(ctx context.Context) (int, error)
	// schemaCurrent is the schema version this package writes on the
	// engine: SchemaVersion on SQLite; PostgreSQL's numbers run on their
	// own, as its schema changed without SQLite's.
	schemaCurrent() int
	// enqueue writes jobs at now, all or nothing. bad is the index of the
	// job that failed (ErrDuplicate, or an error of its INSERT), else -1.
	// one is a single Enqueue, which may share a transaction with other
	// calls.
	enqueue(ctx context.Context, q *Queue, jobs []Job, now int64, one bool) (bad int, err error)
	// insert writes one job at now on tx, the caller's transaction
	// (EnqueueTx): ErrDuplicate for a taken ID, with tx still usable.
	insert(ctx context.Context, tx execer, q *Queue, j Job, now int64) error
	// identify reads and keeps what tells the engine's database apart from
	// others (New, once the schema is there), for foreign.
	identify(ctx context.Context) error
	// foreign says why tx, a caller's transaction (EnqueueTx), is not on
	// the engine's database, or "" when it is or the engine cannot tell.
	// It runs one cheap read on tx.
	foreign(ctx context.Context, tx *sql.Tx) (why string, err error)
	// claim leases up to max claimable jobs to owner (rules 1, 6 and 39):
	// none, and a nil error, when nothing is claimable.
	claim(ctx context.Context, q *Queue, owner string, lease time.Duration, max int, share sharing) ([]Claim, error)
	// settle runs fenced calls, all in one transaction at one instant, and
	// reports for each whether its fence matched.
	settle(ctx context.Context, q *Queue, fs []fenced, share sharing) ([]settled, error)
	// operate runs an operator's unfenced update of one job (Requeue,
	// Cancel); when it matched no row, the row as it is says why.
	operate(ctx context.Context, q *Queue, o operation) (refusal, error)
	// purgeChunk deletes at most purgeChunk jobs of status st whose last
	// change is before before, in a transaction of its own.
	purgeChunk(ctx context.Context, q *Queue, st Status, before int64) (int, error)
	// read runs a read on the pool; its statements use ?N placeholders.
	read(ctx context.Context, fn func(db execer) error) error
	// serverClock is the clock of a Queue without one of its own when the
	// engine keeps time on the database server (rule 40), shared by the
	// engine's Queues; nil means the host's clock.
	serverClock() Clock
	// usable is the error of a call on a database that was closed, or nil.
	usable() error
	db() *sql.DB
	wakers() *wakers
	// release ends one Queue's use of the engine (Queue.Close).
	release()
}

// sharing says whether a call may share its transaction with other calls.
type sharing int

const (
	// shareNone: a transaction of its own (a batch is a group already).
	shareNone sharing = iota
	// shareCalls: a single call, which may join other single calls'
	// transaction (SQLite's group commit; on PostgreSQL, its own
	// statement).
	shareCalls
	// sharePool: a worker pool's claim or finish, which on PostgreSQL too
	// is gathered with the other pool calls of its queue into one
	// statement (postgres_pool.go).
	sharePool
)

// fenceKind is which fenced call a fenced statement is.
type fenceKind int

const (
	fenceFinish fenceKind = iota
	fenceExtend
	fenceRelease
	fenceFail
)

// fenced is one fenced call on the claim c: which call, and its own
// arguments in the order its statement takes them after the fence's (see
// fence.go).
type fenced struct {
	c    Claim
	kind fenceKind
	args []any
}

// settled is the outcome of one fenced call: whether the fence matched, and
// the lease end the row was left with (only Extend reports it).
type settled struct {
	ok         bool
	leaseUntil int64
}

// operation is an operator's call on one job by ID.
type operation struct {
	kind   operationKind
	id     string
	reason string // Cancel's, cleaned
}

type operationKind int

const (
	opRequeue operationKind = iota
	opCancel
)

// refusal is what an operator's update that matched no row found instead:
// found is false for an unknown ID; otherwise the row's status and
// deadline at the instant now the update was judged at. An update that
// matched is the zero refusal with applied set.
type refusal struct {
	applied  bool
	found    bool
	status   Status
	deadline sql.NullInt64
	now      int64
}

// openEngine returns the engine for db, shared by every open Queue on it:
// SQLite for modernc's driver, PostgreSQL for a database/sql driver whose
// server says it is PostgreSQL (pgx's stdlib, lib/pq and the like; the
// package imports none of them).
func openEngine(ctx context.Context, db *sql.DB) (engine, error) {
	if _, ok := db.Driver().(*sqlite.Driver); ok {
		file, err := fileProblem(ctx, db)
		if err != nil {
			return nil, err
		}
		return openStore(db, file), nil
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&version); err != nil {
		return nil, fmt.Errorf("asking the %T database for its version: %w", db.Driver(), err)
	}
	if !strings.HasPrefix(version, "PostgreSQL ") {
		return nil, invalid("database driver %T is neither modernc.org/sqlite nor a PostgreSQL driver (server: %q)",
			db.Driver(), version)
	}
	return openPostgres(db), nil
}

// serverClock is a Queue's clock when it has none of its own and its
// engine keeps time on the database server (rule 40). The statements that
// judge leases read the server's clock themselves (Queue.nowArg), and so do
// the transactions of the calls that store an instant of their own (txNow).
// This is for the rest: the enqueue time and the validation of an Enqueue's
// deadline, Stats' split of due and scheduled jobs, and how long a worker's
// timers run. It is this host's clock corrected by the server's offset from
// it, measured by a reading of the server's clock, so that these uses cost
// no round trip each; it lags the server's by up to a round trip. Only the
// first reading (New takes it) is waited for; after that a reading older
// than serverClockRefresh is renewed in the background while the last
// estimate goes on serving, so that no call waits for a connection for it
// — a pool whose only connection the caller holds (EnqueueTx) has none to
// give, and a server that stopped answering would hold every caller up.
// Until the server has been read once, and while it cannot be, the host's
// clock stands in (a call that then writes fails on the same unreachable
// server).
type serverClock struct {
	e          *pgEngine
	mu         sync.Mutex
	offset     time.Duration // server minus host
	read       time.Time     // when offset was measured; zero: never
	refreshing bool          // a reading runs in the background
}

// Bounds of serverClock's readings of the server.
const (
	serverClockRefresh = time.Second
	serverClockWait    = 5 * time.Second
)

func (c *serverClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.read.IsZero():
		c.measured(c.measure())
	case time.Since(c.read) >= serverClockRefresh && !c.refreshing:
		c.refreshing = true
		go func() {
			ms, after, err := c.measure()
			c.mu.Lock()
			defer c.mu.Unlock()
			c.refreshing = false
			c.measured(ms, after, err)
		}()
	}
	return time.Now().Add(c.offset)
}

// measure reads the server's clock, and the host's just after.
func (c *serverClock) measure() (ms int64, after time.Time, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), serverClockWait)
	defer cancel()
	ms, err = c.e.now(ctx)
	return ms, time.Now(), err
}

// measured keeps a reading taken without error; c.mu is held.
func (c *serverClock) measured(ms int64, after time.Time, err error) {
	if err == nil {
		// Against the host's clock after the reading, never before it:
		// the estimate then lags the server's clock (by the reply's
		// trip and the millisecond the reading was truncated to) and
		// never runs ahead of it, so a worker's timer for a lease end
		// fires at the end or just after, not before it.
		c.offset = fromMillis(ms).Sub(after)
		c.read = after
	}
}
