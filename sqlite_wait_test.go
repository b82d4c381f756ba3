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
)

// SQLite only: a call whose context ends while it waits for the file's
// write lock says so (rule 47 in docs/rules.md), and its error still
// matches the context's error with errors.Is and, once SQLite refused the
// lock, the driver's with errors.As.

// wantLockWait fails t unless err is the answer of a call that waited for
// the write lock until its context's deadline; driver says whether the
// driver's error must be in it too.
func wantLockWait(t *testing.T, what string, err error, driver bool) {
	t.Helper()
	var se *sqlite.Error
	switch {
	case err == nil:
		t.Fatalf("%s: nil error while the write lock was held", what)
	case !strings.Contains(err.Error(), "waiting for the database's write lock") &&
		!strings.Contains(err.Error(), "waiting for this process's writer turn"):
		t.Errorf("%s: %q does not say it waited for the write lock", what, err)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("%s: %q does not match context.DeadlineExceeded", what, err)
	case driver && !errors.As(err, &se):
		t.Errorf("%s: %q does not match the driver's *sqlite.Error", what, err)
	}
}

// lockCalls are calls that write, each on q with ctx.
var lockCalls = []struct {
	name string
	call func(ctx context.Context, q *leaseq.Queue) error
}{
	{"Enqueue", func(ctx context.Context, q *leaseq.Queue) error { return q.Enqueue(ctx, leaseq.Job{ID: "new"}) }},
	{"EnqueueBatch", func(ctx context.Context, q *leaseq.Queue) error {
		return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "b1"}, {ID: "b2"}})
	}},
	{"Extend", func(ctx context.Context, q *leaseq.Queue) error {
		_, _, err := q.Extend(ctx, leaseq.Claim{ID: "held", Owner: "w", Token: 1}, time.Minute)
		return err
	}},
	{"InTx", func(ctx context.Context, q *leaseq.Queue) error {
		return q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, leaseq.Job{ID: "t"}) })
	}},
}

// TestLockWaitSaysSo: the write lock is held by the caller's own
// transaction (the Enqueue from the goroutine that holds its
// transaction open), or a reader's open *sql.Rows keeps COMMIT from
// finishing; each writing call, grouped or alone, with a short context,
// says what it waited for.
func TestLockWaitSaysSo(t *testing.T) {
	t.Parallel()
	for _, noGroup := range []bool{false, true} {
		for _, hold := range []string{"caller's transaction", "open Rows"} {
			name := hold
			if noGroup {
				name += ", no group commit"
			}
			t.Run(name, func(t *testing.T) {
				path := sqliteEngine.fresh(t)
				// A plain DSN has no busy timeout: SQLite refuses the lock at
				// once, and the queue retries until the context ends.
				db, err := sql.Open("sqlite", "file:"+path)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				q, err := leaseq.New(context.Background(), db, leaseq.Options{DisableGroupCommit: noGroup})
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close()
				mustEnqueue(t, q, leaseq.Job{ID: "held"})
				if _, ok, err := q.Claim(context.Background(), "w", time.Hour); !ok || err != nil {
					t.Fatal(ok, err)
				}
				release := holdLock(t, db, hold)
				defer release()
				for _, c := range lockCalls {
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					err := c.call(ctx, q)
					cancel()
					wantLockWait(t, c.name, err, true)
				}
				release()
				for _, c := range lockCalls[:2] {
					if err := c.call(context.Background(), q); err != nil {
						t.Fatalf("%s once the lock is free: %v", c.name, err)
					}
				}
			})
		}
	}
}

// holdLock holds SQLite's lock as hold says, on a connection of db, and
// returns what lets it go (safe to call twice).
func holdLock(t *testing.T, db *sql.DB, hold string) func() {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hold == "caller's transaction" {
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		done := false
		return func() {
			if !done {
				done = true
				conn.ExecContext(context.Background(), "ROLLBACK")
				conn.Close()
			}
		}
	}
	rows, err := conn.QueryContext(context.Background(), "SELECT id FROM leaseq_jobs")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	done := false
	return func() {
		if !done {
			done = true
			rows.Close()
			conn.Close()
		}
	}
}

// TestLockWaitWithBusyTimeout: with Open's busy timeout, SQLite itself
// waits for the lock inside BEGIN IMMEDIATE; a context that ends first
// still gets an answer that says what it waited for: the lock, or the
// writer's turn that the call waiting for the lock holds.
func TestLockWaitWithBusyTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	release := holdLock(t, f.db, "caller's transaction")
	defer release()
	for _, c := range lockCalls[:2] {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.call(ctx, f.q)
		cancel()
		wantLockWait(t, c.name, err, false)
	}
}
