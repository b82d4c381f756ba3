package leaseq_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestProcessEndToEnd and the TestProcess* tests after it run on each engine
// (forEngines in engine_test.go). TestTwoProcessesOneWinner (with its child,
// TestChildProcessClaim), TestSendRunsWithoutLock and
// TestPlainDSNGoroutinesDrain run on SQLite only: they open the file from
// other processes and pools with DSNs of their own, and test its locks.

// procWait bounds every wait of these tests on another goroutine or process,
// so that a lock held by mistake fails the test with a message instead of
// hanging it. It is never waited out on success.
const procWait = 30 * time.Second

// procReport is one line a claiming child process prints: its readiness
// (Round "ready"), or the outcome of one Claim.
type procReport struct {
	Round   string `json:"round"`
	Owner   string `json:"owner"`
	Claimed bool   `json:"claimed"`
	ID      string `json:"id"`
	Token   int64  `json:"token"`
	Err     string `json:"err"`
}

// procReportPrefix marks report lines among whatever else the test binary
// prints.
const procReportPrefix = "LEASEQ-REPORT "

// TestChildProcessClaim is the child half of TestTwoProcessesOneWinner. It
// opens the queue with a clock fixed at LEASEQ_NOW_MS, says it is ready, and
// then claims once for every line it reads on stdin, printing each result,
// until stdin closes. Waiting on stdin lets the parent start both children's
// claims at the same instant, after their start-up.
func TestChildProcessClaim(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "process-claim" {
		return
	}
	owner := os.Getenv("LEASEQ_OWNER")
	report := func(r procReport) {
		r.Owner = owner
		b, _ := json.Marshal(r)
		fmt.Printf("%s%s\n", procReportPrefix, b)
	}
	nowMS, err := strconv.ParseInt(os.Getenv("LEASEQ_NOW_MS"), 10, 64)
	if err != nil {
		report(procReport{Round: "ready", Err: "LEASEQ_NOW_MS: " + err.Error()})
		return
	}
	ctx := context.Background()
	db, err := leaseq.Open(os.Getenv("LEASEQ_DB"))
	if err != nil {
		report(procReport{Round: "ready", Err: err.Error()})
		return
	}
	defer db.Close()
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: leaseq.NewManualClock(time.UnixMilli(nowMS))})
	if err != nil {
		report(procReport{Round: "ready", Err: err.Error()})
		return
	}
	report(procReport{Round: "ready"})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cctx, cancel := context.WithTimeout(ctx, procWait)
		c, ok, err := q.Claim(cctx, owner, time.Hour)
		cancel()
		r := procReport{Round: in.Text(), Claimed: ok, ID: c.ID, Token: c.Token}
		if err != nil {
			r.Err = err.Error()
		}
		report(r)
	}
}

// procChild is a running TestChildProcessClaim.
type procChild struct {
	name    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	reports chan procReport
	log     procLog // everything else it printed, for failure messages
	done    chan error
}

// procLog collects a child's other output; it is written by the reading
// goroutines and read by the test.
type procLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startProcChild re-executes the test binary as a claiming child named owner
// on the database at path, with its clock fixed at now.
func startProcChild(t *testing.T, path, owner string, now time.Time) *procChild {
	t.Helper()
	k := &procChild{name: owner, reports: make(chan procReport, 1), done: make(chan error, 1)}
	k.cmd = exec.Command(os.Args[0], "-test.run=^TestChildProcessClaim$", "-test.count=1")
	k.cmd.Env = append(os.Environ(),
		"LEASEQ_CHILD=process-claim",
		"LEASEQ_DB="+path,
		"LEASEQ_OWNER="+owner,
		"LEASEQ_NOW_MS="+strconv.FormatInt(now.UnixMilli(), 10))
	k.cmd.Stderr = &k.log
	var err error
	if k.stdin, err = k.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", owner, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if b, ok := strings.CutPrefix(line, procReportPrefix); ok {
				var r procReport
				if err := json.Unmarshal([]byte(b), &r); err != nil {
					r = procReport{Err: fmt.Sprintf("unparsable report %q: %v", line, err)}
				}
				k.reports <- r
				continue
			}
			fmt.Fprintln(&k.log, line)
		}
		close(k.reports)
		k.done <- k.cmd.Wait()
	}()
	t.Cleanup(func() {
		k.stdin.Close()
		select {
		case <-k.done:
		case <-time.After(procWait):
			k.cmd.Process.Kill()
			<-k.done
		}
	})
	return k
}

