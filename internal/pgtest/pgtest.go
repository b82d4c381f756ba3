// Package pgtest gives tests a real PostgreSQL server: one throwaway cluster
// per test process, started on first use from the installed server binaries,
// and a fresh, empty database for every call of DB or URL.
//
// When LEASEQ_POSTGRES_URL is set, the databases are created on that server
// instead and nothing is started. When it is unset and no server binaries are
// installed, the calling test is skipped with a message saying how to get
// them — except under CI=true, where that is a failure, so that a CI machine
// without PostgreSQL cannot pass by skipping.
//
// A package whose tests use pgtest stops the server after its tests with
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// and the server dies with the test process even without it (see spawn.go).
package pgtest

import (
	"database/sql"
	"fmt"
	"os"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// envURL names a server to use instead of a throwaway one: the URL of any
// database on it whose user may CREATE DATABASE.
const envURL = "LEASEQ_POSTGRES_URL"

// howToGet is what a test without a server says.
func howToGet() string {
	return "no PostgreSQL server binaries under " + binGlob +
		": install them (apt-get install postgresql) or set " + envURL + " to a server's URL"
}

var (
	startOnce sync.Once
	shared    *cluster
	startErr  error
	noServer  bool // no binaries and no envURL: skip (or fail under CI)
)

func start() { shared, noServer, startErr = startCluster() }

// theCluster starts the cluster on first use and returns it, or ends the
// test when there is none.
func theCluster(t testing.TB) *cluster {
	t.Helper()
	startOnce.Do(start)
	switch {
	case noServer && os.Getenv("CI") == "true":
		t.Fatal("pgtest: " + howToGet() + " (CI=true: PostgreSQL tests may not be skipped)")
	case noServer:
		t.Skip("pgtest: " + howToGet())
	case startErr != nil:
		t.Fatalf("pgtest: starting PostgreSQL: %v", startErr)
	}
	return shared
}

// SkipReason is why DB and URL would skip their test, or "" if they would
// not (they give a database, or fail the test): for a caller that decides
// before it has a test to skip, as a fuzz target's setup does. It starts the
// server if it is not running yet.
func SkipReason() string {
	startOnce.Do(start)
	if noServer && os.Getenv("CI") != "true" {
		return "pgtest: " + howToGet()
	}
	return ""
}

// URL returns the URL of a fresh, empty database, for a child process or a
// command under test; the database is dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	c := theCluster(t)
	name, err := c.createDatabase()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { c.dropLater(name) })
	return c.databaseURL(name)
}

// DB returns a fresh, empty database opened with sql.Open("pgx", …), closed
// (and the database dropped) when t ends.
func DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Restart crash-stops the server and starts it again on the same port and
// data directory, as `pg_ctl restart -m immediate` does, and returns once it
// accepts connections again: every commit acknowledged before the call
// survives, every connection of every database is cut. Since all the
// process's databases share the server, only a test that runs alone (no
// t.Parallel) may call it. A server named by LEASEQ_POSTGRES_URL is not
// this process's to restart: the test is skipped.
func Restart(t testing.TB) {
	t.Helper()
	c := theCluster(t)
	if c.local == nil {
		t.Skipf("pgtest: %s names a server this process did not start; Restart needs its own", envURL)
	}
	if err := c.local.restart(); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
}

// Main runs the tests and then stops the server, if they started one, and
// exits with their result. Use it as the package's TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that has more to do after the tests: it runs
// them, stops the server and returns m.Run's exit code.
func Run(m *testing.M) int {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stopping PostgreSQL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Stop stops the server this process started and removes its files, after
// dropping the databases still waiting to be dropped on a server named by
// LEASEQ_POSTGRES_URL. Later calls of DB or URL fail.
func Stop() error {
	startOnce.Do(func() { noServer, startErr = false, errStopped })
	if shared == nil {
		return nil
	}
	return shared.stop()
}
