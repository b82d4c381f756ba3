package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL server of the pg-* modes: the one at -pg or
// LEASEQ_POSTGRES_URL, or else a throwaway cluster this process makes with
// the installed server binaries and stops when it exits. Either way every
// benchmark gets databases of its own (CREATE DATABASE), dropped after it.

// pgServer is the server in use: an admin connection to its postgres
// database, and the URL that fresh database names are put into.
type pgServer struct {
	admin *sql.DB
	base  *url.URL
	stop  func() // stops a cluster this process started; nil otherwise
	pid   int    // that cluster's postmaster; 0 for a server at a URL
}

var (
	pgOnce sync.Once
	pg     *pgServer
)

// pgStartTimeout bounds initdb and the server's start; each takes a second
// or two here.
const pgStartTimeout = time.Minute

// server returns the server, starting a cluster on first use if no URL was
// given.
func server() *pgServer {
	pgOnce.Do(func() {
		raw := *pgURL
		if raw == "" {
			raw = os.Getenv("LEASEQ_POSTGRES_URL")
		}
		var stop func()
		var pid int
		if raw == "" {
			raw, pid, stop = startCluster()
			atExit(stop)
		}
		base, err := url.Parse(raw)
		check(err)
		if base.Scheme != "postgres" && base.Scheme != "postgresql" {
			fatalf("-pg and LEASEQ_POSTGRES_URL take a postgres:// URL, not %q", raw)
		}
		pg = &pgServer{base: base, stop: stop, pid: pid}
		pg.admin = pg.open("postgres")
		var version string
		check(pg.admin.QueryRow("SHOW server_version").Scan(&version))
		fmt.Printf("\n(PostgreSQL %s, %s; pgx v5.12.0 database/sql for leaseq, pgxpool for River)\n", version,
			map[bool]string{true: "a throwaway cluster of default settings", false: "the server at -pg/LEASEQ_POSTGRES_URL"}[stop != nil])
	})
	return pg
}

// url is the URL of database name on the server.
func (s *pgServer) url(name string) string {
	u := *s.base
	u.Path = "/" + name
	return u.String()
}

func (s *pgServer) open(name string) *sql.DB {
	db, err := sql.Open("pgx", s.url(name))
	check(err)
	return db
}

// pgDatabases counts the databases made, so that each name is new.
var pgDatabases int

// createDB makes a fresh database, with settings (ALTER DATABASE ... SET)
// for its sessions, and returns its name; it is dropped when the program
// exits.
func (s *pgServer) createDB(what string, settings ...string) string {
	pgDatabases++
	name := fmt.Sprintf("leaseq_bench_%d_%d_%s", os.Getpid(), pgDatabases, what)
	_, err := s.admin.Exec("CREATE DATABASE " + name)
	check(err)
	for _, set := range settings {
		_, err := s.admin.Exec("ALTER DATABASE " + name + " SET " + set)
		check(err)
	}
	atExit(func() { s.admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	return name
}

// startCluster makes a cluster in a new temporary directory (initdb -A
// trust), starts it on a free port of 127.0.0.1 with its socket in that
// directory, and returns its URL and the function that stops it and removes
// the directory, and its postmaster's process ID. PostgreSQL refuses to run
// as root, so as root the server runs as the postgres user.
func startCluster() (string, int, func()) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(bins) == 0 {
		fatalf("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql), and neither -pg nor LEASEQ_POSTGRES_URL is set")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "leaseq-bench-pg-")
	check(err)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		check(err)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		check(os.Chown(dir, uid, gid))
	}
	command := func(program string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, program), args...)
		cmd.Dir = dir
		cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
		// Its own process group, so that a Ctrl-C reaches this program,
		// whose end stops the server, and not the server behind its back.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := command("initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort()
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	check(err)
	postgres := command("postgres", "-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1")
	postgres.Stdout, postgres.Stderr = log, log
	check(startTied(postgres))
	exited := make(chan struct{})
	go func() { postgres.Wait(); close(exited) }()
	stop := func() {
		postgres.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(pgStartTimeout):
			postgres.Process.Kill()
			<-exited
		}
		log.Close()
		os.RemoveAll(dir)
	}
	raw := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitAccepting(raw, exited); err != nil {
		stop()
		b, _ := os.ReadFile(log.Name())
		fatalf("postgres: %v\n%s", err, b)
	}
	return raw, postgres.Process.Pid, stop
}