// next returns the child's next report, which must be for round.
func (k *procChild) next(t *testing.T, round string) procReport {
	t.Helper()
	select {
	case r, ok := <-k.reports:
		if !ok {
			t.Fatalf("child %s exited before reporting round %q; its output:\n%s", k.name, round, k.log.String())
		}
		if r.Round != round {
			t.Fatalf("child %s reported %+v, want a report for round %q; its output:\n%s", k.name, r, round, k.log.String())
		}
		return r
	case <-time.After(procWait):
		t.Fatalf("child %s: no report for round %q after %v; its output:\n%s", k.name, round, procWait, k.log.String())
	}
	panic("unreachable")
}

// stop closes the child's stdin and waits for it to exit cleanly.
func (k *procChild) stop(t *testing.T) {
	t.Helper()
	k.stdin.Close()
	select {
	case err := <-k.done:
		if err != nil {
			t.Errorf("child %s exited with %v; its output:\n%s", k.name, err, k.log.String())
		}
		k.done <- err // for the cleanup
	case <-time.After(procWait):
		t.Errorf("child %s did not exit after stdin closed; its output:\n%s", k.name, k.log.String())
	}
}

// TestTwoProcessesOneWinner: two OS processes claim the only claimable job
// at the same instant, round after round. Exactly one gets it (token 1), the
// other gets nothing, and neither sees an error — "database is locked" in
// particular (rules 1, 2 and 9). Earlier rounds' jobs stay leased (the
// children's clock never moves), so each round's new job is the only one
// claimable.
func TestTwoProcessesOneWinner(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	kids := []*procChild{startProcChild(t, f.path, "P1", t0), startProcChild(t, f.path, "P2", t0)}
	for _, k := range kids {
		if r := k.next(t, "ready"); r.Err != "" {
			t.Fatalf("child %s could not open the queue: %s", k.name, r.Err)
		}
	}
	const rounds = 20
	wins := map[string]int{}
	for round := range rounds {
		id := fmt.Sprintf("only-%02d", round)
		f.enqueue(leaseq.Job{ID: id, Qty: round})
		// Alternate who hears "go" first, so neither always has the head start.
		order := []*procChild{kids[round%2], kids[1-round%2]}
		for _, k := range order {
			if _, err := io.WriteString(k.stdin, id+"\n"); err != nil {
				t.Fatalf("round %d: tell child %s to claim: %v; its output:\n%s", round, k.name, err, k.log.String())
			}
		}
		var winners []procReport
		for _, k := range kids {
			r := k.next(t, id)
			if r.Err != "" {
				t.Fatalf("round %d: child %s: Claim error %q, want none; rows:\n%s", round, k.name, r.Err, f.dump())
			}
			if r.Claimed {
				winners = append(winners, r)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners %+v, want exactly 1; rows:\n%s", round, len(winners), winners, f.dump())
		}
		w := winners[0]
		if w.ID != id || w.Token != 1 {
			t.Fatalf("round %d: winner %s claimed %q token %d, want %q token 1; rows:\n%s", round, w.Owner, w.ID, w.Token, id, f.dump())
		}
		f.wantRow(leaseq.State{ID: id, Qty: round, Status: leaseq.StatusLeased, Owner: w.Owner,
			Token: 1, Attempts: 1, MaxAttempts: leaseq.MaxAttemptsDefault, LeaseUntil: t0.Add(time.Hour)})
		wins[w.Owner]++
	}
	for _, k := range kids {
		k.stop(t)
	}
	t.Logf("%d rounds, wins per process: %v", rounds, wins)
}

// TestSendRunsWithoutLock: while send runs, Process holds no transaction,
// lock or open statement (rule 7). A second *sql.DB on the same file,
// whose busy timeout is far too short to wait out a held lock, takes the
// write lock itself, enqueues, and claims and finishes through its own
// queue — all from inside send.
func TestSendRunsWithoutLock(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	other, err := sql.Open("sqlite", "file:"+f.path+"?_pragma=busy_timeout(50)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	q2, err := leaseq.New(f.ctx, other, leaseq.Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	f.enqueue(leaseq.Job{ID: "a", Qty: 1})

	sent := false
	send := func(ctx context.Context, c leaseq.Claim) error {
		sent = true
		// A bounded context: writeTx retries BUSY until its context ends, so
		// a lock held by Process shows up here as a deadline, not a hang.
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()

		// The write lock itself is free: BEGIN IMMEDIATE on the other DB
		// succeeds at once (50ms busy timeout, no retry).
		conn, err := other.Conn(wctx)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(wctx, "BEGIN IMMEDIATE"); err != nil {
			conn.Close()
			t.Errorf("inside send: BEGIN IMMEDIATE on another connection: %v, want the write lock free", err)
			return err
		}
		if _, err := conn.ExecContext(wctx, "ROLLBACK"); err != nil {
			t.Errorf("inside send: ROLLBACK: %v", err)
		}
		conn.Close()

		for _, id := range []string{"b", "c"} {
			if err := q2.Enqueue(wctx, leaseq.Job{ID: id, Qty: 2}); err != nil {
				t.Errorf("inside send: Enqueue(%q) on another DB: %v, want nil", id, err)
				return err
			}
		}
		cb, ok, err := q2.Claim(wctx, "B", time.Second)
		if err != nil || !ok || cb.ID != "b" || cb.Token != 1 {
			t.Errorf("inside send: Claim as B on another DB = %q token %d ok=%v err=%v, want \"b\" token 1 ok=true; rows:\n%s",
				cb.ID, cb.Token, ok, err, f.dump())
			return errors.New("claim inside send failed")
		}
		if done, err := q2.Finish(wctx, cb); err != nil || !done {
			t.Errorf("inside send: Finish(%+v) on another DB = %v, %v, want true, nil", cb, done, err)
		}
		return nil
	}
	res, err := f.q.Process(f.ctx, "A", time.Second, send)
	if err != nil || !res.Claimed || !res.Finished || res.Claim.ID != "a" {
		t.Fatalf("Process as A = %+v, %v; want a claimed and finished, nil error; rows:\n%s", res, err, f.dump())
	}
	if !sent {
		t.Fatal("send was not called")
	}
	if t.Failed() {
		t.FailNow()
	}
	// The job enqueued during send is there for anyone afterwards.
	c := f.mustClaim("C", time.Second)
	if c.ID != "c" || c.Token != 1 {
		t.Fatalf("claim after Process = %q token %d, want \"c\" token 1; rows:\n%s", c.ID, c.Token, f.dump())
	}
	lease := ms(1000)
	f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: lease})
	f.wantRow(leaseq.State{ID: "b", Qty: 2, Status: leaseq.StatusDone, Owner: "B", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: lease})
	f.wantRow(leaseq.State{ID: "c", Qty: 2, Status: leaseq.StatusLeased, Owner: "C", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: lease})
}

