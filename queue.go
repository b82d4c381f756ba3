// Package leaseq is a lease queue stored in SQLite, with fencing tokens.
//
// A worker claims a job and holds it for a lease. If the worker stalls past
// its lease, another worker may claim the job again. Every claim carries a
// new, monotonically increasing token, and Finish accepts a result only when
// the job ID, the owner and the token match the current row and both the
// lease and the job's deadline are still running. A worker that wakes up late
// is refused, and the newer worker's row is left untouched.
//
// The queue lives in a SQLite database in rollback-journal mode (see Open).
// All times come from an injectable Clock and are stored as integer Unix
// milliseconds.
package leaseq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver used by Open
	sqlite3 "modernc.org/sqlite/lib"
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
	// BusyTimeoutDefault is the busy timeout Open sets on every pooled
	// connection. Waits past it are retried by the queue until the caller's
	// context ends, so it only bounds one wait inside SQLite.
	BusyTimeoutDefault = 5 * time.Second
)

// Options configures a Queue. The zero value means the defaults.
type Options struct {
	// Clock is where every lease and deadline decision gets the time. nil
	// means the system clock; tests inject a *ManualClock.
	Clock Clock
	// MaxAttempts is the claim limit for jobs that set none; 0 means
	// MaxAttemptsDefault.
	MaxAttempts int
	// MaxPayload is the payload limit in bytes; 0 means MaxPayloadDefault.
	MaxPayload int
	// DisableGroupCommit makes every Enqueue, Claim and Finish commit a
	// transaction of its own. By default (false) calls that arrive while
	// another is being written are gathered into one shared transaction of
	// at most 128 calls with a single commit: a commit costs about the same
	// for one job as for a hundred, so many goroutines together get many
	// times the throughput. The price is latency for the single call: it may
	// wait for the transaction in progress to commit before its own group
	// starts, and then for up to 127 other calls' statements in its group,
	// so under load one call can take about two commits (some 3 ms where a
	// commit costs 1.4 ms) plus its group's statements, instead of one
	// commit. A lone caller pays only a goroutine hand-off. Turn it off if
	// single-call latency matters more than throughput.
	DisableGroupCommit bool
}

// Queue is a lease queue in one SQLite database. It is safe for concurrent
// use by many goroutines, and many processes may open queues on the same
// file.
type Queue struct {
	db          *sql.DB
	clock       Clock
	maxAttempts int
	maxPayload  int
	// writer lets one write transaction of this Queue run at a time; see
	// writeTx.
	writer chan struct{}
	// wc is the pinned write connection, guarded by writer; see
	// writeConn.
	wc        *writeConn
	writeIdle time.Duration // writeConnIdle when the Queue was made
	// group gathers concurrent single calls into shared transactions; nil
	// when Options.DisableGroupCommit is set. See group.go.
	group *group
}

// Status is where a job is in its life.
type Status string

// The states of a job. A job moves pending → leased → done, or to
// quarantined when it can no longer be finished; a leased job whose lease
// ran out is claimable again.
const (
	StatusPending     Status = "pending"
	StatusLeased      Status = "leased"
	StatusDone        Status = "done"
	StatusQuarantined Status = "quarantined"
)

// Job is a unit of work to enqueue.
type Job struct {
	// ID names the business job (an order). It is unique in the queue, at
	// most MaxIDLen bytes of UTF-8 without NUL; receivers de-duplicate on it.
	ID string
	// Qty is the job's quantity, carried to the worker; never negative.
	Qty int
	// Payload is opaque to the queue, stored byte for byte, at most
	// Options.MaxPayload bytes.
	Payload []byte
	// Deadline is when the job stops being worth doing. The zero value means
	// no deadline. No lease runs past it, and no Finish is accepted at or
	// after it.
	Deadline time.Time
	// MaxAttempts is how many claims the job gets; 0 means the queue's
	// default.
	MaxAttempts int
}

