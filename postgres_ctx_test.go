package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// TestPostgresClaimCutShortIsUndone: a claim whose context ends while its
// COMMIT is on the way returns its context's error at once, without
// waiting for the answer (which a server that stopped answering would
// never send); the server commits it all the same, and the queue, which
// read the claims before the COMMIT, releases them at once, fenced, with
// no delay: the job is pending again, claimable at once, its token and
// attempt counted as every claim's are but the attempt given back, as a
// Snooze gives it (rules 24 and 49; a job is never left leased to a caller
// that got an error, and a claim nobody ran spends no attempt). Between the queue and the server sits a
// proxy on loopback that ends the claim's context as the COMMIT passes and
// holds the server's answer back.
func TestPostgresClaimCutShortIsUndone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := pgtest.URL(t)
	px := startSlowProxy(t, direct)
	q := openPostgresQueue(t, px.url)
	if err := q.Enqueue(ctx, leaseq.Job{ID: "j"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	px.onCommit(func() {
		px.holdAnswers(3 * time.Second)
		cancel()
	})
	began := time.Now()
	_, ok, err := q.Claim(cctx, "w", time.Minute)
	took := time.Since(began)
	px.onCommit(nil)
	px.holdAnswers(0)
	if ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim whose context ended as its COMMIT went out: %v, %v; want its context's error", ok, err)
	}
	if took > 2*time.Second {
		t.Fatalf("Claim took %v, want it back at once when its context ended, not after the server's answer", took)
	}
	direct0 := openPostgresQueue(t, direct)
	var row leaseq.State
	for limit := time.Now().Add(20 * time.Second); ; {
		row, err = direct0.Get(ctx, "j")
		if err != nil {
			t.Fatal(err)
		}
		if row.Status == leaseq.StatusPending && row.Token == 1 {
			break
		}
		if time.Now().After(limit) {
			t.Fatalf("row %s 20s after the claim was cut short; want it released: pending, token 1", fmtState(row))
		}
		time.Sleep(5 * time.Millisecond) // polling the row, bounded by limit
	}
	if row.Attempts != 1 || row.MaxAttempts != 4 || !row.LeaseUntil.Equal(t0) || !row.RunAt.Equal(t0) || !strings.HasPrefix(row.Reason, "claim undone") {
		t.Fatalf("row %s after the undo; want released at the queue's instant with no delay, saying why, MaxAttempts 3 + 1", fmtState(row))
	}
	c, ok, err := q.Claim(ctx, "w2", time.Minute)
	if err != nil || !ok || c.Token != 2 || c.Attempt != 2 {
		t.Fatalf("Claim after the undo: %+v %v %v; want the job with token 2, attempt 2", c, ok, err)
	}
}

func openPostgresQueue(t *testing.T, url string) *leaseq.Queue {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Clock: leaseq.NewManualClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// slowProxy forwards TCP connections on loopback to a server, and holds
// each chunk of the server's answers back for hold before passing it on.
type slowProxy struct {
	url    string // the server's URL with the proxy's address
	hold   atomic.Int64
	commit atomic.Pointer[func()] // called, once, when a client sends a COMMIT
	// sent is called, once, when a client sends a message with its word;
	// that connection's answers are then held back for its hold.
	sent atomic.Pointer[sentHook]
	// cut, once set, drops the next answer of the server, whichever
	// connection's, and cuts that connection at both ends: the client's
	// message was carried out, and its answer lost.
	cut atomic.Bool
	wg  sync.WaitGroup
}

// sentHook is what onSend arms.
type sentHook struct {
	word []byte
	hold time.Duration
	f    func()
}

// onSend has f called, once, when the next message containing word is
// about to pass to the server, and holds the answers on that message's
// connection back for hold from then on.
func (px *slowProxy) onSend(word string, hold time.Duration, f func()) {
	px.sent.Store(&sentHook{[]byte(word), hold, f})
}

func (px *slowProxy) holdAnswers(d time.Duration) { px.hold.Store(int64(d)) }

// onCommit has f called, once, when the next COMMIT is about to pass to
// the server;
// nil: none.
func (px *slowProxy) onCommit(f func()) {
	if f == nil {
		px.commit.Store(nil)
		return
	}
	px.commit.Store(&f)
}

// startSlowProxy starts a proxy to the server of rawURL, stopped when t
// ends.
func startSlowProxy(t *testing.T, rawURL string) *slowProxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := u.Host
	u.Host = ln.Addr().String()
	px := &slowProxy{url: u.String()}
	var conns sync.Map
	px.wg.Add(1)
	go func() {
		defer px.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(client, true)
			px.wg.Add(1)
			go func() {
				defer px.wg.Done()
				px.forward(client, server, &conns)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		px.wg.Wait()
	})
	return px
}

// forward joins client to a new connection to server until either ends.
func (px *slowProxy) forward(client net.Conn, server string, conns *sync.Map) {
	defer client.Close()
	up, err := net.Dial("tcp", server)
	if err != nil {
		return
	}
	conns.Store(up, true)
	defer up.Close()
	var held atomic.Int64 // this connection's hold (onSend)
	go func() {
		defer up.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				if bytes.Contains(bytes.ToLower(buf[:n]), []byte("commit")) {
					if f := px.commit.Swap(nil); f != nil {
						(*f)() // before the server can answer
					}
				}
				if h := px.sent.Load(); h != nil && bytes.Contains(buf[:n], h.word) && px.sent.CompareAndSwap(h, nil) {
					held.Store(int64(h.hold))
					h.f()
				}
				if _, werr := up.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 && px.cut.CompareAndSwap(true, false) {
			up.Close()
			return
		}
		if n > 0 {
			time.Sleep(time.Duration(max(px.hold.Load(), held.Load()))) // the slow network under test
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
