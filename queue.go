package leaseq

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	"github.com/leaseq/leaseq/internal/sqlite"
)

// Defaults used where Options or Job leave a field at zero.
const (
	// MaxAttemptsDefault is how many claims a job gets before it is
	// quarantined, when neither the Job nor the Options say.
	MaxAttemptsDefault = 3
	// MaxPayloadDefault is the payload limit in bytes when Options.MaxPayload
	// is 0: large enough for a document, small enough that one row never
	// dominates a page cache or a commit.
	MaxPayloadDefault = 1 << 20
	// MaxPayloadLimit is the largest Options.MaxPayload New accepts. SQLite
	// refuses a value over a billion bytes and PostgreSQL a message over a
	// gigabyte; well below both, a row still fits in memory several times
	// over while it is copied through the driver. Larger data belongs in
	// storage of its own, named by the payload.
	MaxPayloadLimit = 64 << 20
	// BusyTimeoutDefault is the busy timeout Open sets on every pooled
	// connection. Waits past it are retried by the queue until the caller's
	// context ends, so it only bounds one wait inside SQLite — but it is
	// also how long a COMMIT may wait for readers to leave, whatever the
	// caller's context says.
	BusyTimeoutDefault = sqlite.BusyTimeout
)

// Options configures a Queue. The zero value means the defaults.
type Options struct {
	// Name is the queue's name: Queues of different names on one database
	// are independent (each sees, claims, counts and purges only its own
	// jobs, and the same job ID may exist once in each). "" means
	// DefaultName. Names follow the rules of job IDs.
	Name string
	// Clock is where every lease and deadline decision gets the time. nil
	// means the system clock on SQLite and the database server's clock on
	// PostgreSQL (rule 40 in docs/rules.md), so that hosts whose
	// clocks disagree still agree on when a lease ends; tests inject a
	// *ManualClock, which wins on both.
	Clock Clock
	// MaxAttempts is the claim limit for jobs that set none; 0 means
	// MaxAttemptsDefault. At most MaxCount.
	MaxAttempts int
	// MaxPayload is the payload limit in bytes; 0 means MaxPayloadDefault,
	// and more than MaxPayloadLimit is refused.
	MaxPayload int
	// DisableGroupCommit (SQLite) makes every single call (Enqueue, Claim, Finish,
	// Extend, Release, Fail) commit a transaction of its own. By default
	// (false) calls that arrive while another is being written are gathered
	// into one shared transaction of at most 128 calls with a single commit:
	// a commit costs about the same for one job as for a hundred, so many
	// goroutines together get many times the throughput. The price is
	// latency for the single call: it may wait for the transaction in
	// progress to commit before its own group starts, and then for up to 127
	// other calls' statements in its group, so under load one call can take
	// about two commits plus its group's statements, instead of one commit.
	// A lone caller pays only a goroutine hand-off. Turn it off if
	// single-call latency matters more than throughput. On PostgreSQL every
	// single call commits on its own already, and the server shares one log
	// flush among the commits that arrive together; the option changes
	// nothing there.
	DisableGroupCommit bool
	// ReadOnly makes a queue that never writes, for tools that only look
	// (Get, Stats, List, Activity, Queues): New then neither creates nor
	// upgrades the schema, and refuses with ErrInvalid a database whose
	// schema version is not SchemaVersion, naming the version it found
	// (an older one is upgraded by Migrate, or by a New without
	// ReadOnly); every call that would write returns ErrInvalid before
	// the database is touched. Open the database read-only too (see
	// OpenReadOnly; on PostgreSQL, a session with
	// default_transaction_read_only=on) to have the database enforce it.
	ReadOnly bool
	// Listener brings other processes' notifications on PostgreSQL, so
	// that a job they enqueue, or a Cancel or Pause they make, reaches
	// this process's pools at once (rule 56 in docs/rules.md); the
	// package pgxlisten makes one from a pgx connection string. nil means
	// polling at each pool's PollInterval, as behind a pooler in
	// transaction mode. SQLite ignores it: its pools watch the file.
	Listener Listener
}

// Listener delivers notifications from other processes (see
// Options.Listener). Listen calls notify with the payload of every
// notification on channel, and with "" each time it (re)connected, when
// notifications may have been missed; stop ends it. One Listener may
// serve every Queue of a process.
type Listener interface {
	Listen(channel string, notify func(payload string)) (stop func())
}

// DefaultName is the queue name used when Options.Name is "".
const DefaultName = "default"

