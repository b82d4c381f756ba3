package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/leaseq/leaseq"
)

const demoUsage = `usage: leaseq demo [-db PATH]

Plays the lease timeline at the top of the README (A stalls, B takes over,
A's late finish is refused) against a real SQLite file and a loopback HTTP
receiver, on a manual clock, and checks every step: it exits 1 if the queue
or the receiver ever behaves otherwise.

flags:
  -db PATH              keep the database at PATH, which must not exist yet;
                        by default a temporary file is used and removed.
                        LEASEQ_DB is not read: the demo never touches an
                        existing database.
`

// The job and the lease the timeline is built around.
const (
	jobID = "order-7"
	qty   = 3
	lease = 1000 * time.Millisecond
)

// start is the fixed instant the manual clock starts at; times are printed
// relative to it.
var start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// runDemo is "leaseq demo": it shows what a fencing token does, on a real
// database. It plays the timeline at the top of the README against a real
// SQLite file (a temporary one, removed afterwards, unless -db names a new
// file to keep) and a real HTTP receiver on loopback that counts each
// order's quantity once, by job ID. A manual clock makes the timeline exact:
//
//   - at 0ms worker A claims order-7 for 1000ms, then stalls inside send;
//   - at 999ms worker B finds nothing to claim: A's lease is still live;
//   - at 1000ms A's lease has ended, so B claims the job with token 2,
//     delivers it and finishes it;
//   - at 1001ms A wakes: its delivery still reaches the receiver (a token
//     cannot stop a request already on its way), which ignores it as a
//     repeat, and its Finish with token 1 is refused.
//
// The demo checks each step and exits 1 if the queue or the receiver ever
// behaves otherwise, so it doubles as a smoke test.
func runDemo(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("demo")
	dbPath := fs.String("db", "", "")
	pos, err := parseFlags(fs, args)
	switch {
	case err != nil:
		return err
	case len(pos) > 0:
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	return demo(ctx, *dbPath, stdout)
}

// demo sets up the database, the receiver and the queue, then plays the
// timeline.
func demo(ctx context.Context, dbPath string, out io.Writer) error {
	path, cleanup, err := dbFile(dbPath)
	if err != nil {
		return err
	}
	defer cleanup()
	db, err := leaseq.Open(path)
	if err != nil {
		return err
	}
	defer db.Close()
	clock := leaseq.NewManualClock(start)
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		return err
	}
	rcv, url, stopReceiver, err := startReceiver()
	if err != nil {
		return err
	}
	defer stopReceiver()
	kept := " (temporary)"
	if dbPath != "" {
		kept = " (kept)"
	}
	fmt.Fprintf(out, "leaseq demo — db %s%s  receiver %s\n", path, kept, url)
	if err := q.Enqueue(ctx, leaseq.Job{ID: jobID, Qty: qty}); err != nil {
		return err
	}
	fmt.Fprintf(out, "enqueued %s qty=%d; leases last %dms; times are ms on a manual clock\n\n",
		jobID, qty, lease.Milliseconds())
	d := &timeline{out: out, q: q, clock: clock, rcv: rcv, client: &http.Client{Timeout: 10 * time.Second}, url: url}
	defer d.client.CloseIdleConnections()
	return d.play(ctx)
}

