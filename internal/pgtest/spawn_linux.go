//go:build linux

package pgtest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The server must not outlive the test process, even one killed by a signal
// or by go test's -timeout, which run no TestMain code after m.Run. So the
// postmaster is started with a parent-death signal: the kernel sends it
// SIGQUIT — PostgreSQL's immediate shutdown, which also stops its backends —
// when the thread that started it ends. That is a thread, not the process:
// a goroutine's thread may exit while the process goes on, so every server
// process is started from one goroutine locked to its thread for the rest
// of the process's life; the thread ends only with the process.

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce     sync.Once
	spawnRequests = make(chan spawnRequest)
)

// startTiedToProcess starts cmd so that it gets SIGQUIT when this process
// ends, however it ends.
func startTiedToProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() { go spawnLoop() })
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	r := spawnRequest{cmd: cmd, done: make(chan error)}
	spawnRequests <- r
	return <-r.done
}

// spawnLoop starts the commands it is sent on its own thread, which it never
// unlocks: a goroutine that ends locked takes its thread with it.
func spawnLoop() {
	runtime.LockOSThread()
	for r := range spawnRequests {
		r.done <- r.cmd.Start()
	}
}
