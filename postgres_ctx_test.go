package leaseq_test

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// TestPostgresClaimNotCutShortByItsContext checks that on PostgreSQL a claim
// whose context ends while its statement runs is not cut short: the
// statement commits on its own, so a claim cut short would leave the job
// leased while its caller got an error and no claim — Work, whose claims end
// with its context at shutdown, would never run the job, and nobody could
// until the lease ended. Between the queue and the server sits a proxy on
// loopback that holds the server's answers back for a while, so that the
// claim's context ends after its statement has reached the server and
// before the answer is back. The queue has one connection, on which an
// idle claim has prepared the claim's statement already: the claim is then
// sent whole, in one round trip.
func TestPostgresClaimNotCutShortByItsContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct := pgtest.URL(t)
	px := startSlowProxy(t, direct)
	q := openPostgresQueue(t, px.url)
	q.DB().SetMaxOpenConns(1)
	if _, ok, err := q.Claim(ctx, "w", time.Minute); err != nil || ok {
		t.Fatalf("Claim on an empty queue: %v, %v", ok, err)
	}
	if err := q.Enqueue(ctx, leaseq.Job{ID: "j"}); err != nil {
		t.Fatal(err)
	}
	px.holdAnswers(300 * time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	c, ok, err := q.Claim(cctx, "w", time.Minute)
	px.holdAnswers(0)
	row, gerr := openPostgresQueue(t, direct).Get(ctx, "j")
	switch {
	case gerr != nil:
		t.Fatal(gerr)
	case row.Status == leaseq.StatusLeased && (err != nil || !ok):
		t.Fatalf("Claim whose context ended mid-statement: %v, %v; but the job is leased to %s (token %d): the claim committed "+
			"and its caller cannot know", ok, err, row.Owner, row.Token)
	case err != nil || !ok || c.Token != row.Token:
		t.Fatalf("Claim: %+v, %v, %v; row %+v; want the claim, sent before its context ended, returned", c, ok, err, row)
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
	url  string // the server's URL with the proxy's address
	hold atomic.Int64
	wg   sync.WaitGroup
}

func (px *slowProxy) holdAnswers(d time.Duration) { px.hold.Store(int64(d)) }

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
	go func() {
		io.Copy(up, client)
		up.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			time.Sleep(time.Duration(px.hold.Load())) // the slow network under test
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
