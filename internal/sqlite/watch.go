package sqlite

import (
	"encoding/binary"
	"os"
	"sync"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// watcher finds other processes' commits while a pool runs (rule 56): it
// reads the file change counter (bytes 24-27 of the header, which every
// commit in a rollback journal advances) straight from the file every
// engine.WatchInterval. A read of four bytes with pread takes no SQLite
// lock, so it never holds up a writer and costs a syscall; a read through
// SQLite (PRAGMA data_version) would take the shared lock each time. A
// change wakes every waiting pool of the engine's database: the counter
// does not say which queue changed, and this process's own commits change
// it too, which costs a waiting pool one idle check.
type watcher struct {
	mu    sync.Mutex
	users int
	stop  chan struct{}
	done  chan struct{}
}

// WatchStart watches the file while any caller has not stopped.
func (e *Engine) WatchStart(engine.WatchParams) (stop func()) {
	w := &e.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users++
	if w.users == 1 {
		w.stop, w.done = make(chan struct{}), make(chan struct{})
		go e.watchFile(w.stop, w.done)
	}
	var once sync.Once
	return func() { once.Do(w.leave) }
}

// leave ends one caller's watch; the last one stops the watching and
// waits for it to end.
func (w *watcher) leave() {
	w.mu.Lock()
	w.users--
	var stop, done chan struct{}
	if w.users == 0 {
		stop, done = w.stop, w.done
	}
	w.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// watchFile reads the counter every WatchInterval until stop closes and
// wakes the waiting pools when it changed. A counter it could not read
// (the file gone or not written yet) is looked for again at the next tick;
// once it is read again the pools are woken, as a change may have been
// missed.
func (e *Engine) watchFile(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(engine.WatchInterval)
	defer tick.Stop()
	var f fileCounter
	defer f.close()
	last, known, first := uint32(0), false, true
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c, err := f.read(e.file)
		switch {
		case err != nil:
			known = false
		case !known && first, known && c == last:
		default:
			e.wake.Remote("")
		}
		if err == nil {
			last, known, first = c, true, false
		}
	}
}

// fileCounter reads the change counter of a database file, kept open
// between reads.
type fileCounter struct {
	f   *os.File
	buf [4]byte
}

// read returns the file's change counter.
func (fc *fileCounter) read(path string) (uint32, error) {
	if fc.f == nil {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		fc.f = f
	}
	if _, err := fc.f.ReadAt(fc.buf[:], 24); err != nil {
		fc.close()
		return 0, err
	}
	return binary.BigEndian.Uint32(fc.buf[:]), nil
}

func (fc *fileCounter) close() {
	if fc.f != nil {
		fc.f.Close()
		fc.f = nil
	}
}
