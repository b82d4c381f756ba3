// Package engine is the seam between leaseq's calls and the databases they
// run on: the interface each engine (internal/sqlite, internal/postgres)
// implements, and the plain rows that cross it. Nothing here knows a
// leaseq.Queue: a call passes what the engine needs by value (the queue's
// name, its clock, the rows already validated), so an engine never calls
// back into the queue.
//
// A method gets input the root package has validated, and returns the
// database's error mapped by the engine's interpretError (ErrDuplicate,
// ErrClosed, or the driver's error unwrapped); the root names the call
// around it. Instants cross the seam as Unix milliseconds.
package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Engine is what differs between the databases a Queue runs on. One Engine
// serves every Queue open on one *sql.DB.
type Engine interface {
	// SchemaMigrate creates the schema or upgrades an older one; safe when
	// several processes or hosts do it at once.
	SchemaMigrate(ctx context.Context) error
	// SchemaVersion reads the database's schema version (0: none) without
	// writing.
	SchemaVersion(ctx context.Context) (int, error)
	// SchemaCurrent is the schema version this package writes on the
	// engine.
	SchemaCurrent() int

	// JobInsertMany writes jobs, all or nothing (Enqueue, EnqueueBatch).
	// bad is the index of the job that failed (ErrDuplicate, or an error of
	// its INSERT), else -1.
	JobInsertMany(ctx context.Context, p JobInsertManyParams) (bad int, err error)
	// JobInsertTx writes jobs on tx, the caller's transaction (EnqueueTx),
	// under a savepoint: on an error none of them is written and tx is
	// still usable. bad is as in JobInsertMany.
	JobInsertTx(ctx context.Context, tx *sql.Tx, p JobInsertTxParams) (bad int, err error)
	// DatabaseProblem says what, beyond the schema, keeps the queue from
	// running on the database, or "": on SQLite a journal mode the queue
	// does not run in (rule 26; the old checkSchema's journalProblem, with
	// its busy retry), on PostgreSQL nothing. A read-only Queue asks it
	// (Options.ReadOnly), as a write would find it out.
	DatabaseProblem(ctx context.Context) (why string, err error)
	// DatabaseIdentify reads and keeps what tells the engine's database
	// apart from others (New, once the schema is there), for
	// DatabaseForeign.
	DatabaseIdentify(ctx context.Context) error
	// DatabaseForeign says why tx, a caller's transaction, is not on the
	// engine's database, or "" when it is or the engine cannot tell. It
	// runs one cheap read on tx.
	DatabaseForeign(ctx context.Context, tx *sql.Tx) (why string, err error)

	// JobClaim leases up to Max claimable jobs to Owner: none, and a nil
	// error, when nothing is claimable.
	JobClaim(ctx context.Context, p JobClaimParams) ([]ClaimRow, error)
	// JobSettle runs fenced calls, all in one transaction at one instant,
	// and reports for each whether its fence matched.
	JobSettle(ctx context.Context, p JobSettleParams) ([]Settled, error)
	// JobCycle is one cycle of a worker pool (rule 48): the FinishTx calls
	// of its handlers (Txs, where CycleTxs), the fenced results of the
	// handlers that returned since the last one, each fenced on its own,
	// then a claim of up to Max jobs for the slots they freed, in one
	// transaction on SQLite and one statement on PostgreSQL. A result it
	// did not judge (Cycle.Alone) the caller settles with JobSettle.
	JobCycle(ctx context.Context, p JobCycleParams) (Cycle, error)
	// CycleTxs reports whether a pool's cycle runs its handlers' FinishTx
	// calls (JobCycleParams.Txs). SQLite: yes, as they take the writer's
	// turn anyway; PostgreSQL: no, each is a transaction of its own, run
	// in parallel, so that a slow fn or a row another transaction holds
	// holds up no other handler's result nor the pool's claim.
	CycleTxs() bool
	// JobOperate runs an operator's unfenced update of one job (Requeue,
	// Cancel); when it matched no row, the row as it is says why.
	JobOperate(ctx context.Context, p JobOperateParams) (Refusal, error)
	// JobPurgeChunk deletes at most PurgeChunk jobs of one status whose
	// last change is before Before, in a transaction of its own.
	JobPurgeChunk(ctx context.Context, p JobPurgeChunkParams) (int, error)

	// JobGet reads one job; found is false for an unknown ID.
	JobGet(ctx context.Context, queue, id string) (row StateRow, found bool, err error)
	// JobList reads a page of jobs in enqueue order. An AfterID not in the
	// queue is an error wrapping ErrNotFound that names it.
	JobList(ctx context.Context, p JobListParams) ([]StateRow, error)
	// JobNextDue is the earliest instant a pending or leased job of queue
	// becomes claimable; ok is false when there is none.
	JobNextDue(ctx context.Context, queue string) (due int64, ok bool, err error)
	// QueueStats counts a queue's jobs by status at Now, and whether it is
	// paused (Counts["paused"], 1 while it is: Stats.Paused).
	QueueStats(ctx context.Context, p QueueStatsParams) (StatsRow, error)
	// QueueActivity counts a queue's events by minute since Since.
	QueueActivity(ctx context.Context, p QueueActivityParams) ([]ActivityRow, error)
	// QueueNames lists the names of the queues that have jobs, in the
	// engine's collation order.
	QueueNames(ctx context.Context) ([]string, error)

	// ServerClock is the clock of a Queue without one of its own when the
	// engine keeps time on the database server; nil means the host's.
	ServerClock() TimeSource
	// Usable is the error of a call on a database that was closed, or nil.
	Usable() error
	// DB is the database the engine runs on.
	DB() *sql.DB
	// Wakers are the wake-ups of this process's idle workers on the
	// engine's database.
	Wakers() *Wakers
	// Release ends one Queue's use of the engine (Queue.Close).
	Release()

	// Rules 43–47: the service's transactions (InTx, FinishTx; tx.go).

	// TxRun runs p.Fn on a transaction of the engine's database, with
	// p.Finish fenced around it if set, and commits it: on SQLite in the
	// writer's turn, shared with other calls, p.Fn in a savepoint of its
	// own; on PostgreSQL in a transaction of its own. A transaction that
	// failed as a whole is run again, p.Fn with it. p.Fn's error and a
	// refused Finish are the outcome, with nothing of p.Fn kept; an error
	// is the transaction's.
	TxRun(ctx context.Context, p TxRunParams) (TxOutcome, error)

	// Rules 54 and 56: Pause, and what one process does reaching the
	// others.

	// QueuePause stores that a queue is paused, or no longer (Pause,
	// Resume), at once for every process: each claim path reads it.
	QueuePause(ctx context.Context, p QueuePauseParams) error
	// WatchStart has the engine pass other processes' changes to its
	// Wakers (Remote) while at least one caller has not called the stop
	// it returned: a running Work pool. SQLite looks at the file's change
	// counter every WatchInterval, without a lock; PostgreSQL listens
	// through p.Listener, and without one does nothing (pools poll).
	WatchStart(p WatchParams) (stop func())
	// JobsLeased reads the ID and token of every job of queue leased to
	// owner, in one read: a running pool's check of its claims.
	JobsLeased(ctx context.Context, queue, owner string) ([]LeasedRow, error)

	// Periodic jobs, rule 53 (periodic.go).

	// SlotInsert writes a periodic slot's job unless its ID is in the
	// queue or was purged, or the queue is paused: what it did.
	SlotInsert(ctx context.Context, p SlotInsertParams) (SlotAnswer, error)
	// SlotSeen reports whether a job of the queue, or a purged one, has an
	// ID that starts with p.Prefix: a read, without the write lock.
	SlotSeen(ctx context.Context, p SlotSeenParams) (bool, error)

	// Retention, rule 55.

	// JobPurgeDue reports whether a purge chunk of p would delete a job: a
	// read, without the write lock, so that an idle pool's retention takes
	// none.
	JobPurgeDue(ctx context.Context, p JobPurgeChunkParams) (bool, error)
}

