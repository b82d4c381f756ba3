package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/leaseq/leaseq"
)

// SQLite only: the faults of a database file — full, read-only, missing,
// not a database.

// The fault tests put the queue on a database that cannot do what it is
// asked — full, read-only, missing, not a database — and check that every
// failure is an error that says so, and that nothing is lost or half
// written.

// sqliteCode is the primary SQLite result code inside err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0
	}
	return se.Code() & 0xff
}

// countRows counts the queue's rows through db.
func countRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDiskFull simulates a full disk with PRAGMA max_page_count. The limit
// is per connection, so the queue gets a *sql.DB with a single connection
// and the limit is set on it. An Enqueue that needs a new page fails with
// SQLITE_FULL and writes nothing; the earlier jobs are intact; once space is
// freed (the limit raised) the same queue enqueues, claims and finishes
// again.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	clock := leaseq.NewManualClock(t0)
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	var early []leaseq.Job
	for i := 0; i < 5; i++ {
		j := leaseq.Job{ID: fmt.Sprintf("early-%d", i), Qty: i, Payload: bytes.Repeat([]byte{byte(i)}, 100)}
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
		early = append(early, j)
	}
	var pages int
	if err := db.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatal(err)
	}

	// Too big for the pages left: several overflow pages.
	big := leaseq.Job{ID: "big", Qty: 1, Payload: bytes.Repeat([]byte("x"), 64<<10)}
	err = q.Enqueue(ctx, big)
	if sqliteCode(err) != sqlite3.SQLITE_FULL {
		t.Fatalf("Enqueue on a full disk: got %v, want SQLITE_FULL", err)
	}
	if !strings.Contains(err.Error(), `enqueue "big"`) {
		t.Errorf("error %q does not say which operation and job failed", err)
	}
	if _, err := q.Get(ctx, "big"); !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatalf("Get(big) after the failed Enqueue: got %v, want ErrNotFound", err)
	}
	wantJobs(t, q, early)
	wantIntegrity(t, db)
	if n := countRows(t, db); n != len(early) {
		t.Fatalf("%d rows after the failed Enqueue, want %d", n, len(early))
	}

	// Space is freed: the same queue, the same connection, works again.
	if _, err := db.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, big); err != nil {
		t.Fatalf("Enqueue after space was freed: %v", err)
	}
	c, ok, err := q.Claim(ctx, "w", time.Second)
	if err != nil || !ok || c.ID != "early-0" {
		t.Fatalf("Claim after space was freed: got %q ok=%v err=%v, want early-0", c.ID, ok, err)
	}
	if ok, err := q.Finish(ctx, c); !ok || err != nil {
		t.Fatalf("Finish after space was freed: got %v, %v, want true", ok, err)
	}
	s, err := q.Get(ctx, "big")
	if err != nil || !bytes.Equal(s.Payload, big.Payload) {
		t.Fatalf("Get(big): got %d-byte payload, %v; want the %d bytes enqueued", len(s.Payload), err, len(big.Payload))
	}
	wantIntegrity(t, db)
}

// wantJobs fails unless every job is in the queue, pending, as enqueued.
func wantJobs(t *testing.T, q *leaseq.Queue, jobs []leaseq.Job) {
	t.Helper()
	for _, j := range jobs {
		s, err := q.Get(context.Background(), j.ID)
		if err != nil || s.Status != leaseq.StatusPending || s.Qty != j.Qty || !bytes.Equal(s.Payload, j.Payload) {
			t.Fatalf("job %s: got %s, %v; want pending, qty=%d, payload=%q", j.ID, fmtState(s), err, j.Qty, j.Payload)
		}
	}
}

// readOnlyFixture makes a database with one job and one live claim, and
// returns its path and the claim.
func readOnlyFixture(t *testing.T) (string, leaseq.Claim) {
	t.Helper()
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a", Qty: 1})
	f.enqueue(leaseq.Job{ID: "b", Qty: 2})
	c := f.mustClaim("w", time.Hour)
	return f.path, c
}