// State is a snapshot of one job's row, as Get returns it.
type State struct {
	ID          string
	Qty         int
	Payload     []byte
	Status      Status
	Owner       string // the last owner to claim it; empty before the first claim
	Token       int64  // 0 before the first claim, +1 on every claim
	Attempts    int    // how many times it was claimed
	MaxAttempts int
	LeaseUntil  time.Time // zero before the first claim
	Deadline    time.Time // zero: no deadline
	Reason      string    // why it was quarantined
}

// Open opens the SQLite database at path (creating the file if it does not
// exist) with the settings leaseq is designed for, on every pooled
// connection: journal_mode=DELETE (a rollback journal; SPEC rule 9),
// synchronous=FULL, foreign_keys on, and a busy timeout of
// BusyTimeoutDefault. It checks that the directory exists and that the file
// is a database, so a wrong path fails here rather than at the first Claim.
//
// A caller may instead pass its own *sql.DB to New, opened any way it
// likes; the queue retries lock waits itself and stays correct.
func Open(path string) (*sql.DB, error) {
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("leaseq: open %q: directory %q: %w", path, dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("leaseq: open %q: %q is not a directory: %w", path, dir, fs.ErrInvalid)
	}
	db, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, fmt.Errorf("leaseq: open %q: %w", path, err)
	}
	// Reading the schema makes SQLite read the file header, which is where
	// "file is not a database" shows up.
	if _, err := db.Exec("SELECT count(*) FROM sqlite_schema"); err != nil {
		db.Close()
		return nil, fmt.Errorf("leaseq: open %q: %w", path, err)
	}
	return db, nil
}

// dsn is the file: URI for path with leaseq's pragmas. In a URI '?' and '#'
// end the path and '%' starts an escape, so those are escaped.
func dsn(path string) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return fmt.Sprintf("file:%s?_pragma=busy_timeout(%d)&_pragma=journal_mode(DELETE)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)",
		esc, BusyTimeoutDefault.Milliseconds())
}

// New returns a Queue on db, creating the schema if it is missing. It is
// idempotent and safe when several processes call it at once on a fresh
// file. It refuses a database in WAL mode, or with journaling off, with an
// error wrapping ErrInvalid: the queue is built for a rollback journal.
func New(ctx context.Context, db *sql.DB, opts Options) (*Queue, error) {
	if db == nil {
		return nil, fmt.Errorf("leaseq: new: db is nil: %w", ErrInvalid)
	}
	if opts.MaxAttempts < 0 || opts.MaxPayload < 0 {
		return nil, fmt.Errorf("leaseq: new: MaxAttempts %d and MaxPayload %d must not be negative: %w",
			opts.MaxAttempts, opts.MaxPayload, ErrInvalid)
	}
	q := &Queue{
		db:          db,
		clock:       opts.Clock,
		maxAttempts: opts.MaxAttempts,
		maxPayload:  opts.MaxPayload,
		writer:      make(chan struct{}, 1),
		writeIdle:   writeConnIdle,
	}
	if q.clock == nil {
		q.clock = systemClock{}
	}
	if !opts.DisableGroupCommit {
		q.group = &group{}
	}
	if q.maxAttempts == 0 {
		q.maxAttempts = MaxAttemptsDefault
	}
	if q.maxPayload == 0 {
		q.maxPayload = MaxPayloadDefault
	}
	if err := q.checkJournal(ctx); err != nil {
		return nil, fmt.Errorf("leaseq: new: %w", err)
	}
	if err := q.migrate(ctx); err != nil {
		return nil, fmt.Errorf("leaseq: new: %w", err)
	}
	return q, nil
}

// DB returns the database the queue was created on.
func (q *Queue) DB() *sql.DB { return q.db }

// now is the queue's clock read once, truncated to the millisecond (SPEC
// rule 8). Each operation reads it once, so all its comparisons agree.
func (q *Queue) now() int64 { return toMillis(q.clock.Now()) }

