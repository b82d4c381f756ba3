package leaseq_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Options.ReadOnly and Migrate: a queue for tools that only look never
// writes, and refuses a schema it would have to upgrade (issue: read-only
// commands wrote).

// copyTestdata copies testdata/name into a directory of the test's own.
func copyTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(path, b, 0o600))
	return path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return b
}

// TestReadOnlyRefusesOlderSchema: New with ReadOnly on a version-1 or
// version-2 file (opened read-only and read-write) is ErrInvalid naming the
// version and Migrate, and the file stays byte for byte as it was; Migrate
// then upgrades it and reports the version it had, and a read-only queue
// reads it.
func TestReadOnlyRefusesOlderSchema(t *testing.T) {
	for v, name := range map[int]string{1: "schema-v1.db", 2: "schema-v2.db"} {
		t.Run(name, func(t *testing.T) {
			path := copyTestdata(t, name)
			before := readFile(t, path)
			for _, open := range []func(string) (*sql.DB, error){leaseq.OpenReadOnly, leaseq.Open} {
				db, err := open(path)
				must(t, err)
				q, err := leaseq.New(context.Background(), db, leaseq.Options{ReadOnly: true})
				if q != nil {
					t.Fatal("New with ReadOnly returned a queue on an older schema")
				}
				wantErrSays(t, err, leaseq.ErrInvalid, fmt.Sprintf("schema version is %d, older than this leaseq's %d", v, leaseq.SchemaVersion), "Migrate")
				db.Close()
				if !bytes.Equal(readFile(t, path), before) {
					t.Fatal("the refused read-only New changed the file")
				}
			}
			db := openSQLite(t, path)
			from, to, err := leaseq.Migrate(context.Background(), db)
			if err != nil || from != v || to != leaseq.SchemaVersion {
				t.Fatalf("Migrate: from %d to %d, %v; want from %d to %d", from, to, err, v, leaseq.SchemaVersion)
			}
			if from, to, err := leaseq.Migrate(context.Background(), db); err != nil || from != leaseq.SchemaVersion || to != from {
				t.Fatalf("Migrate again: from %d to %d, %v; want %d (nothing to do)", from, to, err, leaseq.SchemaVersion)
			}
			q, err := leaseq.New(context.Background(), db, leaseq.Options{ReadOnly: true})
			must(t, err)
			defer q.Close()
			if st, err := q.Stats(context.Background()); err != nil || st.Done == 0 {
				t.Fatalf("Stats after Migrate: %+v, %v", st, err)
			}
		})
	}
}

// TestReadOnlyRefusesNewerOrNoSchema: a database without leaseq's schema
// is refused rather than given one; Migrate creates it (from version 0) and
// then has nothing to do; a newer schema is refused by both even when the
// database holds no job, on both engines.
func TestReadOnlyRefusesNewerOrNoSchema(t *testing.T) {
	forEngines(t, testReadOnlyRefusesNewerOrNoSchema)
}

func testReadOnlyRefusesNewerOrNoSchema(t *testing.T, e testEngine) {
	ctx := context.Background()
	path := e.fresh(t)
	db := e.open(t, path)
	q, err := leaseq.New(ctx, db, leaseq.Options{ReadOnly: true})
	if q != nil {
		t.Fatal("New with ReadOnly returned a queue on an empty database")
	}
	wantErrSays(t, err, leaseq.ErrInvalid, "no leaseq schema", "Migrate")
	wantNoTables(t, e, db)

	// The engine's own current version: SQLite's is SchemaVersion,
	// PostgreSQL numbers its schema on its own.
	_, current, err := leaseq.Migrate(ctx, db)
	if err != nil || current < 1 {
		t.Fatalf("Migrate: to %d, %v", current, err)
	}
	if e.name == "sqlite" && current != leaseq.SchemaVersion {
		t.Fatalf("Migrate on SQLite: to %d, want SchemaVersion %d", current, leaseq.SchemaVersion)
	}
	if from, to, err := leaseq.Migrate(ctx, db); err != nil || from != current || to != current {
		t.Fatalf("Migrate again: from %d to %d, %v; want %d (nothing to do)", from, to, err, current)
	}
	q, err = leaseq.New(ctx, db, leaseq.Options{ReadOnly: true})
	must(t, err)
	must(t, q.Close())
	later := current + 1
	setVersion(t, e, db, later)
	before := snapshotDB(t, db)
	q, err = leaseq.New(ctx, db, leaseq.Options{ReadOnly: true})
	if q != nil {
		t.Fatal("New with ReadOnly returned a queue on a newer schema")
	}
	wantErrSays(t, err, leaseq.ErrInvalid, fmt.Sprintf("schema version is %d, this leaseq knows version %d", later, current))
	_, _, err = leaseq.Migrate(ctx, db)
	wantErrSays(t, err, leaseq.ErrInvalid, fmt.Sprintf("schema version is %d", later))
	if after := snapshotDB(t, db); after != before {
		t.Fatalf("the refused calls changed the tables:\n%s want\n%s", after, before)
	}
}

