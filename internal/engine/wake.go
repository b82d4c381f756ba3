package engine

import "sync"

// Wakers let Work sleep without polling: a worker takes its queue's wake-up
// channel before it looks for work, and a call that makes a job claimable
// in this process closes it, so the worker looks again at once. Taking the
// channel before looking means a job enqueued between the look and the
// sleep still wakes it.
type Wakers struct {
	mu      sync.Mutex
	ch      map[string]chan struct{} // by queue name
	changed map[string]chan struct{} // Changes, by queue name (remote.go)
	publish func(string, bool)       // SetAnnounce's
}

// Wakeup returns the channel that the next Signal for queue name closes.
func (w *Wakers) Wakeup(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(map[string]chan struct{})
	}
	ch := w.ch[name]
	if ch == nil {
		ch = make(chan struct{})
		w.ch[name] = ch
	}
	return ch
}

// Signal wakes every worker of queue name that is waiting, here and, when
// the engine announces changes, in other processes.
func (w *Wakers) Signal(name string) {
	w.wake(name)
	w.announce(name, false)
}

// wake wakes every worker of queue name waiting in this process.
func (w *Wakers) wake(name string) {
	w.mu.Lock()
	ch := w.ch[name]
	delete(w.ch, name)
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}
