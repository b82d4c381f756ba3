package engine

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// What both engines do alike once a statement has run: read its rows into
// the rows of this package, and the operator's update with the read that
// explains a refusal. The statements differ; the Go around them does not.

// SQL is an engine's statements, read from its embedded files at init.
type SQL struct {
	engine string
	sts    map[string]Statement
}

// MustSQL reads the .sql files under dir of fsys for the engine named
// engine (for its panics); a broken file stops the program's init.
func MustSQL(engine string, fsys fs.FS, dir string) *SQL {
	return &SQL{engine: engine, sts: MustStatements(fsys, dir)}
}

// Stmt is the SQL of the statement name (its file's name without .sql). It
// panics on an unknown name: every name is a constant of the engine, so a
// typo is a bug that the engine's tests catch.
func (s *SQL) Stmt(name string) string {
	st, ok := s.sts[name]
	if !ok {
		panic(s.engine + ": no statement " + name)
	}
	return st.SQL
}

// All returns a copy of the statements by name.
func (s *SQL) All() map[string]Statement {
	out := make(map[string]Statement, len(s.sts))
	for name, st := range s.sts {
		out[name] = st
	}
	return out
}

// Args are the arguments of f's statement at now: the fence's (queue, ID,
// owner, token, now), then the call's own, in the order every engine's
// fenced statements take them.
func (f Fenced) Args(queue string, now any) []any {
	args := []any{queue, f.ID, f.Owner, f.Token, now}
	switch f.Kind {
	case FenceExtend:
		args = append(args, f.Lease)
	case FenceRelease:
		args = append(args, f.Delay, f.Reason, f.ReasonAttempts, f.ReasonDeadline)
	case FenceFail:
		args = append(args, f.Reason)
	case FenceSnooze:
		args = append(args, f.Delay, f.Reason, f.ReasonDeadline)
	}
	return args
}

// Scanner is a row to scan: *sql.Row or *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// ScanState reads one row of a job's columns in get.sql's order (id, queue,
// qty, payload, status, owner, token, attempts, max_attempts, lease_until,
// deadline, run_at, priority, reason, created_at, updated_at, kind).
func ScanState(row Scanner) (StateRow, error) {
	var s StateRow
	err := row.Scan(&s.ID, &s.Queue, &s.Qty, &s.Payload, &s.Status, &s.Owner, &s.Token, &s.Attempts,
		&s.MaxAttempts, &s.LeaseUntil, &s.Deadline, &s.RunAt, &s.Priority, &s.Reason, &s.Created, &s.Updated, &s.Kind)
	if err != nil {
		return StateRow{}, err
	}
	if len(s.Payload) == 0 {
		s.Payload = nil
	}
	return s, nil
}

// ScanStates reads every row of rows as ScanState does, and closes rows.
func ScanStates(rows *sql.Rows) ([]StateRow, error) {
	defer rows.Close()
	page := []StateRow{}
	for rows.Next() {
		s, err := ScanState(rows)
		if err != nil {
			return nil, err
		}
		page = append(page, s)
	}
	return page, rows.Err()
}

// ScanStats reads the rows of stats.sql (status, count, claimable, oldest
// claimable due time), and closes rows.
func ScanStats(rows *sql.Rows) (StatsRow, error) {
	defer rows.Close()
	st := StatsRow{Counts: map[string]int{}, Claimable: map[string]int{}}
	for rows.Next() {
		var status string
		var n, due int
		var oldest sql.NullInt64
		if err := rows.Scan(&status, &n, &due, &oldest); err != nil {
			return StatsRow{}, err
		}
		st.Counts[status] = n
		if status != "pending" && status != "leased" {
			continue
		}
		st.Claimable[status] = due
		if oldest.Valid && (!st.OldestReady.Valid || oldest.Int64 < st.OldestReady.Int64) {
			st.OldestReady = oldest
		}
	}
	if err := rows.Err(); err != nil {
		return StatsRow{}, err
	}
	return st, nil
}

