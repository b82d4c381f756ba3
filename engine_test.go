package leaseq_test

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// One proof, two engines (rule 42 in docs/rules.md): every rule's
// test that speaks only through the public API and the row dumps runs once
// per engine, as the subtests "sqlite" and "postgres" (forEngines). Tests of
// one engine's internals say so at the top of their file.

// testEngine is a database engine the suite runs on.
type testEngine struct {
	name string
	// fresh returns where a new, empty database is: a file path on SQLite,
	// a URL on PostgreSQL.
	fresh func(t testing.TB) string
	// open opens the database at fresh's answer as an application would,
	// closed when t ends.
	open func(t testing.TB, path string) *sql.DB
	// rebind turns a query's ?1, ?2 … placeholders into the engine's.
	rebind func(query string) string
	// wantIntegrity fails t unless the engine's own check finds db's
	// tables and indexes intact.
	wantIntegrity func(t *testing.T, db *sql.DB)
}

var sqliteEngine = testEngine{
	name:          "sqlite",
	fresh:         func(t testing.TB) string { return filepath.Join(t.TempDir(), "q.db") },
	open:          openSQLite,
	rebind:        func(query string) string { return query },
	wantIntegrity: wantIntegrity,
}

var postgresEngine = testEngine{
	name:          "postgres",
	fresh:         pgtest.URL,
	open:          openPostgres,
	rebind:        func(query string) string { return sqlitePlaceholder.ReplaceAllString(query, "$$$1") },
	wantIntegrity: wantIntegrityPostgres,
}

// allEngines are the engines LEASEQ_TEST_ENGINES may name.
var allEngines = []testEngine{sqliteEngine, postgresEngine}

// sqlitePlaceholder is SQLite's numbered placeholder, ?N; PostgreSQL's is $N.
var sqlitePlaceholder = regexp.MustCompile(`\?(\d+)`)

// defaultEngines is what LEASEQ_TEST_ENGINES means when unset.
const defaultEngines = "sqlite,postgres"

func openSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t testing.TB, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// wantIntegrityPostgres is PRAGMA integrity_check's counterpart: amcheck
// verifies the queue's tables and that every B-tree index matches its
// table. amcheck needs a superuser, as on the server pgtest starts; on a
// server where the test's user is not one, the check is skipped with a log.
func wantIntegrityPostgres(t *testing.T, db *sql.DB) {
	t.Helper()
	if _, err := db.Exec("CREATE EXTENSION IF NOT EXISTS amcheck"); err != nil {
		t.Logf("integrity not checked: amcheck: %v", err)
		return
	}
	var problems int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM verify_heapam('leaseq_jobs')) + (SELECT count(*) FROM verify_heapam('leaseq_purged'))`).Scan(&problems); err != nil || problems != 0 {
		t.Fatalf("verify_heapam: %d problems, %v", problems, err)
	}
	rows, err := db.Query(`SELECT bt_index_check(c.oid, true)::text
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
		WHERE i.indrelid IN ('leaseq_jobs'::regclass, 'leaseq_purged'::regclass) AND a.amname = 'btree'`)
	if err != nil {
		t.Fatalf("bt_index_check: %v", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil || n == 0 {
		t.Fatalf("bt_index_check: %v after %d indexes, want every index checked", err, n)
	}
}

// testEngines are the engines LEASEQ_TEST_ENGINES names, comma-separated.
var testEngines = sync.OnceValues(func() ([]testEngine, error) {
	names := os.Getenv("LEASEQ_TEST_ENGINES")
	if names == "" {
		names = defaultEngines
	}
	var engines []testEngine
	for _, name := range strings.Split(names, ",") {
		i := slices.IndexFunc(allEngines, func(e testEngine) bool { return e.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("LEASEQ_TEST_ENGINES=%q: unknown engine %q (known: sqlite, postgres)", names, name)
		}
		engines = append(engines, allEngines[i])
	}
	return engines, nil
})

// forEngines runs test once per engine, as a subtest named after it. The
// engines' runs, and the test with other such tests, run in parallel: each
// has its own database, and no such test changes state the process shares.
func forEngines(t *testing.T, test func(t *testing.T, e testEngine)) {
	t.Helper()
	t.Parallel()
	eachEngine(t, true, test)
}

// forEnginesInTurn is forEngines for a test that must run alone: it
// measures the process's CPU or looks at every goroutine, as the worker
// tests do. The engines take their turns one after the other, and the test
// runs in parallel with no other.
func forEnginesInTurn(t *testing.T, test func(t *testing.T, e testEngine)) {
	t.Helper()
	eachEngine(t, false, test)
}

func eachEngine(t *testing.T, parallel bool, test func(t *testing.T, e testEngine)) {
	t.Helper()
	engines, err := testEngines()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			engineRuns[e.name].count(t)
			test(t, e)
		})
	}
}

// engineRuns counts each engine's runs of the suite's tests, by engine
// name, for the lines TestMain prints: CI's log shows that both engines ran,
// and how many tests each. The map is never written after init.
var engineRuns = map[string]*runCount{sqliteEngine.name: {}, postgresEngine.name: {}}

type runCount struct{ ran, passed, skipped atomic.Int64 }

// count counts t, a run of a test on one engine, once it has ended.
func (c *runCount) count(t *testing.T) {
	c.ran.Add(1)
	t.Cleanup(func() {
		switch {
		case t.Skipped():
			c.skipped.Add(1)
		case !t.Failed():
			c.passed.Add(1)
		}
	})
}

// engineSummary is one line per engine, or "" if no test ran on any (as in
// the child processes some tests start, whose output is read).
func engineSummary() string {
	out, someRan := "", false
	for _, e := range allEngines {
		c := engineRuns[e.name]
		if c.ran.Load() == 0 {
			out += fmt.Sprintf("engine %s: not run (see LEASEQ_TEST_ENGINES)\n", e.name)
			continue
		}
		someRan = true
		out += fmt.Sprintf("engine %s: %d tests, %d passed, %d skipped\n", e.name, c.ran.Load(), c.passed.Load(), c.skipped.Load())
	}
	if !someRan {
		return ""
	}
	return out
}

// TestMain stops the PostgreSQL server the tests started, if any, and
// prints how many tests ran on each engine. go test shows a passing
// package's output only with -v, so the lines are also appended to the file
// LEASEQ_TEST_SUMMARY names, if set (.ci/run prints it at the end).
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if s := engineSummary(); s != "" {
		fmt.Print(s)
		if path := os.Getenv("LEASEQ_TEST_SUMMARY"); path != "" {
			if err := appendFile(path, s); err != nil {
				fmt.Fprintf(os.Stderr, "LEASEQ_TEST_SUMMARY: %v\n", err)
			}
		}
	}
	os.Exit(code)
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// onlySQLite skips t, a subtest of a test that runs on every engine, unless
// it runs on SQLite: it reaches into SQLite's own machinery (why).
func onlySQLite(t *testing.T, e testEngine, why string) {
	t.Helper()
	if e.name != sqliteEngine.name {
		t.Skipf("SQLite only: %s", why)
	}
}
