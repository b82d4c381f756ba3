//go:build linux

package pgtest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Freeze stops the server's backends pids with SIGSTOP, as a server that
// stops answering (a stalled host, a hung disk) would, and returns the
// function that lets them go on with SIGCONT; t's cleanup calls it too.
// Only backends of the server this process started are stopped: a pid
// that is not a child of its postmaster fails the test, and with a server
// named by LEASEQ_POSTGRES_URL the test is skipped.
func Freeze(t testing.TB, pids ...int) (thaw func()) {
	t.Helper()
	c := theCluster(t)
	if c.local == nil {
		t.Skipf("pgtest: %s names a server this process did not start; Freeze needs its own", envURL)
	}
	postmaster := c.local.pid()
	for _, pid := range pids {
		if ppid, err := parentOf(pid); err != nil || ppid != postmaster {
			t.Fatalf("pgtest: pid %d is not a backend of the server (parent %d, %v; postmaster %d)", pid, ppid, err, postmaster)
		}
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGCONT)
			}
		})
	}
	t.Cleanup(thaw)
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			thaw()
			t.Fatalf("pgtest: SIGSTOP %d: %v", pid, err)
		}
	}
	return thaw
}

// parentOf reads pid's parent from /proc.
func parentOf(pid int) (int, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces; the fields after
	// its closing parenthesis are the state, then the parent's pid.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	var state string
	var ppid int
	_, err = fmt.Sscan(rest, &state, &ppid)
	return ppid, err
}