// TestPlainDSNGoroutinesDrain: goroutines that each open the file with a
// plain DSN — no _txlock, no busy timeout, so every lock conflict comes back
// as SQLITE_BUSY at once — create their queues and drain the jobs
// concurrently. No call returns an error, every job is claimed and finished
// exactly once, and every row ends done.
func TestPlainDSNGoroutinesDrain(t *testing.T) {
	const workers, jobs = 8, 300
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	for i := range jobs {
		f.enqueue(leaseq.Job{ID: fmt.Sprintf("job-%03d", i), Qty: i})
	}
	// Only a guard against a hang: the drain takes a few seconds, but every
	// transaction here is serialised on one file lock, and under the race
	// detector on a busy machine each costs tens of milliseconds.
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Minute)
	defer cancel()

	var (
		mu       sync.Mutex
		claims   = map[string]int{} // claims returned per job ID
		finishes = map[string]int{} // accepted finishes per job ID
		perOwner = map[string]int{}
		errs     []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		db, err := sql.Open("sqlite", "file:"+f.path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		wg.Go(func() {
			<-start
			q, err := leaseq.New(ctx, db, leaseq.Options{Clock: f.clock})
			if err != nil {
				fail(fmt.Errorf("%s: New: %w", owner, err))
				return
			}
			for {
				// The clock never moves and the lease is long: every lease
				// stays live, so a refused Finish would be a bug.
				c, ok, err := q.Claim(ctx, owner, time.Minute)
				if err != nil {
					fail(fmt.Errorf("%s: Claim: %w", owner, err))
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				claims[c.ID]++
				mu.Unlock()
				done, err := q.Finish(ctx, c)
				if err != nil {
					fail(fmt.Errorf("%s: Finish(%s token %d): %w", owner, c.ID, c.Token, err))
					return
				}
				if !done {
					fail(fmt.Errorf("%s: Finish(%s token %d) = false, want true: the lease is live", owner, c.ID, c.Token))
					continue
				}
				mu.Lock()
				finishes[c.ID]++
				perOwner[owner]++
				mu.Unlock()
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("drain took %v", time.Since(began))
	if len(errs) > 0 {
		t.Fatalf("%d errors, want none; first ones: %v", len(errs), errs[:min(len(errs), 5)])
	}
	for i := range jobs {
		id := fmt.Sprintf("job-%03d", i)
		if claims[id] != 1 || finishes[id] != 1 {
			t.Errorf("%s: claimed %d times, finished %d times, want 1 and 1; row %s", id, claims[id], finishes[id], fmtState(f.get(id)))
		}
	}
	if len(claims) != jobs {
		t.Errorf("claims returned %d distinct job IDs, want %d", len(claims), jobs)
	}
	var notDone int
	if err := f.db.QueryRow("SELECT count(*) FROM leaseq_jobs WHERE status <> 'done' OR token <> 1 OR attempts <> 1").Scan(&notDone); err != nil {
		t.Fatal(err)
	}
	if notDone != 0 {
		t.Errorf("%d rows not done with token 1 after the drain, want 0; rows:\n%s", notDone, f.dump())
	}
	t.Logf("finishes per worker: %v", perOwner)
}

// procDelivery is one request the receiver got.
type procDelivery struct {
	ID     string `json:"id"`
	Qty    int    `json:"qty"`
	Owner  string `json:"owner"`
	Token  int64  `json:"token"`
	Repeat bool   `json:"-"` // the ID had been delivered before
}

// procReceiver is an idempotent receiver, as rule 11 requires: it
// counts each job ID's qty once, however often it is delivered.
type procReceiver struct {
	srv        *httptest.Server
	mu         sync.Mutex
	deliveries []procDelivery
	total      int
}

func newProcReceiver(t *testing.T) *procReceiver {
	r := &procReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var d procDelivery
		if err := json.NewDecoder(req.Body).Decode(&d); err != nil || d.ID == "" {
			http.Error(w, fmt.Sprintf("bad delivery: %v", err), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, prev := range r.deliveries {
			if prev.ID == d.ID {
				d.Repeat = true
			}
		}
		if !d.Repeat {
			r.total += d.Qty
		}
		r.deliveries = append(r.deliveries, d)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// post delivers c to the receiver.
func (r *procReceiver) post(ctx context.Context, c leaseq.Claim) error {
	body, err := json.Marshal(procDelivery{ID: c.ID, Qty: c.Qty, Owner: c.Owner, Token: c.Token})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("receiver answered %s", resp.Status)
	}
	return nil
}

// state returns what the receiver has seen so far.
func (r *procReceiver) state() ([]procDelivery, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]procDelivery(nil), r.deliveries...), r.total
}

// TestProcessEndToEnd is the README's timeline with a real receiver, one hour
// to the lease: worker A's send stalls past its lease, worker B (its own
// connection pool) reclaims the job and delivers it, then A's delivery
// arrives late. The receiver counts the qty once, A's Finish is refused, and
// the row is B's.
//
// The lease is an hour on the queue's clock so that the real-time deadline
// of A's send context (the time left on its lease) never ends during the
// test; the manual clock is what moves A's lease past its end.
func TestProcessEndToEnd(t *testing.T) { forEngines(t, testProcessEndToEnd) }

func testProcessEndToEnd(t *testing.T, eng testEngine) {
	const lease = time.Hour
	f := newFixture(t, eng, leaseq.Options{})
	recv := newProcReceiver(t)
	f.enqueue(leaseq.Job{ID: "order-1", Qty: 7})

	dbB := eng.open(t, f.path)
	qB, err := leaseq.New(f.ctx, dbB, leaseq.Options{Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, procWait)
	defer cancel()

	// Worker A: claims at 0, then its send blocks until released.
	aSending := make(chan leaseq.Claim, 1)
	releaseA := make(chan struct{})
	type outcome struct {
		res leaseq.Result
		err error
	}
	aDone := make(chan outcome, 1)
	go func() {
		res, err := f.q.Process(ctx, "A", lease, func(sctx context.Context, c leaseq.Claim) error {
			aSending <- c
			select {
			case <-releaseA:
			case <-sctx.Done():
				return fmt.Errorf("A's send context ended while it stalled: %w", sctx.Err())
			}
			return recv.post(sctx, c)
		})
		aDone <- outcome{res, err}
	}()
	var cA leaseq.Claim
	select {
	case cA = <-aSending:
	case o := <-aDone:
		t.Fatalf("A's Process returned %+v, %v before calling send; rows:\n%s", o.res, o.err, f.dump())
	case <-ctx.Done():
		t.Fatal("A never reached send")
	}
	if cA.Token != 1 || cA.Owner != "A" {
		t.Fatalf("A's claim = %+v, want owner A token 1", cA)
	}

	// 1ms before A's lease ends nobody else gets the job.
	f.clock.Set(t0.Add(lease - time.Millisecond))
	res, err := qB.Process(ctx, "B", lease, func(context.Context, leaseq.Claim) error {
		t.Error("B's send called while A's lease is live")
		return nil
	})
	if err != nil || res.Claimed {
		t.Fatalf("B's Process 1ms before A's lease ends = %+v, %v; want nothing claimed, nil error; rows:\n%s", res, err, f.dump())
	}

	// Exactly at the end of A's lease, B reclaims and delivers.
	f.clock.Set(t0.Add(lease))
	res, err = qB.Process(ctx, "B", lease, recv.post)
	if err != nil || !res.Claimed || !res.Finished || res.Claim.Token != 2 || res.Claim.Owner != "B" {
		t.Fatalf("B's Process at A's lease end = %+v, %v; want token 2 claimed and finished, nil error; rows:\n%s", res, err, f.dump())
	}
	if got, total := recv.state(); len(got) != 1 || got[0].Token != 2 || total != 7 {
		t.Fatalf("receiver after B: deliveries %+v total %d, want one from B token 2 and total 7", got, total)
	}

	// A wakes up 1ms later: its request still arrives (the token does not
	// fence outside effects), the receiver drops it, and Finish refuses A.
	f.clock.Set(t0.Add(lease + time.Millisecond))
	close(releaseA)
	var a outcome
	select {
	case a = <-aDone:
	case <-ctx.Done():
		t.Fatal("A's Process did not return after its send was released")
	}
	if a.err != nil || !a.res.Claimed || a.res.Finished || a.res.Claim.Token != 1 {
		t.Fatalf("A's Process = %+v, %v; want claimed with token 1, not finished, nil error; rows:\n%s", a.res, a.err, f.dump())
	}
	got, total := recv.state()
	want := []procDelivery{{ID: "order-1", Qty: 7, Owner: "B", Token: 2}, {ID: "order-1", Qty: 7, Owner: "A", Token: 1, Repeat: true}}
	if fmt.Sprint(got) != fmt.Sprint(want) || total != 7 {
		t.Fatalf("receiver deliveries %+v total %d,\nwant %+v total 7 (the qty once)", got, total, want)
	}
	f.wantRow(leaseq.State{ID: "order-1", Qty: 7, Status: leaseq.StatusDone, Owner: "B", Token: 2,
		Attempts: 2, MaxAttempts: 3, LeaseUntil: t0.Add(2 * lease)})
}

// TestProcessSendError: a failed send is returned wrapped, the job is not
// finished, and it stays leased with the same token until the lease ends —
// then another worker claims it with the next token.
func TestProcessSendError(t *testing.T) { forEngines(t, testProcessSendError) }

func testProcessSendError(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "j", Qty: 3})
	errDown := errors.New("receiver down")
	res, err := f.q.Process(f.ctx, "A", time.Second, func(context.Context, leaseq.Claim) error { return errDown })
	if !errors.Is(err, errDown) {
		t.Fatalf("Process error = %v, want one wrapping %v", err, errDown)
	}
	if !res.Claimed || res.Finished || res.Claim.ID != "j" || res.Claim.Token != 1 || res.Claim.Owner != "A" {
		t.Fatalf("Process result = %+v, want j claimed by A with token 1, not finished", res)
	}
	leased := leaseq.State{ID: "j", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 1,
		Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)}
	f.wantRow(leased)

	f.at(999)
	if c, ok := f.claim("B", time.Second); ok {
		t.Fatalf("B claimed %+v at 999ms, want nothing: A's lease is live until 1000ms; rows:\n%s", c, f.dump())
	}
	f.wantRow(leased)

	f.at(1000)
	c := f.mustClaim("B", time.Second)
	if c.ID != "j" || c.Token != 2 || c.Attempt != 2 {
		t.Fatalf("B's claim at 1000ms = %+v, want j token 2 attempt 2", c)
	}
	f.wantRow(leaseq.State{ID: "j", Qty: 3, Status: leaseq.StatusLeased, Owner: "B", Token: 2,
		Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000)})
}

// TestProcessNothingClaimable: with no claimable job — an empty queue, or
// only a live lease — Process returns Result{} and a nil error without
// calling send, and changes nothing.
func TestProcessNothingClaimable(t *testing.T) { forEngines(t, testProcessNothingClaimable) }

func testProcessNothingClaimable(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	send := func(_ context.Context, c leaseq.Claim) error {
		t.Errorf("send called with %+v, want no call", c)
		return nil
	}
	res, err := f.q.Process(f.ctx, "A", time.Second, send)
	if err != nil || res.Claimed || res.Finished || res.Claim.ID != "" || res.Claim.Token != 0 {
		t.Fatalf("Process on an empty queue = %+v, %v; want Result{}, nil", res, err)
	}

	f.enqueue(leaseq.Job{ID: "j", Qty: 1})
	f.mustClaim("A", time.Second)
	f.at(999)
	res, err = f.q.Process(f.ctx, "B", time.Second, send)
	if err != nil || res.Claimed || res.Finished || res.Claim.ID != "" || res.Claim.Token != 0 {
		t.Fatalf("Process with only a live lease = %+v, %v; want Result{}, nil; rows:\n%s", res, err, f.dump())
	}
	f.wantRow(leaseq.State{ID: "j", Qty: 1, Status: leaseq.StatusLeased, Owner: "A", Token: 1,
		Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})
}

// TestProcessSendContextDeadline: send's context ends when the lease does —
// the time left on the queue's clock, counted from now on the system clock —
// including a lease cut short by the job's deadline (rule 5).
func TestProcessSendContextDeadline(t *testing.T) { forEngines(t, testProcessSendContextDeadline) }

func testProcessSendContextDeadline(t *testing.T, eng testEngine) {
	for _, tc := range []struct {
		name     string
		deadline time.Time     // the job's
		want     time.Duration // lease left when send starts
	}{
		{"full lease", time.Time{}, time.Hour},
		{"lease capped by deadline", t0.Add(10 * time.Minute), 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "j", Deadline: tc.deadline})
			before := time.Now()
			var (
				called   bool
				deadline time.Time
				hasDL    bool
				ctxErr   error
				inSend   time.Time
			)
			res, err := f.q.Process(f.ctx, "A", time.Hour, func(ctx context.Context, c leaseq.Claim) error {
				called, inSend = true, time.Now()
				deadline, hasDL = ctx.Deadline()
				ctxErr = ctx.Err()
				return nil
			})
			if err != nil || !res.Finished {
				t.Fatalf("Process = %+v, %v; want finished, nil error; rows:\n%s", res, err, f.dump())
			}
			if !called {
				t.Fatal("send not called")
			}
			if !hasDL || ctxErr != nil {
				t.Fatalf("send's context: deadline set %v, err %v; want a deadline and no error", hasDL, ctxErr)
			}
			// The deadline was computed between before and inSend, so it lies
			// in [before+want, inSend+want]; a deadline of the full lease when
			// the job's deadline cuts it short would fall outside.
			lo, hi := before.Add(tc.want), inSend.Add(tc.want)
			if deadline.Before(lo) || deadline.After(hi) {
				t.Fatalf("send's deadline is %v after send started, want %v (between %v and %v)",
					deadline.Sub(inSend), tc.want, lo.Sub(inSend), hi.Sub(inSend))
			}
		})
	}
}