// TestReadOnlyDatabase opens a database read-only in the two ways that hold
// even for root (CI runs as root, and chmod does not stop root). With
// mode=ro in the URI, New succeeds on the existing schema (its migration
// finds nothing to write), every write then fails with SQLITE_READONLY and
// changes nothing, and reads work. With PRAGMA query_only, SQLite refuses
// even BEGIN IMMEDIATE, so New itself fails with SQLITE_READONLY. The chmod
// case runs only when not root.
func TestReadOnlyDatabase(t *testing.T) {
	ctx := context.Background()
	t.Run("mode=ro", func(t *testing.T) {
		path, c := readOnlyFixture(t)
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before := dumpDB(t, db)
		clock := leaseq.NewManualClock(t0)
		q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
		if err != nil {
			t.Fatalf("New on an up-to-date mode=ro database: %v", err)
		}
		if err := q.Enqueue(ctx, leaseq.Job{ID: "c"}); sqliteCode(err) != sqlite3.SQLITE_READONLY {
			t.Errorf("Enqueue: got %v, want SQLITE_READONLY", err)
		}
		if _, ok, err := q.Claim(ctx, "w2", time.Second); sqliteCode(err) != sqlite3.SQLITE_READONLY || ok {
			t.Errorf("Claim: got ok=%v, %v, want SQLITE_READONLY", ok, err)
		}
		if ok, err := q.Finish(ctx, c); sqliteCode(err) != sqlite3.SQLITE_READONLY || ok {
			t.Errorf("Finish of the live claim: got %v, %v, want SQLITE_READONLY (an error, not a refusal)", ok, err)
		}
		if _, ok, err := q.Extend(ctx, c, time.Second); sqliteCode(err) != sqlite3.SQLITE_READONLY || ok {
			t.Errorf("Extend of the live claim: got %v, %v, want SQLITE_READONLY (an error, not a refusal)", ok, err)
		}
		if ok, err := q.Release(ctx, c, 0, "r"); sqliteCode(err) != sqlite3.SQLITE_READONLY || ok {
			t.Errorf("Release of the live claim: got %v, %v, want SQLITE_READONLY (an error, not a refusal)", ok, err)
		}
		if ok, err := q.Fail(ctx, c, "r"); sqliteCode(err) != sqlite3.SQLITE_READONLY || ok {
			t.Errorf("Fail of the live claim: got %v, %v, want SQLITE_READONLY (an error, not a refusal)", ok, err)
		}
		if err := q.Cancel(ctx, "b", "r"); sqliteCode(err) != sqlite3.SQLITE_READONLY {
			t.Errorf("Cancel: got %v, want SQLITE_READONLY", err)
		}
		if _, err := q.Purge(ctx, t0.Add(time.Hour), leaseq.StatusDone); sqliteCode(err) != sqlite3.SQLITE_READONLY {
			t.Errorf("Purge: got %v, want SQLITE_READONLY", err)
		}
		if st, err := q.Stats(ctx); err != nil || st.Pending != 1 || st.Leased != 1 {
			t.Errorf("Stats, a read: got %+v, %v, want one pending and one leased", st, err)
		}
		if s, err := q.Get(ctx, "a"); err != nil || s.Status != leaseq.StatusLeased {
			t.Errorf("Get: got %s, %v, want the leased row", fmtState(s), err)
		}
		if after := dumpDB(t, db); after != before {
			t.Fatalf("rows changed:\n%s", diffLines(after, before))
		}
	})
	t.Run("query_only", func(t *testing.T) {
		path, _ := readOnlyFixture(t)
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before := dumpDB(t, db)
		_, err = leaseq.New(ctx, db, leaseq.Options{Clock: leaseq.NewManualClock(t0)})
		if sqliteCode(err) != sqlite3.SQLITE_READONLY {
			t.Fatalf("New on a query_only database: got %v, want SQLITE_READONLY", err)
		}
		if after := dumpDB(t, db); after != before {
			t.Fatalf("rows changed:\n%s", diffLines(after, before))
		}
	})
	t.Run("chmod", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root, which file permissions do not stop; mode=ro and query_only cover this")
		}
		path, _ := readOnlyFixture(t)
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		db, err := leaseq.Open(path)
		if err == nil {
			defer db.Close()
			_, err = leaseq.New(ctx, db, leaseq.Options{})
		}
		if sqliteCode(err) != sqlite3.SQLITE_READONLY {
			t.Fatalf("Open and New on a read-only file: got %v, want SQLITE_READONLY", err)
		}
	})
}