// TimeSource is a clock (leaseq.Clock has this method).
type TimeSource interface{ Now() time.Time }

// Clock is how an engine gets the instant a call is judged at.
type Clock struct {
	// Now reads the queue's clock in Unix milliseconds. SQLite reads it
	// once the write lock is held, so a call that waited for the lock does
	// not judge in the past.
	Now func() int64
	// Server means the queue keeps no clock of its own and Now is an
	// estimate of the database server's: PostgreSQL's statements then read
	// the server's clock themselves.
	Server bool
}

// Arg is the instant a statement that can read the server's clock is
// judged at: nil (NULL, the server's clock) when c is the server's, else Now.
func (c Clock) Arg() any {
	if c.Server {
		return nil
	}
	return c.Now()
}

// Queue is what an engine knows of the queue a call is on.
type Queue struct {
	Name  string
	Clock Clock
	// NoGroup (Options.DisableGroupCommit): every single call commits a
	// transaction of its own.
	NoGroup bool
}

// Sharing says whether a call may share its transaction with other calls.
type Sharing int

const (
	// ShareNone: a transaction of its own (a batch is a group already).
	ShareNone Sharing = iota
	// ShareCalls: a single call, which may join other single calls'
	// transaction (SQLite's group commit; on PostgreSQL, its own
	// statement).
	ShareCalls
)

