package pgxlisten

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leaseq/leaseq/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bound is how long a test waits for an event that normally takes
// milliseconds.
const bound = 20 * time.Second

// held is a Listener of a fresh database whose run stops after each
// session: waits receives the wait it chose before the next, and the next
// session begins only after a send on release (or Close).
type held struct {
	l       *Listener
	url     string
	admin   *sql.DB // another database of the server, for cutting connections
	waits   chan time.Duration
	release chan struct{}
}

func newHeld(t *testing.T) *held {
	t.Helper()
	h := &held{url: pgtest.URL(t), admin: pgtest.DB(t), waits: make(chan time.Duration, 16), release: make(chan struct{})}
	h.l = New(h.url)
	h.l.betweenSessions = func(wait time.Duration) {
		h.waits <- wait
		select {
		case <-h.release:
		case <-h.l.ctx.Done():
		}
	}
	t.Cleanup(func() { h.l.Close() })
	return h
}

// connected waits until the Listener has a good connection other than the
// one of pid (0: any) and returns its server process ID.
func (h *held) connected(t *testing.T, pid uint32) uint32 {
	t.Helper()
	limit := time.Now().Add(bound)
	for {
		if got := h.l.PID(); got != 0 && got != pid {
			return got
		}
		if time.Now().After(limit) {
			t.Fatalf("the Listener had no new connection after %v", bound)
		}
		time.Sleep(time.Millisecond) // polling a state no event announces
	}
}

// kill ends the server process pid, as an operator's pg_terminate_backend
// or a failover would.
func (h *held) kill(t *testing.T, pid uint32) {
	t.Helper()
	var ok bool
	if err := h.admin.QueryRow("SELECT pg_terminate_backend($1)", int64(pid)).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", pid, ok, err)
	}
}

// nextWait is the wait run chose after the session that just ended.
func (h *held) nextWait(t *testing.T) time.Duration {
	t.Helper()
	select {
	case w := <-h.waits:
		return w
	case <-time.After(bound):
		t.Fatalf("no session ended within %v", bound)
		return 0
	}
}

// allowConnections opens or shuts the Listener's database to new
// connections.
func (h *held) allowConnections(t *testing.T, allow bool) {
	t.Helper()
	cfg, err := pgx.ParseConfig(h.url)
	if err != nil {
		t.Fatal(err)
	}
	q := "ALTER DATABASE " + pgx.Identifier{cfg.Database}.Sanitize() + " ALLOW_CONNECTIONS false"
	if allow {
		q = "ALTER DATABASE " + pgx.Identifier{cfg.Database}.Sanitize() + " ALLOW_CONNECTIONS true"
	}
	if _, err := h.admin.Exec(q); err != nil {
		t.Fatal(err)
	}
}

// TestListenerRetriesGoodConnectionAtOnce: a connection that was good (its
// probe came back) and is then lost is tried again after retryMin, however
// many times in a row that happens; before, the wait doubled on each loss
// of a connection younger than retryMax (100 ms, 200 ms, 400 ms, … up to
// 30 s), and the pools heard nothing meanwhile.
func TestListenerRetriesGoodConnectionAtOnce(t *testing.T) {
	h := newHeld(t)
	h.l.Listen("ch", func(string) {})
	pid := uint32(0)
	for i := range 5 {
		pid = h.connected(t, pid)
		h.kill(t, pid)
		if w := h.nextWait(t); w != retryMin {
			t.Fatalf("loss %d of a good connection: wait %v before the next, want %v", i+1, w, retryMin)
		}
		h.release <- struct{}{}
	}
}

// TestListenerBacksOffWhileRefused: while the server refuses connections
// the wait doubles from one try to the next, and once a connection was
// good again the next loss waits retryMin.
func TestListenerBacksOffWhileRefused(t *testing.T) {
	h := newHeld(t)
	h.l.Listen("ch", func(string) {})
	pid := h.connected(t, 0)
	h.allowConnections(t, false)
	h.kill(t, pid)
	want := retryMin // after the good one
	for i := range 4 {
		if w := h.nextWait(t); w != want {
			t.Fatalf("session %d: wait %v, want %v", i+1, w, want)
		}
		want *= 2
		if i < 3 {
			h.release <- struct{}{} // the next try is refused
		}
	}
	h.allowConnections(t, true)
	h.release <- struct{}{} // the next try connects
	h.kill(t, h.connected(t, pid))
	if w := h.nextWait(t); w != retryMin {
		t.Fatalf("loss of a good connection after refusals: wait %v, want %v", w, retryMin)
	}
	h.release <- struct{}{}
}

// TestListenerLooksOnceAfterReconnect: a notification sent while the
// Listener had no connection is lost to it, and so every subscriber is
// called with "" once the next connection listens, and then hears what
// is sent on it.
func TestListenerLooksOnceAfterReconnect(t *testing.T) {
	h := newHeld(t)
	got := make(chan string, 16)
	h.l.Listen("ch", func(p string) { got <- p })
	next := func() string {
		t.Helper()
		select {
		case p := <-got:
			return p
		case <-time.After(bound):
			t.Fatalf("no notification within %v", bound)
			return ""
		}
	}
	pid := h.connected(t, 0)
	if p := next(); p != "" {
		t.Fatalf("first connection: %q, want the look-once \"\"", p)
	}
	h.kill(t, pid)
	h.nextWait(t) // the Listener has no connection until released
	notify := func(payload string) {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), h.url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "SELECT pg_notify('ch', $1)", payload); err != nil {
			t.Fatal(err)
		}
	}
	notify("missed")
	h.release <- struct{}{}
	if p := next(); p != "" {
		t.Fatalf("after the reconnect: %q, want the look-once \"\"", p)
	}
	h.connected(t, pid)
	notify("after")
	if p := next(); p != "after" {
		t.Fatalf("after the reconnect: %q, want \"after\"", p)
	}
}
