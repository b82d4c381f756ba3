package pgtest

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv makes the test binary a child process of a test: "serve" starts
// a cluster, prints its postmaster's PID and directory and waits to be
// killed; "no-binaries" asks for a database where no binaries are found.
const childEnv = "PGTEST_CHILD_OF_TEST"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "serve":
		DB(childT{})
		fmt.Printf("%d %s\n", shared.local.proc.Process.Pid, shared.local.dir)
		select {}
	case "no-binaries":
		binGlob = filepath.Join(os.TempDir(), "no-such-dir", "*", "bin")
		fmt.Printf("SkipReason=%q\n", SkipReason())
		DB(childT{})
		os.Exit(0)
	}
	Main(m)
}

// childT is the testing.TB of a child process: it prints what it is told
// and exits 2 on a failure, 3 on a skip.
type childT struct{ testing.TB }

func (childT) Helper()                           {}
func (childT) Cleanup(func())                    {}
func (childT) Fatal(args ...any)                 { fmt.Println(args...); os.Exit(2) }
func (childT) Fatalf(format string, args ...any) { fmt.Printf(format+"\n", args...); os.Exit(2) }
func (childT) Skip(args ...any)                  { fmt.Println(args...); os.Exit(3) }
func (childT) Skipf(format string, args ...any)  { fmt.Printf(format+"\n", args...); os.Exit(3) }

// child starts the test binary in mode with env added.
func child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+mode)...)
	return cmd
}

func scan[T any](t *testing.T, db *sql.DB, query string) T {
	t.Helper()
	var v T
	if err := db.QueryRow(query).Scan(&v); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

func exec1(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	if _, err := db.Exec(query); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// TestServer: the server answers in UTF-8 with fsync on, and a server this
// process started as root runs as another user.
func TestServer(t *testing.T) {
	start := time.Now()
	db := DB(t)
	t.Logf("first database after %v (includes the server's start if this test is the first)", time.Since(start).Round(time.Millisecond))
	if v := scan[string](t, db, "SHOW fsync"); v != "on" {
		t.Fatalf("fsync = %s, want on: a Restart must lose no commit", v)
	}
	if v := scan[string](t, db, "SHOW server_encoding"); v != "UTF8" {
		t.Fatalf("server_encoding = %s, want UTF8", v)
	}
	if shared.local != nil {
		st, err := os.Stat(shared.local.dataDir())
		if err != nil {
			t.Fatal(err)
		}
		if uid := st.Sys().(*syscall.Stat_t).Uid; uid == 0 {
			t.Fatalf("the data directory belongs to root: the server would refuse to start")
		}
	}
	t.Logf("%s", scan[string](t, db, "SELECT version()"))
}

// TestDatabasesIndependent: each call gets its own empty database; what one
// test writes, another does not see.
func TestDatabasesIndependent(t *testing.T) {
	a, b := DB(t), DB(t)
	other, err := sql.Open("pgx", URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	names := map[string]bool{}
	for _, db := range []*sql.DB{a, b, other} {
		names[scan[string](t, db, "SELECT current_database()")] = true
		if n := scan[int](t, db, "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"); n != 0 {
			t.Fatalf("a fresh database has %d relations in public, want none", n)
		}
	}
	if len(names) != 3 {
		t.Fatalf("three calls gave databases %v, want three different ones", names)
	}
	exec1(t, a, "CREATE TABLE leaseq_jobs (id text)")
	if n := scan[int](t, b, "SELECT count(*) FROM pg_class WHERE relname = 'leaseq_jobs'"); n != 0 {
		t.Fatal("a table made in one database shows in another")
	}
}

// TestRestart: a crash-stop and start keeps every acknowledged commit, drops
// the transaction that was open, recovers from the WAL (no clean shutdown
// happened), and the server takes connections again on the same port.
func TestRestart(t *testing.T) {
	db := DB(t)
	exec1(t, db, "CREATE TABLE t (n int)")
	exec1(t, db, "INSERT INTO t SELECT generate_series(1, 1000)")
	open, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Exec("INSERT INTO t VALUES (-1)"); err != nil {
		t.Fatal(err)
	}
	port := shared.localPort()
	start := time.Now()
	Restart(t)
	t.Logf("restart took %v", time.Since(start).Round(time.Millisecond))
	if err := open.Commit(); err == nil {
		t.Fatal("a transaction open across the restart committed")
	}
	if n := scan[int](t, db, "SELECT count(*) FROM t"); n != 1000 {
		t.Fatalf("%d rows after the restart, want the 1000 committed before it", n)
	}
	if shared.localPort() != port {
		t.Fatalf("port %d after the restart, want %d", shared.localPort(), port)
	}
	log := shared.local.log()
	for _, want := range []string{"received immediate shutdown request", "automatic recovery in progress"} {
		if !strings.Contains(log, want) {
			t.Fatalf("server log does not say %q: not a crash stop and recovery?\n%s", want, log)
		}
	}
	exec1(t, DB(t), "SELECT 1") // a new database on the restarted server
}

// TestServerDiesWithProcess: a test process killed with SIGKILL, which runs
// none of its code, takes its server with it, and the next process removes
// the directory it left.
func TestServerDiesWithProcess(t *testing.T) {
	if os.Getenv(envURL) != "" {
		t.Skipf("%s is set: no server is started", envURL)
	}
	DB(t) // skips here when there are no binaries
	cmd := child(t, "serve")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v (printed %q)", err, line)
	}
	pidText, dir, _ := strings.Cut(strings.TrimSpace(line), " ")
	pid, err := strconv.Atoi(pidText)
	if err != nil || !running(pid) {
		t.Fatalf("child printed %q: want a running postmaster's PID and its directory", line)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("postmaster %d still running 30s after its test process was killed", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling a process that announces nothing
	}
	removeAbandoned()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the killed process's directory %s is still there (%v)", dir, err)
	}
}

// TestNoBinaries: without server binaries and LEASEQ_POSTGRES_URL a test is
// skipped with a message saying how to get them, which SkipReason gives
// beforehand; under CI=true it fails, and SkipReason says it would not skip.
func TestNoBinaries(t *testing.T) {
	for _, tc := range []struct {
		ci         string
		wantExit   int
		wantReason string
	}{{"", 3, `SkipReason="pgtest: no PostgreSQL server binaries`}, {"true", 2, `SkipReason=""`}} {
		cmd := child(t, "no-binaries", "CI="+tc.ci, envURL+"=")
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			exit, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = exit.ExitCode()
		}
		if !strings.Contains(string(out), tc.wantReason) {
			t.Fatalf("CI=%q: output %q, want %s", tc.ci, out, tc.wantReason)
		}
		if code != tc.wantExit || !strings.Contains(string(out), "apt-get install postgresql") || !strings.Contains(string(out), envURL) {
			t.Fatalf("CI=%q: exit %d, output %q; want exit %d (3 skip, 2 fail) and how to get a server", tc.ci, code, out, tc.wantExit)
		}
	}
}
