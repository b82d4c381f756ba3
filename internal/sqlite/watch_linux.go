//go:build linux

package sqlite

import (
	"os"
	"syscall"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// watchFile waits for the kernel's word that the database file was
// written (inotify, IN_MODIFY: every commit writes it) and, unless the
// change counter moved by this engine's own commits alone, wakes the
// waiting pools; then lets engine.WatchInterval pass before it waits
// again, so that a burst of commits wakes them once per interval. The
// inotify descriptor is read through the runtime's poller, so an idle wait
// holds no thread and costs no CPU. Where inotify cannot watch the file it
// polls the change counter instead (pollFile).
func (e *Engine) watchFile(stop, done chan struct{}) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		e.pollFile(stop, done)
		return
	}
	if _, err := syscall.InotifyAddWatch(fd, e.file, syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		e.pollFile(stop, done)
		return
	}
	f := os.NewFile(uintptr(fd), "inotify")
	defer close(done)
	defer f.Close()
	unblocked := make(chan struct{})
	defer func() { <-unblocked }() // no goroutine outlives the watch
	go func() {
		defer close(unblocked)
		<-stop
		f.SetReadDeadline(time.Now()) // ends the Read below
	}()
	var counter fileCounter
	defer counter.close()
	last, err := counter.read(e.file)
	buf := make([]byte, 4096)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
		// A counter that cannot be read wakes the pools: better one look
		// too many than a change missed.
		c, rerr := counter.read(e.file)
		if rerr != nil || err != nil || e.watch.foreign(&last, c) {
			e.wake.Remote("")
		}
		err = rerr
		select {
		case <-stop:
			return
		case <-time.After(engine.WatchInterval):
		}
	}
}