// Enqueue adds a job as pending. Invalid input is an error wrapping
// ErrInvalid that names the field; an ID already in the queue, in whatever
// state, is ErrDuplicate. Either way nothing is written.
func (q *Queue) Enqueue(ctx context.Context, j Job) error {
	now := q.now()
	if err := q.checkJob(j, now); err != nil {
		return err
	}
	err := q.groupTx(ctx, func(ctx context.Context, tx execer) error { return q.insert(ctx, tx, j, now) })
	if err != nil {
		return wrapOp("enqueue", j.ID, err)
	}
	return nil
}

// checkJob validates j against the queue's limits at time now.
func (q *Queue) checkJob(j Job, now int64) error {
	if why := q.jobProblem(j, now); why != "" {
		return invalid("enqueue", j.ID, "%s", why)
	}
	return nil
}

// jobProblem says what is wrong with j at time now, naming the field, or
// returns "" if nothing is.
func (q *Queue) jobProblem(j Job, now int64) string {
	if why := checkName("ID", j.ID); why != "" {
		return why
	}
	switch {
	case j.Qty < 0:
		return fmt.Sprintf("Qty %d is negative", j.Qty)
	case j.MaxAttempts < 0:
		return fmt.Sprintf("MaxAttempts %d is negative", j.MaxAttempts)
	case len(j.Payload) > q.maxPayload:
		return fmt.Sprintf("Payload is %d bytes, over the limit of %d", len(j.Payload), q.maxPayload)
	case !j.Deadline.IsZero() && toMillis(j.Deadline) <= now:
		return fmt.Sprintf("deadline %s is not after now %s",
			fromMillis(toMillis(j.Deadline)).Format(timeFormat), fromMillis(now).Format(timeFormat))
	}
	return ""
}

const insertSQL = `
INSERT INTO leaseq_jobs (id, qty, payload, status, max_attempts, deadline, created_at, updated_at)
VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)`

// insert writes one validated job. A unique-constraint failure on id becomes
// ErrDuplicate; the failed INSERT changed nothing.
func (q *Queue) insert(ctx context.Context, tx execer, j Job, now int64) error {
	maxAttempts := j.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = q.maxAttempts
	}
	payload := j.Payload
	if payload == nil {
		payload = []byte{} // a nil []byte binds as NULL
	}
	var deadline sql.NullInt64
	if !j.Deadline.IsZero() {
		deadline = sql.NullInt64{Int64: toMillis(j.Deadline), Valid: true}
	}
	_, err := tx.ExecContext(ctx, insertSQL, j.ID, j.Qty, payload, maxAttempts, deadline, now, now)
	if isCode(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) || isCode(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
		return ErrDuplicate
	}
	return err
}

const getSQL = `
SELECT id, qty, payload, status, owner, token, attempts, max_attempts, lease_until, deadline, reason
FROM leaseq_jobs WHERE id = ?`

// Get returns the current row of job id, or an error wrapping ErrNotFound.
func (q *Queue) Get(ctx context.Context, id string) (State, error) {
	var s State
	err := q.readRetry(ctx, func(db execer) error {
		var leaseUntil, deadline sql.NullInt64
		err := db.QueryRowContext(ctx, getSQL, id).Scan(&s.ID, &s.Qty, &s.Payload, &s.Status, &s.Owner,
			&s.Token, &s.Attempts, &s.MaxAttempts, &leaseUntil, &deadline, &s.Reason)
		s.LeaseUntil, s.Deadline = nullTime(leaseUntil), nullTime(deadline)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return State{}, wrapOp("get", id, err)
	}
	if len(s.Payload) == 0 {
		s.Payload = nil
	}
	return s, nil
}

// nullTime turns a nullable stored instant into a time, zero for NULL.
func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMillis(v.Int64)
}

// wrapOp adds the operation and job ID to an error from the database.
func wrapOp(op, id string, err error) error {
	return fmt.Errorf("leaseq: %s %q: %w", op, id, err)
}