// TestProcessRecordsDelivery is rule 27 in docs/rules.md, and the
// regression test of the delivered job lost on shutdown: send delivered and
// returned nil, but the caller's context ended meanwhile (a SIGTERM, or the
// caller's own deadline). Process still records the job done, on a context
// of its own, instead of leaving it leased until its lease runs out.
func TestProcessRecordsDelivery(t *testing.T) { forEngines(t, testProcessRecordsDelivery) }

func testProcessRecordsDelivery(t *testing.T, eng testEngine) {
	for _, noGroup := range []bool{false, true} {
		for _, end := range []string{"cancelled", "deadline"} {
			t.Run(fmt.Sprintf("DisableGroupCommit=%v/%s", noGroup, end), func(t *testing.T) {
				f := newFixture(t, eng, leaseq.Options{DisableGroupCommit: noGroup})
				f.enqueue(leaseq.Job{ID: "order-1", Qty: 2})
				var ctx context.Context
				ctx, cancel := context.WithCancel(f.ctx)
				defer cancel()
				if end == "deadline" {
					ending := &endingContext{Context: f.ctx, done: make(chan struct{})}
					ctx, cancel = ending, ending.end
				}
				res, err := f.q.Process(ctx, "A", time.Minute, func(sendCtx context.Context, c leaseq.Claim) error {
					cancel()
					<-sendCtx.Done() // the delivery was made; the caller is going away
					return nil
				})
				if ctx.Err() == nil {
					t.Fatal("the caller's context had not ended when Process returned")
				}
				if err != nil || !res.Claimed || !res.Finished {
					t.Fatalf("Process after the caller's context ended: %+v, %v; want claimed and finished, nil error; rows:\n%s", res, err, f.dump())
				}
				f.wantRow(leaseq.State{ID: "order-1", Qty: 2, Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1,
					MaxAttempts: 3, LeaseUntil: ms(60_000), EnqueuedAt: ms(0), UpdatedAt: ms(0)})
			})
		}
	}
}

// endingContext is a context whose deadline passes when end is called, so
// that a test can let a caller's deadline pass at an exact point of a call
// instead of guessing how long the call before it takes.
type endingContext struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func (c *endingContext) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *endingContext) Done() <-chan struct{}       { return c.done }
func (c *endingContext) end()                        { c.once.Do(func() { close(c.done) }) }

func (c *endingContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
