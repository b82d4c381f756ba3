package sqlite

import (
	"encoding/binary"
	"os"
	"sync"

	"github.com/leaseq/leaseq/internal/engine"
)

// watcher finds other processes' commits while a pool runs (rule 56). On
// Linux the kernel tells it (inotify, watch_linux.go): a commit in a
// rollback journal writes the database file, and an idle pool costs
// nothing until one does. Elsewhere it reads the file change counter
// (bytes 24-27 of the header, which every commit advances) straight from
// the file every pollInterval, 10ms (watch_poll.go): a pread of four bytes takes
// no SQLite lock, where PRAGMA data_version would take the shared lock each
// time. Either way a change wakes every waiting pool of the engine's
// database, at most once per engine.WatchInterval: the file does not say
// which queue changed, and this process's own commits change it too, which
// costs a waiting pool one idle check.
type watcher struct {
	mu    sync.Mutex
	users int
	stop  chan struct{}
	done  chan struct{}
	// own are the change counter values this engine's latest commits
	// left, oldest first, kept while a pool runs: a change that is the
	// engine's own wakes no one (its calls wake this process's pools
	// themselves), so a busy pool is not woken by its own commits.
	ownMu   sync.Mutex
	own     []uint32
	ownFile fileCounter
}

// ownKept is how many of its own commits the watcher remembers: more than
// commit between two of its looks.
const ownKept = 64

// committed notes the counter value the engine's commit, which began at
// before, left, when it is before+1 (a transaction that wrote nothing
// leaves the counter as it was; a value further on includes another
// process's commit, which must still wake the pools). It reads the file
// only while a pool runs.
func (w *watcher) committed(path string, before uint32, err error) {
	if err != nil {
		return
	}
	w.ownMu.Lock()
	defer w.ownMu.Unlock()
	w.mu.Lock()
	watching := w.users > 0
	w.mu.Unlock()
	if !watching {
		return
	}
	if v, err := w.ownFile.read(path); err == nil && v == before+1 {
		w.own = append(w.own, v)
		if len(w.own) > ownKept {
			w.own = w.own[len(w.own)-ownKept:]
		}
	}
}

// foreign reports whether the counter's move from *last to c includes a
// commit that is not the engine's own, and sets *last to c.
func (w *watcher) foreign(last *uint32, c uint32) bool {
	n := c - *last // uint32: a counter that wrapped still counts right
	w.ownMu.Lock()
	var mine uint32
	for _, v := range w.own {
		if v-*last-1 < n { // v is in (last, c]
			mine++
		}
	}
	w.ownMu.Unlock()
	*last = c
	return n > mine
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
		w.ownMu.Lock()
		w.ownFile.close()
		w.own = nil
		w.ownMu.Unlock()
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
