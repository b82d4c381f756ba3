package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
	sqlite3 "modernc.org/sqlite/lib"
)

// TestAfterFailedCommit: the answer for a COMMIT that failed comes from the
// file's change counter, on a real file. A transaction that did not reach
// the file (here: rolled back) keeps the counter and gets the COMMIT's
// error; one that did (here: committed) moved it by one and gets nil. When
// other transactions committed too, the outcome is unknown, except after
// SQLITE_IOERR_DELETE_NOENT, which SQLite reports only once the file is
// written; when the file cannot be read back, the outcome is unknown.
func TestAfterFailedCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE t (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), db, rootSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	ioerr := errors.New("disk I/O error (10)")
	for _, c := range []struct {
		name   string
		end    string // how the transaction really ends; "" is a COMMIT after the journal was deleted
		others int    // transactions committed after it, before the read back
		broken string // the connection was thrown away: "pool" to read back on the pool, "closed" if that is closed too
		cause  error
		want   string // "" for nil, "cause" for the cause itself, else a part of the error
	}{
		{"not in the file", "ROLLBACK", 0, "", ioerr, "cause"},
		{"in the file", "COMMIT", 0, "", ioerr, ""},
		{"in the file, read back on the pool", "COMMIT", 0, "pool", ioerr, ""},
		{"not in the file, others committed since", "ROLLBACK", 2, "", ioerr, "unknown: the file counts 2 commits"},
		{"in the file, others committed since", "COMMIT", 2, "", ioerr, "unknown: the file counts 3 commits"},
		{"file unreadable", "COMMIT", 0, "closed", ioerr, "could not be read back"},
		{"journal deleted", "", 0, "", nil, ""},
		{"journal deleted, others committed since", "", 2, "", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := failedCommit(t, s, path, c.end, c.others, c.broken, c.cause)
			switch {
			case c.want == "" && got != nil, c.want == "cause" && got != c.cause:
				t.Fatalf("got %v, want %s", got, c.want)
			case c.want != "" && c.want != "cause" && (!errors.Is(got, c.cause) || !errors.Is(got, errCommitUnknown) || !strings.Contains(got.Error(), c.want)):
				t.Fatalf("got %v, want the COMMIT's error saying %q", got, c.want)
			}
		})
	}
}

// failedCommit runs one transaction on s's write connection that ends with
// end, lets others other transactions commit, and returns what
// afterFailedCommit answers for it, as if its COMMIT had failed with cause.
// An empty end deletes the journal of s's file at path and commits, and the
// error of that COMMIT, which must be SQLITE_IOERR_DELETE_NOENT, is the
// cause.
func failedCommit(t *testing.T, s *Engine, path, end string, others int, broken string, cause error) error {
	t.Helper()
	ctx := context.Background()
	var answer error
	inBegun(t, s, func(wc *writeConn, before uint32) error {
		if _, err := wc.conn.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
			return err
		}
		if end == "" {
			if err := os.Remove(path + "-journal"); err != nil {
				return err
			}
			_, cause = wc.conn.ExecContext(ctx, "COMMIT")
			if !isCode(cause, sqlite3.SQLITE_IOERR_DELETE_NOENT) {
				return fmt.Errorf("COMMIT after deleting the journal: %v, want SQLITE_IOERR_DELETE_NOENT", cause)
			}
			wc.abort(cause)
		} else if _, err := wc.conn.ExecContext(ctx, end); err != nil {
			return err
		}
		for range others {
			if _, err := s.dbh.ExecContext(ctx, "INSERT INTO t VALUES (2)"); err != nil {
				return err
			}
		}
		switch broken {
		case "pool":
			wc = &writeConn{broken: true, pool: s.dbh}
		case "closed":
			closed, _ := sql.Open("sqlite", "file:unused.db")
			closed.Close()
			wc = &writeConn{broken: true, pool: closed}
		}
		answer = wc.afterFailedCommit(ctx, before, cause)
		return nil
	})
	return answer
}

// inBegun runs fn in the writer's turn on s's write connection, inside a
// BEGIN IMMEDIATE transaction, with the file change counter read after the
// BEGIN, as the transaction helper reads it; fn ends the transaction.
func inBegun(t *testing.T, s *Engine, fn func(wc *writeConn, before uint32) error) {
	t.Helper()
	ctx := context.Background()
	err := func() error {
		wc, err := s.takeTurn(ctx)
		if err != nil {
			return err
		}
		defer s.leaveTurn(wc)
		if _, err := wc.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return err
		}
		before, err := changeCounter(ctx, wc)
		if err != nil {
			return err
		}
		return fn(wc, before)
	}()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAfterFailedCommitEmptyFile: the first transaction on an empty file,
// rolled back, leaves a file with no page 1 to read the counter from; that
// is "not committed", not an unknown outcome.
func TestAfterFailedCommitEmptyFile(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "empty.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := New(ctx, db, rootSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	cause := errors.New("disk I/O error (10)")
	inBegun(t, s, func(wc *writeConn, before uint32) error {
		for _, stmt := range []string{"CREATE TABLE t (n INTEGER)", "ROLLBACK"} {
			if _, err := wc.conn.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		if got := wc.afterFailedCommit(ctx, before, cause); got != cause {
			return fmt.Errorf("got %v, want the COMMIT's error", got)
		}
		return nil
	})
}

// TestReleaseUnknown: after a claim transaction whose outcome the file
// could not tell, its claims are released through the fence: one that did
// commit goes back to pending with its attempt given back (a snooze: no
// caller got it, rule 49), one that did not (its token is not the row's)
// changes nothing.
func TestReleaseUnknown(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(1e9, 0)
	e, q, _ := newTestEngine(t, t0, false)
	now := t0.UnixMilli()
	enqueue(t, e, q, jobRow("committed", 0, now))
	enqueue(t, e, q, jobRow("not-committed", 0, now))
	cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: time.Minute.Milliseconds(), Max: 1, Share: engine.ShareCalls})
	if err != nil || len(cs) != 1 || cs[0].ID != "committed" {
		t.Fatalf("Claim: %+v, %v", cs, err)
	}
	c := cs[0]
	never := engine.ClaimRow{ID: "not-committed", Owner: "w", Token: 1, LeaseUntil: c.LeaseUntil}
	e.releaseUnknown(ctx, q, []engine.ClaimRow{c, never})
	for id, want := range map[string]string{
		"committed":     "pending token=1 attempts=1/4 reason=released: the claim's commit failed, and whether it took effect was unknown",
		"not-committed": "pending token=0 attempts=0/3 reason=",
	} {
		s := get(t, e, q, id)
		if got := fmt.Sprintf("%s token=%d attempts=%d/%d reason=%s", s.Status, s.Token, s.Attempts, s.MaxAttempts, s.Reason.String); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
}