// JobRow is a job as it is written: validated, with the queue's defaults
// filled in.
type JobRow struct {
	ID          string
	Qty         int
	Payload     []byte // never nil: a nil []byte binds as NULL
	MaxAttempts int
	Deadline    sql.NullInt64
	RunAt       sql.NullInt64
	Priority    int
	// Due is when the job is first claimable: RunAt if later than
	// Created, else Created.
	Due     int64
	Created int64
	// Kind is Job.Kind (rule 50): "" for none.
	Kind string
}

// JobInsertManyParams are JobInsertMany's.
type JobInsertManyParams struct {
	Queue Queue
	Jobs  []JobRow
	// One is a single Enqueue, which may share a transaction with other
	// calls.
	One bool
}

// JobInsertTxParams are JobInsertTx's.
type JobInsertTxParams struct {
	Queue Queue
	Jobs  []JobRow
}

// JobClaimParams are JobClaim's.
type JobClaimParams struct {
	Queue Queue
	Owner string
	Lease int64 // milliseconds, at least 1
	Max   int
	Share Sharing
}

// ClaimRow is one claimed job.
type ClaimRow struct {
	ID         string
	Qty        int
	Payload    []byte // nil when empty
	Owner      string
	Token      int64
	Attempt    int
	LeaseUntil int64
	Deadline   sql.NullInt64
	Priority   int
	// Kind, Created, RunAt and MaxAttempts are the job's kind, enqueue
	// time, run_at and max_attempts (rules 50 and 51).
	Kind        string
	Created     int64
	RunAt       sql.NullInt64
	MaxAttempts int
}

// FenceKind is which fenced call a fenced statement is.
type FenceKind int

const (
	FenceFinish FenceKind = iota
	FenceExtend
	FenceRelease
	FenceFail
)

// Fenced is one fenced call on a claim: the claim's ID, owner and token,
// which call, and the call's own arguments.
type Fenced struct {
	Kind  FenceKind
	ID    string
	Owner string
	Token int64
	// LeaseUntil is the claim's lease end: a call cut short whose answer
	// is read back from the row tells an Extend that ran by it.
	LeaseUntil int64
	// Extend: the lease's length in milliseconds.
	Lease int64
	// Release: the delay in milliseconds before the job is due again.
	Delay int64
	// Release and Fail: the reason, cleaned. A Release also carries the
	// reasons it leaves when it quarantines instead (ReleaseFenced).
	Reason         string
	ReasonAttempts string // Release with the attempts used up
	ReasonDeadline string // Release whose delay reaches the deadline
}

