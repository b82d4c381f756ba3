// Command orders is a small but complete service built on leaseq: it takes
// orders over HTTP, delivers each one to a receiver from a worker pool whose
// leases are kept alive by heartbeats, and shuts down cleanly on SIGTERM.
//
//	go run ./examples/orders -db orders.db -addr 127.0.0.1:8080 \
//	    -deliver http://127.0.0.1:9090/deliveries
//
//	curl -X POST 127.0.0.1:8080/orders -d '{"id":"order-7","qty":3}'
//
// POST /orders records the order in the service's own table and enqueues
// its delivery in one transaction (InTx, in the queue's writer turn, so
// the service's writes share the queue's commits): 201 Created, 409
// Conflict for an ID the queue has seen, 400 for anything malformed. A
// worker POSTs each order to
// -deliver with the header Idempotency-Key set to the order's ID: a worker
// that lost its lease may already have sent the order, and another worker
// sends it again, so the receiver must count each key once. The handler
// passes its context to the request, so a lost lease (ErrLeaseLost) or the
// end of the drain time (ErrShutdown) aborts a delivery in flight. A
// delivery is recorded in the service's table with the job's Finish
// (FinishTx): a worker whose lease was lost never records it after another
// worker took the order.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/leaseq/leaseq"
)

func main() {
	db := flag.String("db", "orders.db", "SQLite file of the queue")
	addr := flag.String("addr", "127.0.0.1:8080", "address to take orders on")
	deliver := flag.String("deliver", "", "URL each order is POSTed to (required)")
	flag.Parse()
	if *deliver == "" {
		fmt.Fprintln(os.Stderr, "orders: -deliver is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		err = serve(ctx, ln, *db, *deliver)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

// order is what POST /orders takes and what the receiver gets.
type order struct {
	ID  string `json:"id"`
	Qty int    `json:"qty"`
}

// serve runs the service on ln until ctx ends: the HTTP server that
// enqueues, and the worker pool that delivers.
func serve(ctx context.Context, ln net.Listener, path, deliverURL string) error {
	db, err := leaseq.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	if err := q.InTx(ctx, createTables); err != nil {
		return err
	}

	srv := &http.Server{Handler: enqueueHandler(q), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	d := &deliverer{q: q, url: deliverURL, client: &http.Client{}}
	err = q.Work(ctx, leaseq.WorkerOptions{
		Owner:        hostOwner(),
		Concurrency:  8,
		Lease:        30 * time.Second, // a dead worker's orders are retried after this
		Heartbeat:    10 * time.Second, // a live worker keeps its orders however long a delivery takes
		DrainTimeout: 10 * time.Second, // deliveries in flight at SIGTERM get this long to finish
	}, d.deliver)

	// Work returned: ctx ended and every handler's result is recorded.
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil && err == nil {
		err = serr
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// enqueueHandler takes POST /orders.
func enqueueHandler(q *leaseq.Queue) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		var o order
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&o); err != nil {
			http.Error(w, "malformed order: "+err.Error(), http.StatusBadRequest)
			return
		}
		body, _ := json.Marshal(o)
		err := q.InTx(r.Context(), func(ctx context.Context, tx leaseq.Tx) error {
			// The job first: a taken ID is ErrDuplicate, and nothing of the
			// order is kept.
			err := tx.Enqueue(ctx, leaseq.Job{ID: o.ID, Qty: o.Qty, Payload: body,
				Deadline: time.Now().Add(24 * time.Hour)}) // an order not delivered in a day is quarantined for a person to look at
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO orders (id, qty, placed_at) VALUES ($1, $2, $3)`,
				o.ID, o.Qty, time.Now().UnixMilli())
			return err
		})
		switch {
		case errors.Is(err, leaseq.ErrDuplicate):
			http.Error(w, err.Error(), http.StatusConflict)
		case errors.Is(err, leaseq.ErrInvalid):
			http.Error(w, err.Error(), http.StatusBadRequest)
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusCreated)
		}
	})
	return mux
}

// createTables makes the service's own tables: the orders it took, and the
// deliveries its workers recorded, each with the token of the claim that
// finished it.
func createTables(ctx context.Context, tx leaseq.Tx) error {
	_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS orders (
		id TEXT PRIMARY KEY, qty INTEGER NOT NULL, placed_at INTEGER NOT NULL)`)
	if err == nil {
		_, err = tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS deliveries (
			order_id TEXT PRIMARY KEY, token INTEGER NOT NULL, delivered_at INTEGER NOT NULL)`)
	}
	return err
}

// deliverer sends orders to the receiver.
type deliverer struct {
	q      *leaseq.Queue
	url    string
	client *http.Client
}

// deliver is the Handler: one POST per claim. What the receiver answers
// decides the job's fate through the handler's error.
func (d *deliverer) deliver(ctx context.Context, c leaseq.Claim) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(c.Payload))
	if err != nil {
		return leaseq.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", c.ID)
	resp, err := d.client.Do(req)
	if err != nil {
		return err // network trouble, or our context ended: retry after the backoff
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	switch {
	case resp.StatusCode < 300:
		return d.recordDelivery(ctx, c)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return leaseq.Snooze(time.Duration(secs) * time.Second) // the receiver is busy, not broken: spends no attempt
	case resp.StatusCode < 500:
		return leaseq.Permanent(fmt.Errorf("receiver refused the order: %s", resp.Status))
	default:
		return fmt.Errorf("receiver: %s", resp.Status)
	}
}

// recordDelivery writes the delivery in the service's table and finishes
// the job, in one transaction: refused (the lease was lost, and another
// worker may have the order now), nothing is recorded, and the handler
// says so.
func (d *deliverer) recordDelivery(ctx context.Context, c leaseq.Claim) error {
	ok, err := d.q.FinishTx(ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO deliveries (order_id, token, delivered_at) VALUES ($1, $2, $3)
			ON CONFLICT (order_id) DO UPDATE SET token = excluded.token, delivered_at = excluded.delivered_at`,
			c.ID, c.Token, time.Now().UnixMilli())
		return err
	})
	switch {
	case err != nil:
		return err // not recorded: retried after the backoff, the receiver de-duplicates
	case !ok:
		return leaseq.ErrLeaseLost
	}
	return nil // finished: Work writes nothing more
}

// hostOwner names this worker in the queue's rows and logs.
func hostOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("orders@%s:%d", host, os.Getpid())
}
