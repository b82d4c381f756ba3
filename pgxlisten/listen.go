// Package pgxlisten gives a leaseq Queue on PostgreSQL the notifications
// of other processes (rule 56 in leaseq's docs/rules.md): a Listener holds
// one pgx connection of its own, LISTENs on it, and reconnects on its own.
// Pass it as leaseq.Options.Listener; one Listener may serve every Queue of
// a process. The leaseq package itself imports no driver.
//
// A Listener never loses a wake-up for good: after every (re)connect it
// tells its subscribers that notifications may have been missed, so each
// pool looks once, and pools keep polling at their PollInterval whatever
// happens here. A good connection that is lost is tried again at once
// (after 100 ms), however often; only tries that fail back off, up to
// 30 s. Behind a pooler in transaction mode (PgBouncer's
// pool_mode=transaction), LISTEN does not hold: the Listener finds out by
// sending itself a notification after it connects, and if none arrives it
// gives the connection up and tries again later, so the pools poll.
package pgxlisten

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Timing of the Listener.
const (
	// probeWait is how long a new connection waits for its own probe
	// notification before it concludes that LISTEN does not hold on it.
	probeWait = 5 * time.Second
	// retryMin and retryMax bound the wait between connection tries: it
	// doubles after each try that did not give a good connection, and is
	// retryMin again after one that did.
	retryMin = 100 * time.Millisecond
	retryMax = 30 * time.Second
)

// Listener is a leaseq.Listener on a pgx connection.
type Listener struct {
	connString string

	mu      sync.Mutex
	subs    map[string]map[int]func(string) // by channel, by subscription
	next    int
	changed chan struct{} // closed when subs gained a channel
	started bool
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	conn *pgx.Conn // the connection delivering, nil between sessions

	// betweenSessions, when set (by the tests, before the first Listen),
	// is called on run's goroutine after each session with the wait
	// before the next one; a call that blocks holds the reconnect back.
	betweenSessions func(wait time.Duration)
}

// New returns a Listener for the PostgreSQL server of connString (a pgx
// connection string or URL). It connects when a Queue first listens, and
// again whenever the connection is lost.
func New(connString string) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{connString: connString, subs: map[string]map[int]func(string){},
		changed: make(chan struct{}), ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Listen calls notify with the payload of every notification on channel,
// and with "" after each connect. stop ends it.
func (l *Listener) Listen(channel string, notify func(payload string)) (stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return func() {}
	}
	id := l.next
	l.next++
	if l.subs[channel] == nil {
		l.subs[channel] = map[int]func(string){}
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.subs[channel][id] = notify
	if !l.started {
		l.started = true
		go l.run()
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[channel], id)
	}
}

// Close ends the Listener: its connection is closed and no notification is
// delivered after Close returns.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	started := l.started
	l.mu.Unlock()
	l.cancel()
	if started {
		<-l.done
	}
	return nil
}

// run connects, listens and delivers until Close, reconnecting with
// backoff whenever the connection fails or LISTEN does not hold on it.
//
// The backoff guards against a server that refuses connections and a
// pooler on which LISTEN does not hold; a connection that was good (its
// probe came back: LISTEN holds and notifications arrive) proves neither,
// so its loss is retried after retryMin, however often it happens. Timing
// the session instead kept the doubled wait after every loss of a
// connection that lived under retryMax, so a connection killed now and
// then left the pools without wake-ups for up to retryMax.
func (l *Listener) run() {
	defer close(l.done)
	wait := retryMin
	for l.ctx.Err() == nil {
		if l.session() {
			wait = retryMin
		}
		if l.betweenSessions != nil {
			l.betweenSessions(wait)
		}
		select {
		case <-l.ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, retryMax)
	}
}

// session is one connection's life: connect, LISTEN on every channel,
// check with a probe that notifications arrive, tell every subscriber to
// look once, then deliver until the connection fails or Close. It reports
// whether the connection was good: its probe came back.
func (l *Listener) session() (good bool) {
	conn, err := pgx.Connect(l.ctx, l.connString)
	if err != nil {
		return false
	}
	defer conn.Close(context.Background())
	listening := map[string]bool{}
	if l.listenAll(conn, listening) != nil || l.probe(conn) != nil {
		return false
	}
	l.mu.Lock()
	l.conn = conn
	l.mu.Unlock()
	defer func() { l.mu.Lock(); l.conn = nil; l.mu.Unlock() }()
	l.deliverAll("")
	l.serve(conn, listening)
	return true
}

// serve delivers conn's notifications, and LISTENs on each channel
// subscribed meanwhile, until the connection fails or Close.
func (l *Listener) serve(conn *pgx.Conn, listening map[string]bool) {
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if l.listenAll(conn, listening) != nil {
			return
		}
		ctx, cancel := context.WithCancel(l.ctx)
		go func() {
			select {
			case <-changed:
				cancel()
			case <-ctx.Done():
			}
		}()
		n, err := conn.WaitForNotification(ctx)
		cancel()
		switch {
		case err == nil:
			l.deliver(n.Channel, n.Payload)
		case l.ctx.Err() != nil:
			return
		case errors.Is(err, context.Canceled) && !conn.IsClosed():
			// a new channel to LISTEN on
		default:
			return
		}
	}
}

// listenAll LISTENs on each subscribed channel not yet in listening.
func (l *Listener) listenAll(conn *pgx.Conn, listening map[string]bool) error {
	l.mu.Lock()
	var chans []string
	for ch := range l.subs {
		if !listening[ch] {
			chans = append(chans, ch)
		}
	}
	l.mu.Unlock()
	for _, ch := range chans {
		if _, err := conn.Exec(l.ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
		listening[ch] = true
	}
	return nil
}

// probeChannel is the channel of a Listener's probe of its own connection.
const probeChannel = "leaseq_pgxlisten_probe"

// probe sends a notification to conn's own session and waits for it: on a
// connection that a transaction-mode pooler hands back after each
// statement, it never comes.
func (l *Listener) probe(conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(l.ctx, probeWait)
	defer cancel()
	if _, err := conn.Exec(ctx, "LISTEN "+probeChannel); err != nil {
		return err
	}
	payload := strconv.FormatUint(uint64(conn.PgConn().PID()), 10)
	if _, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", probeChannel, payload); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == probeChannel && n.Payload == payload {
			_, err := conn.Exec(ctx, "UNLISTEN "+probeChannel)
			return err
		}
		l.deliver(n.Channel, n.Payload)
	}
}

// deliver calls the subscribers of channel with payload.
func (l *Listener) deliver(channel, payload string) {
	l.mu.Lock()
	var fs []func(string)
	for _, f := range l.subs[channel] {
		fs = append(fs, f)
	}
	l.mu.Unlock()
	for _, f := range fs {
		f(payload)
	}
}

// deliverAll calls every subscriber with payload.
func (l *Listener) deliverAll(payload string) {
	l.mu.Lock()
	var fs []func(string)
	for _, subs := range l.subs {
		for _, f := range subs {
			fs = append(fs, f)
		}
	}
	l.mu.Unlock()
	for _, f := range fs {
		f(payload)
	}
}

// PID is the server process ID of the Listener's connection, 0 when it
// has none: for tests that cut the connection with pg_terminate_backend.
func (l *Listener) PID() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return 0
	}
	return l.conn.PgConn().PID()
}
