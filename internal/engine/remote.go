package engine

import "time"

// Rule 56: what another process does reaches this one's pools at once.
// An engine learns of another process's change its own way (SQLite from
// the file, PostgreSQL from a Listener's notifications) and passes it to
// its Wakers; a Queue tells the engine, through Announce, of the changes
// other processes must hear of.

// Listener is leaseq.Listener: what delivers another process's
// notifications (pgxlisten provides one for PostgreSQL). Listen calls
// notify with the payload of every notification on channel, and with ""
// after it (re)connected, when notifications may have been missed; stop
// ends it.
type Listener interface {
	Listen(channel string, notify func(payload string)) (stop func())
}

// WatchParams are WatchStart's.
type WatchParams struct {
	// Listener is the Queue's Options.Listener; nil on SQLite, or for
	// polling on PostgreSQL.
	Listener Listener
}

// Cross-process watching, for the engines.
const (
	// WatchInterval is how often the SQLite engine looks at the file for
	// another process's commit while a pool runs.
	WatchInterval = 2 * time.Millisecond
	// NotifyChannel is the PostgreSQL channel of the queue's
	// notifications; each payload is NotifyWake or NotifyChange and a
	// queue's name.
	NotifyChannel = "leaseq"
	// NotifyWake starts the payload of a Signal: a job may be claimable.
	NotifyWake = "w"
	// NotifyChange starts the payload of a Change: a running job may have
	// been taken from its holder.
	NotifyChange = "c"
)

// Notified passes a notification's payload on to the waiting workers:
// NotifyWake wakes the queue's idle pools, NotifyChange also has its
// running pools check their claims, and anything else (the "" a Listener
// delivers after it reconnected) does both for every queue.
func (w *Wakers) Notified(payload string) {
	switch {
	case len(payload) > 1 && payload[:1] == NotifyWake:
		w.wake(payload[1:])
	case len(payload) > 1 && payload[:1] == NotifyChange:
		w.Remote(payload[1:])
	default:
		w.Remote("")
	}
}

// Remote wakes every waiting worker of queue name, or of every queue when
// name is "", for a change another process made: it announces nothing.
func (w *Wakers) Remote(name string) {
	if name != "" {
		w.wake(name)
		w.touch(name)
		return
	}
	w.mu.Lock()
	chs, changed := w.ch, w.changed
	w.ch, w.changed = nil, nil
	w.mu.Unlock()
	for _, ch := range chs {
		close(ch)
	}
	for _, ch := range changed {
		close(ch)
	}
}

// Changes returns the channel that the next Change or Remote of queue name
// closes: what a pool's running handlers wait on, to learn that their
// jobs may have been cancelled.
func (w *Wakers) Changes(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = make(map[string]chan struct{})
	}
	ch := w.changed[name]
	if ch == nil {
		ch = make(chan struct{})
		w.changed[name] = ch
	}
	return ch
}

// Change tells this process's pools of queue name, and other processes',
// that a job of it may have been taken from its holder (Cancel) or the
// queue paused.
func (w *Wakers) Change(name string) {
	w.touch(name)
	w.announce(name, true)
}

// SetAnnounce sets what passes this process's changes on to other
// processes (PostgreSQL's NOTIFY); nil for none. change is false for a
// Signal, true for a Change.
func (w *Wakers) SetAnnounce(f func(name string, change bool)) {
	w.mu.Lock()
	w.publish = f
	w.mu.Unlock()
}

// touch closes the Changes channel of queue name.
func (w *Wakers) touch(name string) {
	w.mu.Lock()
	ch := w.changed[name]
	delete(w.changed, name)
	w.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// announce passes a Signal or a Change of queue name on to other
// processes.
func (w *Wakers) announce(name string, change bool) {
	w.mu.Lock()
	f := w.publish
	w.mu.Unlock()
	if f != nil {
		f(name, change)
	}
}