// startTied starts cmd from a goroutine locked to its thread for the rest
// of the process's life: the parent-death signal (SIGQUIT, PostgreSQL's
// immediate shutdown) comes when the thread that started the child ends,
// so the server dies with this process however it ends, and not before.
func startTied(cmd *exec.Cmd) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the process
		started <- cmd.Start()
		select {}
	}()
	return <-started
}

// waitAccepting waits until the server at raw answers a ping, exits, or
// pgStartTimeout passes.
func waitAccepting(raw string, exited <-chan struct{}) error {
	db, err := sql.Open("pgx", raw)
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(pgStartTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		switch {
		case err == nil:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("not accepting connections after %v: %w", pgStartTimeout, err)
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before accepting connections")
		case <-time.After(20 * time.Millisecond): // the server announces nothing to a client
		}
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// pgCounts are the server's counters for one database: its transactions
// (each statement outside a transaction is one); and of the whole server,
// which runs one benchmark at a time: WAL flushes and bytes, and the CPU
// time of all its processes (a cluster of this process only).
type pgCounts struct{ xacts, walSyncs, walBytes, cpu float64 }

// pgStatsWait bounds the wait for a database's sessions to end; they end
// within milliseconds of their pool's Close.
const pgStatsWait = 10 * time.Second

// counts reads the counters of database name once its sessions have ended
// (a session reports its counts when it ends, or only every few seconds
// while it is alive).
func (s *pgServer) counts(name string) pgCounts {
	deadline := time.Now().Add(pgStatsWait)
	for {
		var sessions int
		check(s.admin.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE datname = $1", name).Scan(&sessions))
		if sessions == 0 {
			break
		}
		if time.Now().After(deadline) {
			fatalf("database %s still has %d sessions %v after its pool closed", name, sessions, pgStatsWait)
		}
		time.Sleep(10 * time.Millisecond) // sessions announce their end to no one
	}
	var c pgCounts
	check(s.admin.QueryRow(`SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1),
		wal_sync, wal_bytes FROM pg_stat_wal`, name).Scan(&c.xacts, &c.walSyncs, &c.walBytes))
	c.cpu = s.serverCPU()
	return c
}

// serverCPU is the CPU time, in seconds, that the server's processes have
// used so far: the postmaster's own, its children's that are running (or
// ended and not yet reaped), and theirs that ended, which the kernel adds to
// the postmaster as it reaps them. 0 for a server at a URL.
func (s *pgServer) serverCPU() float64 {
	if s.pid == 0 {
		return 0
	}
	_, total := procTimes(s.pid)
	procs, err := filepath.Glob("/proc/[0-9]*")
	check(err)
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if ppid, t := procTimes(pid); ppid == s.pid {
			total += t
		}
	}
	return total
}

// procTimes reads the parent and the CPU time in seconds of process pid
// and of its reaped children: fields 4 and 14–17 of /proc/PID/stat, times
// in clock ticks of 1/100 s. A process that is gone has parent 0.
func procTimes(pid int) (ppid int, seconds float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields count from the state, field 3, which follows the
	// parenthesized name.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	ppid, _ = strconv.Atoi(f[1])
	for _, i := range []int{14, 15, 16, 17} {
		ticks, _ := strconv.ParseFloat(f[i-3], 64)
		seconds += ticks / 100
	}
	return ppid, seconds
}
