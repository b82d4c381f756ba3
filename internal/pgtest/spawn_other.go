//go:build unix && !linux

package pgtest

import "os/exec"

// startTiedToProcess starts cmd. Only Linux has a parent-death signal (see
// spawn_linux.go): elsewhere only Main stops the server, and a test process
// killed before Main's end leaves its server running.
func startTiedToProcess(cmd *exec.Cmd) error { return cmd.Start() }
