package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A call whose context ends while it waits says what it waited for (rule
// 47 in docs/rules.md): on SQLite, another connection's lock on the file,
// for reads as for writes; on both engines, a connection of the *sql.DB's
// pool, every one of which is in use. The error still matches the
// context's with errors.Is.

// waitCall is a call on q with ctx, and what its error must say it waited
// for when the file is locked.
type waitCall struct {
	name string
	call func(ctx context.Context, q *leaseq.Queue, db *sql.DB) error
	lock string
}

const (
	readWait  = "waiting to read the database, which another connection holds locked"
	writeWait = "waiting for the database's write lock, which another connection holds"
)

// waitCalls are the reads and writes the wait tests make; job "a" is
// leased to w with token 1.
var waitCalls = []waitCall{
	{"Get", func(ctx context.Context, q *leaseq.Queue, _ *sql.DB) error { _, err := q.Get(ctx, "a"); return err }, readWait},
	{"Stats", func(ctx context.Context, q *leaseq.Queue, _ *sql.DB) error { _, err := q.Stats(ctx); return err }, readWait},
	{"List", func(ctx context.Context, q *leaseq.Queue, _ *sql.DB) error {
		_, err := q.List(ctx, leaseq.Filter{})
		return err
	}, readWait},
	{"Queues", func(ctx context.Context, _ *leaseq.Queue, db *sql.DB) error {
		_, err := leaseq.Queues(ctx, db)
		return err
	}, readWait},
	{"Enqueue", func(ctx context.Context, q *leaseq.Queue, _ *sql.DB) error {
		return q.Enqueue(ctx, leaseq.Job{ID: "new"})
	}, writeWait},
	{"ExtendBatch", func(ctx context.Context, q *leaseq.Queue, _ *sql.DB) error {
		_, _, err := q.ExtendBatch(ctx, []leaseq.Claim{{ID: "a", Owner: "w", Token: 1}}, time.Minute)
		return err
	}, writeWait},
}

// waitScene is a queue on db with job "a" leased to w (token 1).
func waitScene(t *testing.T, db *sql.DB) *leaseq.Queue {
	t.Helper()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := q.Claim(ctx, "w", time.Hour); err != nil || !ok || c.Token != 1 {
		t.Fatalf("claim: %+v %v %v", c, ok, err)
	}
	return q
}

// callUnderWait runs c with a 300 ms context and returns its error,
// failing t unless the call returns at all within a minute.
func callUnderWait(t *testing.T, c waitCall, q *leaseq.Queue, db *sql.DB) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- c.call(ctx, q, db) }()
	select {
	case err := <-done:
		t.Logf("%s: %v after %v", c.name, err, time.Since(began).Round(time.Millisecond))
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s has not returned a minute after its context of 300 ms", c.name)
		return nil
	}
}

// TestSQLiteLockWaitNamed: another connection holds the file under BEGIN
// EXCLUSIVE; every read and write with a short context says it waited for
// that lock, matches context.DeadlineExceeded, and a read's is not
// SQLite's own SQLITE_BUSY after the busy timeout (5 s on a database of
// Open), which would mean the read waited it out past its context (a
// write's may carry the SQLITE_BUSY its committer met meanwhile, rule 47). Each call runs twice:
// a read cut short costs its connection, and the next read opens another.
func TestSQLiteLockWaitNamed(t *testing.T) {
	t.Parallel()
	path := sqliteEngine.fresh(t)
	db := openSQLite(t, path)
	q := waitScene(t, db)
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	for round := range 2 {
		for _, c := range waitCalls {
			err := callUnderWait(t, c, q, db)
			var se *sqlite.Error
			switch {
			case err == nil:
				t.Errorf("round %d, %s: nil error under another connection's EXCLUSIVE lock", round, c.name)
			case !strings.Contains(err.Error(), c.lock):
				t.Errorf("round %d, %s: %q does not say %q", round, c.name, err, c.lock)
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("round %d, %s: %q does not match context.DeadlineExceeded", round, c.name, err)
			case c.lock == readWait && errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY:
				t.Errorf("round %d, %s: %q is SQLite's busy timeout, waited out past the context", round, c.name, err)
			}
		}
	}
}

// TestPoolWaitNamed: the *sql.DB may open two connections
// (SetMaxOpenConns(2)) and the test holds both; every read and write with
// a short context says it waited for a connection of the pool, naming the
// cap, and matches context.DeadlineExceeded.
func TestPoolWaitNamed(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		db := e.open(t, e.fresh(t))
		db.SetMaxOpenConns(2)
		q := waitScene(t, db)
		for range 2 {
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
		}
		const want = "waiting for a connection of the *sql.DB pool (SetMaxOpenConns 2"
		for _, c := range waitCalls {
			err := callUnderWait(t, c, q, db)
			switch {
			case err == nil:
				t.Errorf("%s: nil error with every connection of the pool held", c.name)
			case !strings.Contains(err.Error(), want):
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("%s: %q does not match context.DeadlineExceeded", c.name, err)
			}
		}
	})
}