// Queue is one named lease queue in a SQLite or PostgreSQL database, made
// by [New]. It is safe for concurrent use by many goroutines, and many
// processes (on PostgreSQL, many hosts) may open queues on one database. On
// SQLite, Queues on one *sql.DB share one writer (see [Options.Name]).
// Close it with [Queue.Close] before closing the database.
type Queue struct {
	e           engine.Engine
	name        string
	clock       Clock
	maxAttempts int
	maxPayload  int
	noGroup     bool // Options.DisableGroupCommit
	// serverClock means Options.Clock was nil on an engine whose "now" is
	// the database server's clock (rule 40): the statements that judge
	// leases read it themselves (nowArg is NULL).
	serverClock bool
	// eq is what the engine knows of the queue, made once (ref).
	eq      engine.Queue
	closed  atomic.Bool
	closing chan struct{} // closed by Close, so that Work stops waiting
	// holds are the claims Work is running, which a handler's FinishTx
	// may settle (rule 46; work_tx.go).
	holds    holds
	listener Listener // Options.Listener
}

// New returns the Queue named opts.Name on db, creating the schema if it is
// missing and upgrading one written by an earlier version (in one
// transaction that keeps every job, token and attempt count). It is
// idempotent and safe when several processes call it at once on one
// database. With [Options.ReadOnly] it writes nothing and refuses a schema
// that is not current instead (see [Migrate]).
//
// db is a SQLite database opened with modernc.org/sqlite (see [Open]) or a
// PostgreSQL database opened with any database/sql driver for it (pgx's
// stdlib is the tested one: sql.Open("pgx", url)); New asks db which it is.
// The package imports no PostgreSQL driver. On PostgreSQL each single call
// is one statement, or one short transaction, on one of db's connections,
// and claims lock rows with FOR UPDATE SKIP LOCKED, so allow db as many
// connections as goroutines call the queue at once; the rest of this
// comment is about SQLite. Other databases are refused with [ErrInvalid].
//
// It refuses, with an error wrapping [ErrInvalid], a database that is not a
// file (an in-memory database would be a different one on every pooled
// connection), one in WAL, OFF or MEMORY journal mode (the queue is built
// for a rollback journal on disk; the mode is checked again whenever the
// queue takes a write connection, so a later switch is refused too), one
// whose schema is newer than [SchemaVersion], and options out of range: a
// Name that is not a valid name, a MaxAttempts negative or over
// [MaxCount], a MaxPayload that is negative or over [MaxPayloadLimit]. A
// nil ctx is ErrInvalid, here as in every call that takes one.
//
// On PostgreSQL a current schema is only read, so a role with DML rights
// alone (or, for the reads, read-only ones) can open a queue; creating or
// upgrading the schema needs CREATE.
//
// db may come from [Open] or be the caller's own, opened with any DSN: the
// queue runs its own BEGIN IMMEDIATE transactions and retries lock waits
// until the call's context ends. Its writes run on a connection it takes
// from db and keeps between transactions (see [Queue.Close]).
//
// Two facts of SQLite's rollback journal bind the caller's own use of db:
//   - a *sql.Rows left open on the file holds a read lock that makes every
//     commit wait until it is closed, so the queue's calls wait too — with a
//     Background context, forever. Close every Rows promptly;
//   - a COMMIT waits up to the busy timeout ([BusyTimeoutDefault] with
//     Open) for readers to leave, whatever its context says, because a
//     COMMIT cut short would leave the caller unable to tell whether it took
//     effect.
func New(ctx context.Context, db *sql.DB, opts Options) (*Queue, error) {
	if db == nil {
		return nil, opError("new", "", invalid("db is nil"))
	}
	if err := ctxProblem(ctx); err != nil {
		return nil, opError("new", "", err)
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if err := problem(optionsProblem(opts)); err != nil {
		return nil, opError("new", job(opts.Name), err)
	}
	q := &Queue{
		name:        opts.Name,
		clock:       opts.Clock,
		maxAttempts: cmp.Or(opts.MaxAttempts, MaxAttemptsDefault),
		maxPayload:  cmp.Or(opts.MaxPayload, MaxPayloadDefault),
		noGroup:     opts.DisableGroupCommit,
		closing:     make(chan struct{}),
		listener:    opts.Listener,
	}
	e, err := openEngine(ctx, db)
	if err != nil {
		return nil, opError("new", job(opts.Name), err)
	}
	q.e = e
	if q.clock == nil {
		q.clock = systemClock{}
		if c := e.ServerClock(); c != nil {
			q.clock, q.serverClock = c, true
		}
	}
	q.eq = engine.Queue{Name: q.name, Clock: engine.Clock{Now: q.now, Server: q.serverClock}, NoGroup: q.noGroup}
	if opts.ReadOnly {
		err, q.e = checkSchema(ctx, e), readOnlyEngine{e}
	} else {
		err = e.SchemaMigrate(ctx)
	}
	if err != nil {
		q.Close()
		return nil, opError("new", job(opts.Name), err)
	}
	if err := e.DatabaseIdentify(ctx); err != nil {
		q.Close()
		return nil, opError("new", job(opts.Name), err)
	}
	if q.serverClock {
		q.now() // the first reading of the server's clock, the one that is waited for
	}
	return q, nil
}

// optionsProblem validates Options.
func optionsProblem(opts Options) string {
	if why := nameProblem("queue name", opts.Name); why != "" {
		return why
	}
	switch {
	case opts.MaxAttempts < 0:
		return fmt.Sprintf("MaxAttempts %d is negative", opts.MaxAttempts)
	case opts.MaxAttempts > MaxCount:
		return countProblem("MaxAttempts", opts.MaxAttempts)
	case opts.MaxPayload < 0:
		return fmt.Sprintf("MaxPayload %d is negative", opts.MaxPayload)
	case opts.MaxPayload > MaxPayloadLimit:
		return fmt.Sprintf("MaxPayload %d is over the limit of %d", opts.MaxPayload, MaxPayloadLimit)
	}
	return ""
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }

// DB returns the database the queue was created on.
func (q *Queue) DB() *sql.DB { return q.e.DB() }

// now is the queue's clock read once, truncated to the millisecond (rule 8
// in docs/rules.md). Each operation reads it once, so all its
// comparisons agree.
func (q *Queue) now() int64 { return toMillis(q.clock.Now()) }

// callable is the error of a call with ctx on q before it touches the
// database: ErrInvalid for a nil ctx (database/sql would panic with its
// pool's lock held, and every later call on the *sql.DB would hang), or
// ErrClosed on a closed Queue.
func (q *Queue) callable(ctx context.Context) error {
	if err := ctxProblem(ctx); err != nil {
		return err
	}
	return q.usable()
}

// usable is the error of a call on a closed Queue, or nil.
func (q *Queue) usable() error {
	if q.closed.Load() {
		return ErrClosed
	}
	return nil
}

// state is the public State of a row the engine read.
func state(r engine.StateRow) State {
	s := State{ID: r.ID, Queue: r.Queue, Qty: r.Qty, Payload: r.Payload, Status: Status(r.Status),
		Owner: r.Owner.String, Token: r.Token, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
		LeaseUntil: nullTime(r.LeaseUntil), Deadline: nullTime(r.Deadline), RunAt: nullTime(r.RunAt),
		Priority: r.Priority, Reason: r.Reason.String, EnqueuedAt: fromMillis(r.Created), UpdatedAt: fromMillis(r.Updated),
		Kind: r.Kind}
	if len(s.Payload) == 0 {
		s.Payload = nil
	}
	return s
}

// Get returns the current row of job id in this queue, or an error wrapping
// [ErrNotFound]. It is a read.
func (q *Queue) Get(ctx context.Context, id string) (State, error) {
	if err := q.callable(ctx); err != nil {
		return State{}, opError("get", job(id), err)
	}
	if nameProblem("ID", id) != "" {
		return State{}, opError("get", job(id), ErrNotFound) // see storedNames
	}
	r, found, err := q.e.JobGet(ctx, q.name, id)
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return State{}, opError("get", job(id), err)
	}
	return state(r), nil
}

// nullTime turns a nullable stored instant into a time, zero for NULL.
func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMillis(v.Int64)
}

// nullMillis stores t as a nullable instant: NULL for the zero time.
func nullMillis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: toMillis(t), Valid: true}
}

// Close stops the Queue's background work and gives back every connection
// it holds, so that db.Close closes the file once every Queue on db is
// closed. Calls after Close return an error wrapping [ErrClosed]; calls in
// flight finish or fail first. Close does not close db. It is safe to call
// more than once.
func (q *Queue) Close() error {
	if q.closed.Swap(true) {
		return nil
	}
	close(q.closing)
	q.e.Release()
	return nil
}