// ReleaseFenced is the Release of a claim, with the reasons it leaves in
// each case. The root cleans them (leaseq's cleanReason) before the call;
// an engine's own releases pass short constant reasons.
func ReleaseFenced(id, owner string, token, delay int64, reason string) Fenced {
	return Fenced{Kind: FenceRelease, ID: id, Owner: owner, Token: token, Delay: delay, Reason: reason,
		ReasonAttempts: "max attempts reached, released: " + reason,
		ReasonDeadline: "released past the deadline: " + reason}
}

// JobSettleParams are JobSettle's.
type JobSettleParams struct {
	Queue Queue
	Calls []Fenced
	Share Sharing
	// SkipLocked: a call whose row another transaction holds is not
	// waited for but left unjudged (Settled.Skipped), for the caller to
	// try again: a pool's heartbeat, which must not wait behind a FinishTx
	// in flight nor a claim holding the row (PostgreSQL; on SQLite no
	// transaction holds a row while another writes).
	SkipLocked bool
}

// JobCycleParams are JobCycle's: the FinishTx calls of the pool's handlers
// and the results to record, then the claim of up to Max jobs (none for 0)
// for Owner with a lease of Lease ms.
type JobCycleParams struct {
	Queue Queue
	// Txs are FinishTx calls of handlers the pool runs (rule 46), each
	// run as TxRun runs one, inside the cycle's transaction; only on an
	// engine whose CycleTxs is true.
	Txs []CycleTx
	// Extends are Extend calls on the pool's other running leases,
	// committed first, in a write of their own, before the Txs: a
	// FinishTx's Fn holds SQLite's one writer while it runs, and the
	// pool's heartbeat waits for it, so the leases that would end before
	// the FinishTx's own are renewed ahead of it (rule 48). Only with Txs,
	// on an engine whose CycleTxs is true. Their outcomes are
	// Cycle.Extended (none when that write failed) and, as soon as they
	// committed, Renewed's argument, if Renewed is set.
	Extends []Fenced
	Renewed func([]Settled)
	Results []Fenced
	Owner   string
	Lease   int64
	Max     int
	// Refill: each Tx accepted frees its handler's slot, so the claim asks
	// for one more job for each (ClaimMax).
	Refill bool
}

// CycleTx is a FinishTx a pool's cycle runs: Fn, with Finish fenced around
// it, for the caller whose context is Ctx. The cycle looks at Ctx before Fn
// and again after the Finish: a Ctx that ended by then is the call's
// outcome (TxOutcome.Err), and nothing of it is written.
type CycleTx struct {
	Ctx    context.Context
	Finish Fenced
	Fn     TxFunc
}

// ClaimMax is how many jobs a cycle whose Txs had the outcomes txs claims:
// Max, and one for each Tx accepted when it refills their slots.
func (p JobCycleParams) ClaimMax(txs []TxOutcome) int {
	n := p.Max
	for _, o := range txs {
		if p.Refill && o.Accepted() {
			n++
		}
	}
	return n
}

// Cycle is what a JobCycle did: the outcome of each Tx and of each result,
// by its index, and the claims. Alone lists the results the cycle left unjudged, to be
// settled on their own (PostgreSQL: a finish whose row another
// transaction held, which the step skips rather than wait for, and every
// result but a finish); their Settled is the zero one.
type Cycle struct {
	Txs      []TxOutcome // by the index of JobCycleParams.Txs
	Extended []Settled   // by the index of JobCycleParams.Extends
	Settled  []Settled
	Claims   []ClaimRow
	Alone    []int
}

