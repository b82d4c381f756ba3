package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestOrdersEndToEnd runs the service on loopback against a real receiver:
// an order posted over HTTP is delivered once with its idempotency key, a
// duplicate is refused, and cancelling the context (what SIGTERM does) shuts
// the service down with the job recorded done.
func TestOrdersEndToEnd(t *testing.T) {
	got := make(chan string, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("Idempotency-Key") + " " + string(body)
	}))
	defer receiver.Close()

	path := filepath.Join(t.TempDir(), "orders.db")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, path, receiver.URL) }()

	post := func(body string) int {
		t.Helper()
		resp, err := http.Post("http://"+ln.Addr().String()+"/orders", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"id":"order-7","qty":3}`); code != http.StatusCreated {
		t.Fatalf("POST /orders: %d, want 201", code)
	}
	select {
	case d := <-got:
		if d != `order-7 {"id":"order-7","qty":3}` {
			t.Fatalf("receiver got %q", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the order was not delivered within 20s")
	}
	if code := post(`{"id":"order-7","qty":3}`); code != http.StatusConflict {
		t.Fatalf("POST of a duplicate: %d, want 409", code)
	}
	if code := post(`{"id":"","qty":3}`); code != http.StatusBadRequest {
		t.Fatalf("POST without an ID: %d, want 400", code)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not shut down within 30s")
	}

	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := q.Get(context.Background(), "order-7")
	if err != nil || s.Status != leaseq.StatusDone {
		t.Fatalf("order-7: %+v %v, want done", s, err)
	}
	var orders int
	var token int64
	if err := db.QueryRow(`SELECT count(*) FROM orders`).Scan(&orders); err != nil || orders != 1 {
		t.Fatalf("orders: %d %v, want order-7 alone", orders, err)
	}
	if err := db.QueryRow(`SELECT token FROM deliveries WHERE order_id = $1`, "order-7").Scan(&token); err != nil || token != s.Token {
		t.Fatalf("delivery of order-7: token %d %v, want the finishing claim's %d", token, err, s.Token)
	}
}
