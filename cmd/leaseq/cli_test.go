package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// The tests here run the leaseq binary as a real process against real
// databases that they fill through the public API, and compare what it
// prints with testdata/*.golden. After a change to the output, look at it,
// then rewrite the files with
//
//	go test ./cmd/leaseq -run CLI -update

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the output the tests get")

// binary is the leaseq binary TestMain builds once for every test.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "leaseq-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "leaseq")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building leaseq: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := pgtest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// engine makes an empty database with leaseq's schema for one test and
// returns the -db argument that names it, and a connection to it for
// filling and checking it through the API.
type engine func(t *testing.T) (dbArg string, db *sql.DB)

// engines are the databases every CLI test runs on. The output must be the
// same on each, so they share the golden files.
var engines = []struct {
	name string
	make engine
}{
	{"sqlite", sqliteDB},
	{"postgres", postgresDB},
}

// postgresDB is a new database on the test process's PostgreSQL server.
func postgresDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	url := pgtest.URL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	return url, db
}

// sqliteDB is a new SQLite file in t.TempDir().
func sqliteDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.db")
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	return path, db
}

// forEachEngine runs test on a new database of each engine.
func forEachEngine(t *testing.T, test func(t *testing.T, dbArg string, db *sql.DB)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			dbArg, db := e.make(t)
			test(t, dbArg, db)
		})
	}
}

// t0 is the instant the scene starts at, and now the instant the CLI
// runs at (LEASEQ_NOW): ten minutes later.
var (
	t0  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now = t0.Add(10 * time.Minute)
)

// scene fills db with two queues of jobs in every state, on a manual clock
// from t0 to t0+9m:
//
//	default: order-1 pending (a JSON payload), order-2 scheduled for t0+1h,
//	         order-3 leased by worker-a until t0+16m, order-4 leased by
//	         worker-b until t0+2m (expired at now), order-5 done at t0+30s,
//	         order-6 quarantined at t0+1m by Fail with a two-line reason
//	         and a binary payload, order-7 cancelled at t0+9m (deadline t0+1h)
//	emails:  welcome-1 done at t0, welcome-2 quarantined at t0+3m (its one
//	         attempt released), order-1 pending (a text payload)
//
// Distinct priorities make every claim's pick certain on any engine.
func scene(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx := context.Background()
	clock := leaseq.NewManualClock(t0)
	open := func(name string) *leaseq.Queue {
		q, err := leaseq.New(ctx, db, leaseq.Options{Name: name, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		return q
	}
	// accepted fails the test unless a fenced call was accepted.
	accepted := func(ok bool, err error) {
		t.Helper()
		if err != nil || !ok {
			t.Fatalf("accepted %v, err %v; the scene wants it accepted", ok, err)
		}
	}
	orders, emails := open("default"), open("emails")
	must(t, orders.EnqueueBatch(ctx, []leaseq.Job{
		{ID: "order-1", Qty: 1, Payload: []byte(`{"sku":"A-1","qty":1}`), Kind: "order.ship"},
		{ID: "order-2", Qty: 2, RunAt: t0.Add(time.Hour)},
		{ID: "order-3", Qty: 3, Priority: 3},
		{ID: "order-4", Qty: 4, Priority: 4},
		{ID: "order-5", Qty: 5, Priority: 5},
		{ID: "order-6", Qty: 6, Priority: 6, MaxAttempts: 1, Payload: []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")},
		{ID: "order-7", Qty: 7, Deadline: t0.Add(time.Hour)},
	}))
	must(t, emails.EnqueueBatch(ctx, []leaseq.Job{
		{ID: "welcome-1", Priority: 1, Kind: "email.welcome"},
		{ID: "welcome-2", Priority: 2, MaxAttempts: 1, Kind: "email.welcome"},
		{ID: "order-1", Payload: []byte("Your order A-1 has shipped.\nThank you!"), Kind: "email.shipped"},
	}))
	o6 := claimOnly(t, orders, "worker-b", 5*time.Minute, "order-6")
	o5 := claimOnly(t, orders, "worker-a", time.Minute, "order-5")
	w2 := claimOnly(t, emails, "mailer", 5*time.Minute, "welcome-2")
	accepted(emails.Finish(ctx, claimOnly(t, emails, "mailer", 5*time.Minute, "welcome-1")))
	clock.Set(t0.Add(30 * time.Second))
	accepted(orders.Finish(ctx, o5))
	clock.Set(t0.Add(time.Minute))
	accepted(orders.Fail(ctx, o6, "card declined:\ncode 51 (insufficient funds)"))
	claimOnly(t, orders, "worker-b", time.Minute, "order-4")
	claimOnly(t, orders, "worker-a", 15*time.Minute, "order-3")
	clock.Set(t0.Add(3 * time.Minute))
	accepted(emails.Release(ctx, w2, 0, "smtp: 421 4.7.0 try again later"))
	clock.Set(t0.Add(9 * time.Minute))
	must(t, orders.Cancel(ctx, "order-7", "customer called to cancel"))
}

// claimOnly claims one job and fails the test unless it is id.
func claimOnly(t *testing.T, q *leaseq.Queue, owner string, lease time.Duration, id string) leaseq.Claim {
	t.Helper()
	c, ok, err := q.Claim(context.Background(), owner, lease)
	if err != nil || !ok || c.ID != id {
		t.Fatalf("%s claimed %q (ok %v, err %v); the scene wants %q", owner, c.ID, ok, err, id)
	}
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// result is what one run of the binary did.
type result struct {
	code           int
	stdout, stderr string
}

// leaseqRun runs the binary with args, where "$DB" stands for dbArg, and
// with the environment of the test minus any LEASEQ_ variable, plus env.
func leaseqRun(t *testing.T, dbArg string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args = append([]string(nil), args...)
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$DB", dbArg)
	}
	cmd := exec.CommandContext(ctx, binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEASEQ_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running leaseq %q: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// atNow is the environment of a run on db at now.
func atNow(dbArg string) []string {
	return []string{"LEASEQ_DB=" + dbArg, "LEASEQ_NOW=" + now.Format(time.RFC3339)}
}

// transcript is a run as a golden file holds it, with dbArg shown as $DB.
func (r result) transcript(dbArg string, args []string) string {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = shellWord(a)
	}
	s := fmt.Sprintf("$ leaseq %s\nexit %d\n-- stdout --\n%s-- stderr --\n%s",
		strings.Join(words, " "), r.code, r.stdout, r.stderr)
	if dbArg != "" {
		s = strings.ReplaceAll(s, dbArg, "$DB")
	}
	return s
}

// golden compares got with testdata/NAME.golden, or rewrites the file with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the output; got:\n%s\nwant:\n%s", path, got, want)
	}
}