// dbFile returns the database path to use and how to clean up after it. A
// path given with -db must not exist yet: the timeline needs an empty queue.
func dbFile(keep string) (string, func(), error) {
	if keep != "" {
		if _, err := os.Stat(keep); err == nil {
			return "", nil, fmt.Errorf("-db %s already exists; the demo needs a new file", keep)
		}
		return keep, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "leaseq-demo-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "demo.db"), func() { os.RemoveAll(dir) }, nil
}

// delivery is what a worker sends the receiver, and receipt its answer.
type (
	delivery struct {
		ID  string `json:"id"`
		Qty int    `json:"qty"`
	}
	receipt struct {
		New   bool `json:"new"`
		Total int  `json:"total"`
	}
)

// receiver is the downstream system. It is idempotent by job ID, as rule 11
// in docs/rules.md requires of every receiver: a repeat of an ID
// is acknowledged but not counted again.
type receiver struct {
	mu         sync.Mutex
	seen       map[string]bool
	total      int
	deliveries int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var d delivery
	if err := json.NewDecoder(req.Body).Decode(&d); err != nil || d.ID == "" {
		http.Error(w, "want a JSON body {id, qty}", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	rc := receipt{New: !r.seen[d.ID]}
	if rc.New {
		r.seen[d.ID] = true
		r.total += d.Qty
	}
	r.deliveries++
	rc.Total = r.total
	r.mu.Unlock()
	json.NewEncoder(w).Encode(rc)
}

// counts returns the receiver's total and how many deliveries it got.
func (r *receiver) counts() (total, deliveries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, r.deliveries
}

// startReceiver serves a receiver on a loopback port chosen by the kernel.
func startReceiver() (*receiver, string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	rcv := &receiver{seen: map[string]bool{}}
	srv := &http.Server{Handler: rcv, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return rcv, "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// timeline plays the demo's steps and prints one line per step.
type timeline struct {
	out    io.Writer
	q      *leaseq.Queue
	clock  *leaseq.ManualClock
	rcv    *receiver
	client *http.Client
	url    string
}

// play runs the timeline. A runs in its own goroutine through Process; its
// send reports the claim and then blocks until play wakes it at 1001ms.
func (d *timeline) play(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	a := d.startA(ctx, &wg)
	if err := a.claimed(); err != nil {
		return err
	}
	if err := d.bAt(ctx, 999); err != nil {
		return err
	}
	if err := d.bAt(ctx, 1000); err != nil {
		return err
	}
	d.at(1001)
	if err := d.wake(ctx, a); err != nil {
		return err
	}
	return d.summary(ctx)
}

// stalledWorker is worker A: the claim it made, the receipt its late
// delivery got, and its Process result once it returns.
type stalledWorker struct {
	d       *timeline
	claim   chan leaseq.Claim
	wakeUp  chan struct{}
	done    chan error
	res     leaseq.Result
	receipt receipt
}

// startA starts worker A's Process call.
func (d *timeline) startA(ctx context.Context, wg *sync.WaitGroup) *stalledWorker {
	a := &stalledWorker{d: d, claim: make(chan leaseq.Claim, 1),
		wakeUp: make(chan struct{}), done: make(chan error, 1)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		a.res, err = d.q.Process(ctx, "A", lease, a.send)
		a.done <- err
	}()
	return a
}

// send is A's send: it stalls past its lease, then delivers. The delivery
// ignores the real-time deadline Process gave it, because the stall here is
// on the manual clock: A stands for a worker whose request was already on
// the wire when it stalled, which no token can call back.
func (a *stalledWorker) send(ctx context.Context, c leaseq.Claim) error {
	a.claim <- c
	select {
	case <-a.wakeUp:
	case <-ctx.Done():
		return ctx.Err()
	}
	var err error
	a.receipt, err = a.d.deliver(context.WithoutCancel(ctx), c)
	return err
}

// claimed waits for A's claim (or its failure) and prints it.
func (a *stalledWorker) claimed() error {
	select {
	case c := <-a.claim:
		a.d.line("A claims "+c.ID, "token=%d lease_until=%dms", c.Token, a.d.ms(c.LeaseUntil))
		a.d.line("A sends", "...and stalls (a GC pause, a slow disk, a network partition)")
		return check(c.Token == 1, "A got token %d, want 1", c.Token)
	case err := <-a.done:
		if err != nil {
			return fmt.Errorf("worker A: %w", err)
		}
		return errors.New("worker A claimed nothing")
	}
}

// bAt moves the clock to ms and lets worker B process one job.
func (d *timeline) bAt(ctx context.Context, ms int) error {
	d.at(ms)
	res, err := d.q.Process(ctx, "B", lease, func(ctx context.Context, c leaseq.Claim) error {
		d.line("B claims "+c.ID, "token=%d lease_until=%dms (A's lease ended exactly now)",
			c.Token, d.ms(c.LeaseUntil))
		rc, err := d.deliver(ctx, c)
		if err == nil {
			d.line(fmt.Sprintf("B delivers %s qty=%d", c.ID, c.Qty), "receiver: %s", rc)
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case !res.Claimed:
		d.line("B claims", "nothing (A's lease is live until 1000ms)")
		return check(ms < 1000, "B claimed nothing at %dms", ms)
	}
	d.line(fmt.Sprintf("B finishes token=%d", res.Claim.Token), "%s", verdict(res.Finished))
	return check(ms >= 1000 && res.Claim.Token == 2 && res.Finished,
		"B at %dms: token %d finished=%v, want claim before 1000ms refused, token 2 accepted at 1000ms",
		ms, res.Claim.Token, res.Finished)
}

// wake lets A continue, waits for its Process call and prints what happened.
func (d *timeline) wake(ctx context.Context, a *stalledWorker) error {
	close(a.wakeUp)
	if err := <-a.done; err != nil {
		return fmt.Errorf("worker A: %w", err)
	}
	c := a.res.Claim
	d.line(fmt.Sprintf("A delivers %s qty=%d", c.ID, c.Qty), "receiver: %s", a.receipt)
	st, err := d.q.Get(ctx, c.ID)
	if err != nil {
		return err
	}
	d.line(fmt.Sprintf("A finishes token=%d", c.Token), "%s (stale token: the row says owner=%s token=%d)",
		verdict(a.res.Finished), st.Owner, st.Token)
	return check(!a.res.Finished && !a.receipt.New, "A's late finish accepted=%v, delivery counted=%v; want neither",
		a.res.Finished, a.receipt.New)
}

// summary prints the final row and the receiver's total, and checks them.
func (d *timeline) summary(ctx context.Context) error {
	st, err := d.q.Get(ctx, jobID)
	if err != nil {
		return err
	}
	total, n := d.rcv.counts()
	fmt.Fprintf(d.out, "\nfinal row: %s status=%s owner=%s token=%d attempts=%d\n",
		st.ID, st.Status, st.Owner, st.Token, st.Attempts)
	fmt.Fprintf(d.out, "receiver total: %d (qty counted once over %d deliveries)\n", total, n)
	fmt.Fprintf(d.out, "\nThe token refused A's late finish; only the receiver's de-duplication by\n"+
		"job ID kept A's late delivery from being counted twice.\n")
	return check(st.Status == leaseq.StatusDone && st.Owner == "B" && st.Token == 2 && total == qty && n == 2,
		"final row %+v, receiver total %d over %d deliveries; want done by B with token 2, total %d over 2",
		st, total, n, qty)
}

// deliver posts the claim's job to the receiver.
func (d *timeline) deliver(ctx context.Context, c leaseq.Claim) (receipt, error) {
	body, _ := json.Marshal(delivery{ID: c.ID, Qty: c.Qty})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return receipt{}, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return receipt{}, err
	}
	defer resp.Body.Close()
	var rc receipt
	if resp.StatusCode != http.StatusOK {
		return rc, fmt.Errorf("receiver: %s", resp.Status)
	}
	return rc, json.NewDecoder(resp.Body).Decode(&rc)
}

func (rc receipt) String() string {
	if rc.New {
		return fmt.Sprintf("new, total=%d", rc.Total)
	}
	return fmt.Sprintf("repeat ignored, total=%d", rc.Total)
}

// at sets the clock to ms after start.
func (d *timeline) at(ms int) { d.clock.Set(start.Add(time.Duration(ms) * time.Millisecond)) }

// ms is t as milliseconds after start.
func (d *timeline) ms(t time.Time) int { return int(t.Sub(start).Milliseconds()) }

// line prints one step of the timeline at the clock's current time.
func (d *timeline) line(step, format string, args ...any) {
	fmt.Fprintf(d.out, "%4dms  %-26s %s\n", d.ms(d.clock.Now()), step, fmt.Sprintf(format, args...))
}

func verdict(ok bool) string {
	if ok {
		return "accepted"
	}
	return "refused"
}

// check turns a broken expectation into the demo's error.
func check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf("unexpected: "+format, args...)
}
