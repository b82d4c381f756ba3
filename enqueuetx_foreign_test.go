package leaseq_test

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// EnqueueTx must refuse a transaction on another database, even one with a
// leaseq schema of its own, where it can tell: the job would otherwise be
// written there, and the caller's queue would never see it.

// otherDB is a database of the fixture's engine other than the fixture's,
// with a leaseq schema and an orders table, and the snapshot of its queue
// tables.
func otherDB(t *testing.T, f *fixture) *sql.DB {
	t.Helper()
	return otherDBOf(t, f, f.e)
}

// otherDBOf is otherDB on engine e.
func otherDBOf(t *testing.T, f *fixture, e testEngine) *sql.DB {
	t.Helper()
	db := e.open(t, e.fresh(t))
	q, err := leaseq.New(f.ctx, db, leaseq.Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if err := q.Enqueue(f.ctx, leaseq.Job{ID: "theirs"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE orders (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// refusedTx calls EnqueueTx with tx, which is not on f's database, and
// fails the test unless it is ErrInvalid naming the reason, nothing was
// written in f's database or in db (tx's), and tx is still usable: an
// order written in it after the refusal commits.
func refusedTx(t *testing.T, f *fixture, db *sql.DB, tx *sql.Tx) {
	t.Helper()
	ours, theirs := f.snapshot(), snapshotDB(t, db)
	err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"})
	if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), "not on the queue's") {
		t.Fatalf("EnqueueTx with a transaction on another database: %v, want ErrInvalid saying so", err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES ('after')"); err != nil {
		t.Fatalf("tx unusable after the refusal: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after the refusal: %v", err)
	}
	f.unchanged(ours, "a refused EnqueueTx, in the queue's database")
	if got := snapshotDB(t, db); got != theirs {
		t.Fatalf("a refused EnqueueTx changed the other database:\n got\n%s want\n%s", got, theirs)
	}
	if got := dumpQuery(t, db, "SELECT id FROM orders ORDER BY id"); !strings.Contains(got, "id=after") {
		t.Fatalf("the caller's write after the refusal is missing:\n%s", got)
	}
}

// acceptedTx calls EnqueueTx with tx, which is on f's database, commits it
// and fails the test unless the job is then in the queue.
func acceptedTx(t *testing.T, f *fixture, tx *sql.Tx, id string) {
	t.Helper()
	if err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: id}); err != nil {
		t.Fatalf("EnqueueTx on the queue's database: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.wantRow(leaseq.State{ID: id, Status: leaseq.StatusPending, MaxAttempts: leaseq.MaxAttemptsDefault, EnqueuedAt: t0, UpdatedAt: t0})
}

func beginOn(t *testing.T, db *sql.DB) *sql.Tx {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return tx
}

// TestEnqueueTxOtherDatabase: a transaction on another database (another
// SQLite file; another PostgreSQL database on the same server) with a leaseq
// schema is refused, nothing is written in either, and the caller's
// transaction stays usable; one on the queue's database, also through
// another *sql.DB, still works.
func TestEnqueueTxOtherDatabase(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		db := otherDB(t, f)
		t.Run("another database", func(t *testing.T) { refusedTx(t, f, db, beginOn(t, db)) })
		t.Run("another engine's", func(t *testing.T) {
			other := map[string]testEngine{sqliteEngine.name: postgresEngine, postgresEngine.name: sqliteEngine}[e.name]
			db := otherDBOf(t, f, other)
			refusedTx(t, f, db, beginOn(t, db))
		})
		t.Run("the queue's", func(t *testing.T) { acceptedTx(t, f, beginOn(t, f.db), "ours") })
		t.Run("the queue's, through another *sql.DB", func(t *testing.T) {
			acceptedTx(t, f, beginOn(t, e.open(t, f.path)), "ours-too")
		})
	})
}

// TestEnqueueTxSameFileOtherPath: on SQLite the database is the file, not
// its name: a transaction on the queue's file reached through a symbolic or
// a hard link is the queue's.
func TestEnqueueTxSameFileOtherPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	dir := t.TempDir()
	sym, hard := filepath.Join(dir, "sym.db"), filepath.Join(dir, "hard.db")
	if err := os.Symlink(f.path, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(f.path, hard); err != nil {
		t.Fatal(err)
	}
	acceptedTx(t, f, beginOn(t, openSQLite(t, sym)), "by-symlink")
	acceptedTx(t, f, beginOn(t, openSQLite(t, hard)), "by-hard-link")
}

// TestEnqueueTxOtherSchema: on PostgreSQL a transaction of the queue's
// database whose search_path finds another leaseq_jobs table would write
// there; it is refused like another database.
func TestEnqueueTxOtherSchema(t *testing.T) {
	t.Parallel()
	f := newFixture(t, postgresEngine, leaseq.Options{})
	for _, stmt := range []string{
		"CREATE SCHEMA other",
		"CREATE TABLE other.leaseq_jobs (LIKE public.leaseq_jobs INCLUDING ALL)",
		"CREATE TABLE other.orders (id TEXT PRIMARY KEY)",
	} {
		if _, err := f.db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.db.Exec("CREATE TABLE orders (id TEXT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	tx := beginOn(t, f.db)
	if _, err := tx.Exec("SET LOCAL search_path TO other, public"); err != nil {
		t.Fatal(err)
	}
	ours := f.snapshot()
	err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "a"})
	if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), "not on the queue's") {
		t.Fatalf("EnqueueTx with another schema's leaseq_jobs on the search_path: %v, want ErrInvalid saying so", err)
	}
	if _, err := tx.Exec("INSERT INTO orders VALUES ('after')"); err != nil {
		t.Fatalf("tx unusable after the refusal: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.unchanged(ours, "a refused EnqueueTx")
	if got := dumpQuery(t, f.db, "SELECT * FROM other.leaseq_jobs"); strings.Count(got, "\n") != 1 {
		t.Fatalf("a refused EnqueueTx wrote in the other schema:\n%s", got)
	}
	if got := dumpQuery(t, f.db, "SELECT id FROM other.orders"); !strings.Contains(got, "id=after") {
		t.Fatalf("the caller's write after the refusal is missing:\n%s", got)
	}
}

// TestEnqueueTxPlainRole: on PostgreSQL the check reads what a role without
// any special privilege may read: a queue and a transaction of such a role
// work, and another database is refused.
func TestEnqueueTxPlainRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t, postgresEngine, leaseq.Options{})
	for _, stmt := range []string{
		`DO $$ BEGIN CREATE ROLE leaseq_plain LOGIN NOSUPERUSER; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		"GRANT CREATE, USAGE ON SCHEMA public TO leaseq_plain",
		"GRANT ALL ON ALL TABLES IN SCHEMA public TO leaseq_plain",
		"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO leaseq_plain",
	} {
		if _, err := f.db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(f.path)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User("leaseq_plain")
	db := openPostgres(t, u.String())
	var super bool
	if err := db.QueryRow("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Fatalf("the test's role is a superuser (%v, %v); it must not be", super, err)
	}
	q, err := leaseq.New(f.ctx, db, leaseq.Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	tx := beginOn(t, db)
	if err := q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "plain"}); err != nil {
		t.Fatalf("EnqueueTx as a plain role: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.wantRow(leaseq.State{ID: "plain", Status: leaseq.StatusPending, MaxAttempts: leaseq.MaxAttemptsDefault, EnqueuedAt: t0, UpdatedAt: t0})
	other := otherDB(t, f)
	err = q.EnqueueTx(f.ctx, beginOn(t, other), leaseq.Job{ID: "a"})
	if !errors.Is(err, leaseq.ErrInvalid) {
		t.Fatalf("EnqueueTx as a plain role with a transaction on another database: %v, want ErrInvalid", err)
	}
}

// TestEnqueueTxAfterServerRestart: the PostgreSQL server's start time is
// part of what EnqueueTx compares, so after a restart the queue reads its
// own again: a transaction on its database is still accepted. It restarts
// the server every test of the process shares, so it runs alone.
func TestEnqueueTxAfterServerRestart(t *testing.T) {
	f := newFixture(t, postgresEngine, leaseq.Options{})
	f.db.SetMaxIdleConns(0) // no connection the restart cuts is used again
	pgtest.Restart(t)
	f.db.SetMaxIdleConns(2)
	acceptedTx(t, f, beginOn(t, f.db), "after-restart")
	err := f.q.EnqueueTx(f.ctx, beginOn(t, otherDB(t, f)), leaseq.Job{ID: "a"})
	if !errors.Is(err, leaseq.ErrInvalid) {
		t.Fatalf("EnqueueTx after a restart with a transaction on another database: %v, want ErrInvalid", err)
	}
}