// Settled is the outcome of one fenced call: whether the fence matched, and
// the lease end the row was left with (only Extend reports it). Skipped: the
// call was not judged, its row held by another transaction
// (JobSettleParams.SkipLocked); OK is false and the row untouched.
type Settled struct {
	OK         bool
	LeaseUntil int64
	Skipped    bool
}

// OperationKind is which operator's call an Operation is.
type OperationKind int

const (
	OpRequeue OperationKind = iota
	OpCancel
)

// JobOperateParams are JobOperate's: an operator's call on one job by ID.
type JobOperateParams struct {
	Queue  Queue
	Kind   OperationKind
	ID     string
	Reason string // Cancel's, cleaned
}

// Refusal is what an operator's update that matched no row found instead:
// Found is false for an unknown ID; otherwise the row's status and deadline
// at the instant Now the update was judged at. An update that matched is
// the zero Refusal with Applied set.
type Refusal struct {
	Applied  bool
	Found    bool
	Status   string
	Deadline sql.NullInt64
	Now      int64
}

// PurgeChunk is the most jobs one JobPurgeChunk deletes: a transaction of
// its own each, so that a long purge never holds the write lock for long.
const PurgeChunk = 500

// JobPurgeChunkParams are JobPurgeChunk's.
type JobPurgeChunkParams struct {
	Queue  string
	Status string
	Before int64
}

// StateRow is a job's row as the reads return it.
type StateRow struct {
	ID          string
	Queue       string
	Qty         int
	Payload     []byte
	Status      string
	Owner       sql.NullString
	Token       int64
	Attempts    int
	MaxAttempts int
	LeaseUntil  sql.NullInt64
	Deadline    sql.NullInt64
	RunAt       sql.NullInt64
	Priority    int
	Reason      sql.NullString
	Created     int64
	Updated     int64
	Kind        string // rule 50
}

// JobListParams are JobList's. Status "" is every status; AfterID "" is
// from the start.
type JobListParams struct {
	Queue   string
	Status  string
	AfterID string
	Limit   int
	Kind    string // "": every kind (rule 50)
}

// QueueStatsParams are QueueStats'.
type QueueStatsParams struct {
	Queue string
	Now   int64
}

// StatsRow is a queue's jobs counted by status. Claimable counts, of the
// pending and of the leased jobs, those claimable at Now; OldestReady is the
// earliest due time of a claimable job.
type StatsRow struct {
	Counts      map[string]int
	Claimable   map[string]int
	OldestReady sql.NullInt64
}

// QueueActivityParams are QueueActivity's.
type QueueActivityParams struct {
	Queue string
	Since int64 // the first minute's start
}

// ActivityRow is one count of QueueActivity: Kind is "done",
// "quarantined", "enqueued" (Minute is the minute's number: Unix
// milliseconds / 60000) or "depth" (the jobs pending or leased now).
type ActivityRow struct {
	Kind   string
	Minute int64
	N      int
}

// ErrDuplicate is the error of an insert whose ID the queue already has.
var ErrDuplicate = errors.New("duplicate job ID")

// ErrNotFound is leaseq.ErrNotFound: no job with that ID is in the queue.
var ErrNotFound = errors.New("job not found")

// ErrClosed is the error of a call after the queue or its engine closed.
var ErrClosed = errors.New("queue is closed")

// Execer is what statements run on: a transaction, a pinned connection, or
// the *sql.DB.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Closed is the error of a call on db after db.Close, or nil. A pinned
// connection keeps working after db.Close until it is given back, so an
// engine asks before each transaction: PingContext on a context that is
// already done returns the closed database's error before it would take a
// connection, and the context's error otherwise.
func Closed(db *sql.DB) error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.PingContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// ErrInvalid is leaseq.ErrInvalid: an engine refuses with it what no call
// could run on (a database in memory, a journal mode the queue cannot
// trust, a schema newer than the package).
var ErrInvalid = errors.New("invalid argument")

// Invalid is an error wrapping ErrInvalid that says why.
func Invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}