// wantNoTables fails t if db has any table.
func wantNoTables(t *testing.T, e testEngine, db *sql.DB) {
	t.Helper()
	query := "SELECT count(*) FROM sqlite_schema"
	if e.name == postgresEngine.name {
		query = "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
	}
	var n int
	must(t, db.QueryRow(query).Scan(&n))
	if n != 0 {
		t.Fatalf("the refused read-only New left %d tables", n)
	}
}

// setVersion writes schema version v into db as a later release would.
func setVersion(t *testing.T, e testEngine, db *sql.DB, v int) {
	t.Helper()
	query := fmt.Sprintf("PRAGMA user_version = %d", v)
	if e.name == postgresEngine.name {
		query = fmt.Sprintf("UPDATE leaseq_schema SET version = %d", v)
	}
	_, err := db.Exec(query)
	must(t, err)
}

// TestReadOnlyQueueNeverWrites: every write of a read-only queue is
// ErrInvalid and leaves the table as it was, while its reads work; on a
// database the engine itself keeps read-only (a mode=ro file, a PostgreSQL
// session with default_transaction_read_only) New and the reads work too.
func TestReadOnlyQueueNeverWrites(t *testing.T) { forEngines(t, testReadOnlyQueueNeverWrites) }

func testReadOnlyQueueNeverWrites(t *testing.T, e testEngine) {
	f := newFixture(t, e, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	f.enqueue(leaseq.Job{ID: "b"})
	c := f.mustClaim("w", time.Minute)
	ro := readOnlyDB(t, e, f.path)
	q, err := leaseq.New(f.ctx, ro, leaseq.Options{ReadOnly: true, Clock: f.clock})
	must(t, err)
	defer q.Close()
	if !q.ReadOnly() || f.q.ReadOnly() {
		t.Fatalf("ReadOnly(): %v for the read-only queue, %v for the other", q.ReadOnly(), f.q.ReadOnly())
	}
	before := f.snapshot()
	if st, err := q.Stats(f.ctx); err != nil || st.Pending != 1 || st.Leased != 1 {
		t.Fatalf("Stats of the read-only queue: %+v, %v", st, err)
	}
	if _, err := q.Get(f.ctx, "a"); err != nil {
		t.Fatal(err)
	}
	writes := map[string]func() error{
		"Enqueue":      func() error { return q.Enqueue(f.ctx, leaseq.Job{ID: "c"}) },
		"EnqueueBatch": func() error { return q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "c"}}) },
		"Claim":        func() error { _, _, err := q.Claim(f.ctx, "w2", time.Minute); return err },
		"Finish":       func() error { _, err := q.Finish(f.ctx, c); return err },
		"Extend":       func() error { _, _, err := q.Extend(f.ctx, c, time.Minute); return err },
		"Release":      func() error { _, err := q.Release(f.ctx, c, 0, "r"); return err },
		"Fail":         func() error { _, err := q.Fail(f.ctx, c, "r"); return err },
		"Cancel":       func() error { return q.Cancel(f.ctx, "a", "r") },
		"Requeue":      func() error { return q.Requeue(f.ctx, "a") },
		"Purge":        func() error { _, err := q.Purge(f.ctx, time.Now(), leaseq.StatusDone); return err },
		"Process": func() error {
			_, err := q.Process(f.ctx, "w2", time.Minute, func(context.Context, leaseq.Claim) error { return nil })
			return err
		},
		"Work": func() error {
			return q.Work(f.ctx, leaseq.WorkerOptions{Owner: "w2"}, func(context.Context, leaseq.Claim) error { return nil })
		},
	}
	for name, call := range writes {
		wantErrSays(t, call(), leaseq.ErrInvalid, "read-only")
		f.unchanged(before, name+" on a read-only queue")
	}
}

// readOnlyDB opens the database at path so that the engine refuses writes.
func readOnlyDB(t *testing.T, e testEngine, path string) *sql.DB {
	t.Helper()
	if e.name == postgresEngine.name {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		return openPostgres(t, path+sep+"default_transaction_read_only=on")
	}
	db, err := leaseq.OpenReadOnly(path)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// walFile makes a SQLite file in WAL mode with one table, as another
// program would, and returns its path.
func walFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wal.db")
	db := rawDB(t, path)
	for _, stmt := range []string{"PRAGMA journal_mode=WAL", "CREATE TABLE t (x)", "INSERT INTO t VALUES (1)"} {
		_, err := db.Exec(stmt)
		must(t, err)
	}
	must(t, db.Close())
	return path
}