// TestOpenMissingDirectory: Open fails with an error matching
// fs.ErrNotExist that names the directory, and creates nothing.
func TestOpenMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	path := filepath.Join(dir, "q.db")
	db, err := leaseq.Open(path)
	if err == nil {
		db.Close()
		t.Fatalf("Open(%q): got nil error, want fs.ErrNotExist", path)
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open(%q): got %v, want fs.ErrNotExist naming %q", path, err, dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created %q: %v", dir, err)
	}
}

// TestOpenNotADatabase: a file that is not a database is refused by Open
// with SQLITE_NOTADB, and left byte for byte as it was.
func TestOpenNotADatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	content := bytes.Repeat([]byte("this is not a database, it is someone's notes\n"), 200)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := leaseq.Open(path)
	if err == nil {
		db.Close()
		t.Fatalf("Open(a text file): got nil error, want SQLITE_NOTADB")
	}
	if sqliteCode(err) != sqlite3.SQLITE_NOTADB {
		t.Fatalf("Open(a text file): got %v, want SQLITE_NOTADB", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the file changed: %d bytes (%v), want the %d bytes written", len(got), err, len(content))
	}
	if _, err := os.Stat(path + "-journal"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open left a journal next to the file: %v", err)
	}
}

// TestReopenAfterCrashedWriter: a database whose writer died mid-commit,
// with the database file already changed and a hot journal beside it,
// opens with Open (or, in the other journal modes, a caller's own *sql.DB)
// and New like any other; the journal is rolled back, and the queue claims
// and finishes on it. In every journal mode.
func TestReopenAfterCrashedWriter(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "template.db")
	buildCrashTemplate(t, tmpl)
	forEachJournal(t, func(t *testing.T, journal string) { reopenAfterCrashedWriter(t, tmpl, journal) })
}

func reopenAfterCrashedWriter(t *testing.T, tmpl, journal string) {
	path := filepath.Join(t.TempDir(), "crashed.db")
	copyDB(t, tmpl, path)
	before := dumpFile(t, path)
	if !runCrashChild(t, path, journal, "sweep", "commit", 0) {
		t.Fatal("the crashing child was not killed")
	}
	if size, hot := journalState(t, path); !hot {
		t.Fatalf("want a hot journal left by the dead writer; got %d bytes, hot=%v", size, hot)
	}
	db, q, clock := reopen(t, path, journal)
	if got := dumpDB(t, db); got != before {
		t.Fatalf("rows after recovery:\n%s", diffLines(got, before))
	}
	ctx := context.Background()
	clock.Set(ms(0)) // before the deadlines: every job is claimable again
	c, ok, err := q.Claim(ctx, "w", time.Second)
	if err != nil || !ok || c.ID != "late-0000" || c.Token != 1 {
		t.Fatalf("Claim after recovery: got %q token %d ok=%v err=%v, want late-0000 token 1", c.ID, c.Token, ok, err)
	}
	if ok, err := q.Finish(ctx, c); !ok || err != nil {
		t.Fatalf("Finish after recovery: got %v, %v, want true", ok, err)
	}
}