// ScanActivity reads the rows of activity.sql (kind, minute, count), and
// closes rows.
func ScanActivity(rows *sql.Rows) ([]ActivityRow, error) {
	defer rows.Close()
	var out []ActivityRow
	for rows.Next() {
		var r ActivityRow
		if err := rows.Scan(&r.Kind, &r.Minute, &r.N); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ScanNames reads the rows of queues.sql, and closes rows; none is an
// empty slice.
func ScanNames(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	names := []string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// SeqClaim is a claim as a claim statement returns it, with the job's
// enqueue order.
type SeqClaim struct {
	Seq int64
	ClaimRow
}

// ScanClaims reads the rows of claim.sql (seq, id, qty, payload, token,
// attempts, lease_until, deadline, priority, kind, created_at, run_at,
// max_attempts) as claims of owner in ClaimOrder, and closes rows.
func ScanClaims(rows *sql.Rows, owner string) ([]ClaimRow, error) {
	defer rows.Close()
	var got []SeqClaim
	for rows.Next() {
		c := SeqClaim{ClaimRow: ClaimRow{Owner: owner}}
		if err := rows.Scan(&c.Seq, &c.ID, &c.Qty, &c.Payload, &c.Token, &c.Attempt, &c.LeaseUntil, &c.Deadline, &c.Priority,
			&c.Kind, &c.Created, &c.RunAt, &c.MaxAttempts); err != nil {
			return nil, err
		}
		got = append(got, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ClaimOrder(got), nil
}

// ClaimOrder returns the claims highest priority first, then in enqueue
// order (RETURNING gives rows in no promised order), an empty payload as
// nil.
func ClaimOrder(got []SeqClaim) []ClaimRow {
	slices.SortFunc(got, func(a, b SeqClaim) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Seq, b.Seq))
	})
	cs := make([]ClaimRow, len(got))
	for i, c := range got {
		cs[i] = c.ClaimRow
		if len(c.Payload) == 0 {
			cs[i].Payload = nil
		}
	}
	return cs
}

// OperateSQL are an engine's statements of an operator's call: requeue.sql,
// cancel.sql and operate_refusal.sql.
type OperateSQL struct{ Requeue, Cancel, Refusal string }

// operateTries bounds how often an operator's update is run again because
// the row read to explain its refusal says it should have matched.
const operateTries = 5

// Operate is the body of an operator's transaction on tx: p's update at
// now, and when it matched no row the row as it is. Under PostgreSQL's
// READ COMMITTED each statement sees what was committed when it began, so
// a row committed between the update and the read (an Enqueue of the ID, a
// claim moving the job) could explain a refusal with a status the update
// would have taken: the update is then run again, so that the answer and
// its reason come from the same view of the row. Under SQLite's write lock
// nothing commits in between.
func Operate(ctx context.Context, tx Execer, s OperateSQL, p JobOperateParams, now int64) (Refusal, error) {
	for try := 1; ; try++ {
		r := Refusal{Now: now}
		var err error
		r.Applied, err = runOperation(ctx, tx, s, p, now)
		if err != nil || r.Applied {
			return r, err
		}
		if err := readRefusal(ctx, tx, s, p, &r); err != nil || !matches(p.Kind, r) || try == operateTries {
			return r, err
		}
	}
}

// matches reports whether an update of kind would take the row r read: a
// refusal that r contradicts.
func matches(kind OperationKind, r Refusal) bool {
	switch {
	case !r.Found:
		return false
	case kind == OpCancel:
		return r.Status == "pending" || r.Status == "leased"
	default:
		return r.Status == "quarantined" && (!r.Deadline.Valid || r.Deadline.Int64 > r.Now)
	}
}

// runOperation runs p's update at now and reports whether it matched the
// row.
func runOperation(ctx context.Context, tx Execer, s OperateSQL, p JobOperateParams, now int64) (bool, error) {
	var res sql.Result
	var err error
	switch p.Kind {
	case OpRequeue:
		res, err = tx.ExecContext(ctx, s.Requeue, p.Queue.Name, p.ID, now)
	case OpCancel:
		res, err = tx.ExecContext(ctx, s.Cancel, p.Queue.Name, p.ID, p.Reason, now)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// readRefusal reads the row of the job that p's update did not match into
// r.
func readRefusal(ctx context.Context, tx Execer, s OperateSQL, p JobOperateParams, r *Refusal) error {
	err := tx.QueryRowContext(ctx, s.Refusal, p.Queue.Name, p.ID).Scan(&r.Status, &r.Deadline)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading why nothing changed: %w", err)
	}
	r.Found = true
	return nil
}

// SavepointSQL are an engine's savepoint.sql, savepoint_release.sql and
// savepoint_rollback.sql.
type SavepointSQL struct{ Begin, Release, Rollback string }

// InSavepoint runs fn on tx, the caller's transaction (EnqueueTx), inside
// a savepoint: on fn's error everything fn wrote is taken back and tx stays
// usable. bad is fn's result (the index of the job that failed, or -1).
func InSavepoint(ctx context.Context, tx *sql.Tx, s SavepointSQL, fn func(ctx context.Context, tx Execer) (bad int, err error)) (int, error) {
	if _, err := tx.ExecContext(ctx, s.Begin); err != nil {
		return -1, err
	}
	bad, err := fn(ctx, tx)
	if err != nil {
		_, rbErr := tx.ExecContext(context.WithoutCancel(ctx), s.Rollback)
		_, relErr := tx.ExecContext(context.WithoutCancel(ctx), s.Release)
		return bad, errors.Join(err, rbErr, relErr)
	}
	if _, err := tx.ExecContext(ctx, s.Release); err != nil {
		return -1, err
	}
	return -1, nil
}

// ListSQL are an engine's list_after.sql, list_all.sql, list_status.sql,
// list_kind_all.sql and list_kind.sql.
type ListSQL struct{ After, All, Status, KindAll, Kind string }

// List reads a page of p's jobs on db: the jobs after AfterID (whose
// enqueue order s.After finds; one not in the queue is ErrNotFound), of
// one status or of all, of one kind or of any.
func List(ctx context.Context, db Execer, s ListSQL, p JobListParams) ([]StateRow, error) {
	var after int64
	if p.AfterID != "" {
		err := db.QueryRowContext(ctx, s.After, p.Queue, p.AfterID).Scan(&after)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("AfterID %q: %w", p.AfterID, ErrNotFound)
		} else if err != nil {
			return nil, err
		}
	}
	query, args := s.query(p, after)
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return ScanStates(rows)
}

// query is the statement of List's page p after the seq after, with its
// arguments: by kind (rule 50) a range of leaseq_jobs_kind, else of
// leaseq_jobs_status.
func (s ListSQL) query(p JobListParams, after int64) (string, []any) {
	switch {
	case p.Kind != "" && p.Status != "":
		return s.Kind, []any{p.Queue, p.Kind, p.Status, after, p.Limit}
	case p.Kind != "":
		return s.KindAll, []any{p.Queue, p.Kind, after, p.Limit}
	case p.Status != "":
		return s.Status, []any{p.Queue, p.Status, after, p.Limit}
	}
	return s.All, []any{p.Queue, after, p.Limit}
}

// ScanLeased reads the rows of leased.sql (id, token), and closes rows.
func ScanLeased(rows *sql.Rows) ([]LeasedRow, error) {
	defer rows.Close()
	var out []LeasedRow
	for rows.Next() {
		var r LeasedRow
		if err := rows.Scan(&r.ID, &r.Token); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
