package pgtest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// binGlob finds the server binaries Debian's postgresql package installs, one
// directory per major version; the newest is used.
var binGlob = "/usr/lib/postgresql/*/bin"

// dirPrefix names the temporary directory of every cluster started here, so
// that one left by a killed test process can be found and removed.
const dirPrefix = "leaseq-pgtest-"

// readyTimeout bounds a start or restart, crash recovery included; either
// takes well under a second here.
const readyTimeout = 60 * time.Second

// server is a cluster this process started: its data, socket, log and owner
// file in dir, its postmaster a child of this process on 127.0.0.1:port.
type server struct {
	bin  string              // directory of postgres and initdb
	dir  string              // the cluster's temporary directory
	port int                 // fixed for the cluster's life, restarts included
	cred *syscall.Credential // the user the server runs as; nil: this process's

	mu     sync.Mutex
	proc   *exec.Cmd     // the running postmaster
	exited chan struct{} // closed when proc has exited
}

// newestBinaries returns the bin directory of the newest installed major
// version, or "" if none is installed.
func newestBinaries() string {
	dirs, _ := filepath.Glob(binGlob)
	var found []string
	for _, d := range dirs {
		if isFile(filepath.Join(d, "postgres")) && isFile(filepath.Join(d, "initdb")) {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return slices.MaxFunc(found, func(a, b string) int { return compareVersions(versionOf(a), versionOf(b)) })
}

// versionOf is the version directory of a bin directory, as numbers: "9.6"
// is [9 6], "16" is [16].
func versionOf(bin string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(bin)), ".") {
		n, _ := strconv.Atoi(part)
		v = append(v, n)
	}
	return v
}

func compareVersions(a, b []int) int { return slices.Compare(a, b) }

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// startServer makes a cluster in a new temporary directory and starts it.
func startServer(bin string) (*server, error) {
	removeAbandoned()
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir, cred: cred}
	if err := s.initdb(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A free port can be taken by someone else before the postmaster binds
	// it; then it exits at once and another port is tried.
	for try := 0; ; try++ {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); err == nil || try == 4 || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// initdb writes the owner file and a new cluster into s.dir. Trust
// authentication: only this machine can reach the server, and its data is
// thrown away. --no-sync skips initdb's closing fsync of the files it
// wrote, which only an operating system crash would need; the server itself
// runs with fsync on, so a crash of the server loses no commit (see
// Restart).
func (s *server) initdb() error {
	if err := os.WriteFile(filepath.Join(s.dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	if err := chownTo(s.dir, s.cred); err != nil {
		return err
	}
	cmd := s.command("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

func (s *server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *server) logFile() string { return filepath.Join(s.dir, "postgres.log") }

// command is a server program run as the server's user, in its directory,
// with no PG* variables of the caller's environment.
func (s *server) command(program string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, program), args...)
	cmd.Dir = s.dir
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	// Its own process group: a Ctrl-C in the terminal reaches the test
	// process, whose end then stops the server (see spawn.go), not the
	// server behind its back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	return cmd
}

// start starts the postmaster and waits until it accepts connections. The
// socket goes into the cluster's directory (the default directory may not
// be writable by the server's user); clients connect over TCP on loopback.
func (s *server) start() error {
	log, err := os.OpenFile(s.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := s.command("postgres", "-D", s.dataDir(), "-k", s.dir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		// Room for every test's pool at once; the default is 100.
		"-c", "max_connections=300")
	cmd.Stdout, cmd.Stderr = log, log
	if err := startTiedToProcess(cmd); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.proc, s.exited = cmd, exited
	if err := s.waitReady(); err != nil {
		s.kill()
		return fmt.Errorf("%w; server log:\n%s", err, s.logTail())
	}
	return nil
}

// waitReady waits until the postmaster says it is ready, exits, or
// readyTimeout passes. Like pg_ctl -w, it reads the status the postmaster
// writes into postmaster.pid ("ready" once it accepts connections), so no
// connection attempt fills the log while it recovers.
func (s *server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		if s.pidFileSays(s.proc.Process.Pid, "ready") {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited before accepting connections: %v", s.proc.ProcessState)
		case <-time.After(5 * time.Millisecond): // the file announces nothing
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres not ready after %v", readyTimeout)
		}
	}
}

// pidFileSays reports whether postmaster.pid is that of process pid with
// status status: the file's first line is the PID, its eighth the status.
func (s *server) pidFileSays(pid int, status string) bool {
	b, err := os.ReadFile(filepath.Join(s.dataDir(), "postmaster.pid"))
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return len(lines) > 7 && strings.TrimSpace(lines[0]) == strconv.Itoa(pid) && strings.TrimSpace(lines[7]) == status
}

// url is the URL of the database name on this server.
func (s *server) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// restart is `pg_ctl restart -m immediate`: SIGQUIT, which is what pg_ctl's
// immediate mode sends, stops the postmaster and its backends at once with
// no checkpoint, as a crash would; the next start replays the WAL.
func (s *server) restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.kill(); err != nil {
		return err
	}
	return s.start()
}

// stop stops the server and removes its directory.
func (s *server) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.kill()
	return errors.Join(err, os.RemoveAll(s.dir))
}

// kill sends the postmaster SIGQUIT and waits for it to exit, with SIGKILL
// as a last resort.
func (s *server) kill() error {
	if s.proc == nil {
		return nil
	}
	s.proc.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
		return nil
	case <-time.After(readyTimeout):
	}
	s.proc.Process.Kill()
	<-s.exited
	return fmt.Errorf("postgres ignored SIGQUIT for %v; killed", readyTimeout)
}

// log is the server's log.
func (s *server) log() string {
	b, _ := os.ReadFile(s.logFile())
	return string(b)
}

// logTail is the end of the server's log, for error messages.
func (s *server) logTail() string {
	b := []byte(s.log())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// freePort is a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// removeAbandoned removes the clusters of test processes that are gone and
// left their directory behind (killed before they could remove it). The
// parent-death signal has stopped their servers; a directory whose owner or
// postmaster still runs is left alone.
func removeAbandoned() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		owner, ok := pidIn(filepath.Join(dir, "owner.pid"))
		if !ok || running(owner) {
			continue
		}
		if pm, ok := pidIn(filepath.Join(dir, "data", "postmaster.pid")); ok && running(pm) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// pidIn reads the process ID on the first line of path.
func pidIn(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return pid, err == nil && pid > 0
}

// running reports whether process pid exists and is not a zombie: a
// server whose parent died may stay one until init reaps it.
func running(pid int) bool {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The state follows the command name, which is in parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pid is the running postmaster's process ID.
func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.Process.Pid
}