// wantWAL fails t unless the file's header still says WAL (bytes 18 and 19
// are 2).
func wantWAL(t *testing.T, path string) {
	t.Helper()
	if h := readFile(t, path); len(h) < 100 || h[18] != 2 || h[19] != 2 {
		t.Fatal("the file is no longer in WAL mode")
	}
}

// TestOpenRefusesWAL: Open (and OpenReadOnly) on a file in WAL mode is
// ErrInvalid saying so, and the file stays in WAL mode (rule 26), also
// while another process has the WAL open, where SQLite would have said a
// bare "database is locked".
func TestOpenRefusesWAL(t *testing.T) {
	path := walFile(t)
	for _, open := range []func(string) (*sql.DB, error){leaseq.Open, leaseq.OpenReadOnly} {
		db, err := open(path)
		if db != nil {
			t.Fatal("Open returned a database for a WAL file")
		}
		wantErrSays(t, err, leaseq.ErrInvalid, "WAL mode")
		wantWAL(t, path)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestChildHoldWAL$", "-test.count=1")
	child.Env = append(os.Environ(), "LEASEQ_CHILD=hold-wal", "LEASEQ_DB="+path)
	stdin, err := child.StdinPipe()
	must(t, err)
	stdout, err := child.StdoutPipe()
	must(t, err)
	var log bytes.Buffer
	child.Stderr = &log
	must(t, child.Start())
	defer func() {
		stdin.Close()
		child.Wait()
	}()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		if line != "holding\n" {
			t.Fatalf("child: %q\n%s", line, log.String())
		}
	case <-time.After(procWait):
		t.Fatalf("the child did not open the WAL within %s", procWait)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("the child holds no WAL: %v", err)
	}
	db, err := leaseq.Open(path)
	if db != nil {
		t.Fatal("Open returned a database for a WAL file another process holds")
	}
	wantErrSays(t, err, leaseq.ErrInvalid, "WAL mode")
	wantWAL(t, path)
}

// TestChildHoldWAL is the child of TestOpenRefusesWAL: it opens the WAL
// file, writes to it (so that the WAL holds a frame), says "holding" and
// keeps it open until its stdin closes.
func TestChildHoldWAL(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "hold-wal" {
		t.Skip("the child of TestOpenRefusesWAL")
	}
	db, err := sql.Open("sqlite", "file:"+os.Getenv("LEASEQ_DB")+"?_pragma=busy_timeout(5000)")
	must(t, err)
	defer db.Close()
	_, err = db.Exec("INSERT INTO t VALUES (2)")
	must(t, err)
	fmt.Println("holding")
	io.Copy(io.Discard, os.Stdin)
}

// TestFileReplacedNamed: a database file replaced by another, or deleted,
// under a running queue fails the next write with an error that says so,
// where SQLite says "attempt to write a readonly database" or "disk I/O
// error" while its reads serve the unlinked old file.
func TestFileReplacedNamed(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		do         func(t *testing.T, path string)
	}{
		{"replaced", "was replaced or moved since it was opened: reopen it", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "other.db")
			f := openFixture(t, sqliteEngine, other, leaseq.Options{})
			f.q.Close()
			f.db.Close()
			must(t, os.Rename(other, path))
		}},
		{"deleted", "was deleted since it was opened: reopen it", func(t *testing.T, path string) {
			must(t, os.Remove(path))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sqliteEngine, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a"})
			tc.do(t, f.path)
			for call, err := range map[string]error{
				"Enqueue": f.q.Enqueue(f.ctx, leaseq.Job{ID: "b"}),
				"Cancel":  f.q.Cancel(f.ctx, "a", "r"),
			} {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s on a %s file: %v, want an error saying %q", call, tc.name, err, tc.says)
				}
			}
		})
	}
}

// TestMigrateInvalid: Migrate with a nil context or database is ErrInvalid.
func TestMigrateInvalid(t *testing.T) {
	db := openSQLite(t, sqliteEngine.fresh(t))
	_, _, err := leaseq.Migrate(nil, db)
	wantErrSays(t, err, leaseq.ErrInvalid, "ctx is nil")
	_, _, err = leaseq.Migrate(context.Background(), nil)
	wantErrSays(t, err, leaseq.ErrInvalid, "db is nil")
	wantNoTables(t, sqliteEngine, db)
}
