package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The chaos test runs worker processes against one database file on the real
// clock, SIGKILLs them at random moments, restarts them under the same
// names, and afterwards checks the history the workers wrote against the
// final rows and what the receiver got.
const (
	chaosWorkers = 3
	chaosLease   = 150 * time.Millisecond
	// chaosRun is how long jobs keep arriving in CI; LEASEQ_SOAK=10m makes
	// it a soak.
	chaosRun = 8 * time.Second
	// chaosDrain bounds the wait for the queue to empty after the last
	// enqueue; a queue that does not drain by then has stuck jobs.
	chaosDrain = 60 * time.Second
	// chaosEnqueueEvery is the arrival rate of jobs.
	chaosEnqueueEvery = 30 * time.Millisecond
	// chaosBacklog jobs are enqueued before the workers start.
	chaosBacklog = 100
	// chaosStallPercent of deliveries stall for about a lease, so that their
	// finishes are refused and another worker takes the job.
	chaosStallPercent = 12
	// chaosWidenPercent of claims and finishes wait before their history
	// line is written; see widenWindow.
	chaosWidenPercent = 10
)

// histEvent is one line of a worker's history file.
//
//   - start: the incarnation began (PID).
//   - claim: Claim returned Job with Token, Attempt and LeaseUntil; At is
//     the clock reading the claim transaction used.
//   - deliver: the receiver answered the delivery of Job/Token.
//   - finish: Finish of Job/Token returned OK; At is the clock reading the
//     fence compared with lease_until.
//   - exit: the incarnation was asked to stop and did.
//
// Times are Unix milliseconds, the queue's own resolution.
type histEvent struct {
	Ev         string `json:"ev"`
	Job        string `json:"job,omitempty"`
	Owner      string `json:"owner,omitempty"`
	Token      int64  `json:"token,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	LeaseUntil int64  `json:"lease_until,omitempty"`
	Deadline   int64  `json:"deadline,omitempty"`
	At         int64  `json:"at,omitempty"`
	OK         bool   `json:"ok,omitempty"`
	PID        int    `json:"pid,omitempty"`
}

// recordingClock is the system clock, remembering its last reading. A worker
// is one goroutine and each queue operation reads the clock once inside its
// committed transaction, so after Claim or Finish returns, last is exactly
// the "now" that operation compared and stored.
type recordingClock struct {
	mu   sync.Mutex
	last time.Time
}

func (c *recordingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
	return c.last
}

func (c *recordingClock) lastMS() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.UnixMilli()
}

// TestChildChaosWorker is a chaos worker process: claim, deliver, finish,
// forever, writing every step to its history file. It is started by
// TestChaos and does nothing otherwise.
func TestChildChaosWorker(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "chaos-worker" {
		return
	}
	env := func(k string) string { return os.Getenv("LEASEQ_CHAOS_" + k) }
	owner, stopFile, recv := env("OWNER"), env("STOP"), env("URL")
	ctx := context.Background()
	db, err := leaseq.Open(env("DB"))
	if err != nil {
		t.Fatal(err)
	}
	clock := &recordingClock{}
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// Each line is one write(2) on an O_APPEND file: once written it
	// survives the death of the process (SIGKILL does not lose the page
	// cache), so a kill loses at most the line in flight. No fsync: the
	// test kills processes, not the machine.
	hist, err := os.OpenFile(env("HISTORY"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	write := func(e histEvent) {
		b, _ := json.Marshal(e)
		if _, err := hist.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	write(histEvent{Ev: "start", Owner: owner, PID: os.Getpid()})
	client := &http.Client{}
	for {
		if _, err := os.Stat(stopFile); err == nil {
			write(histEvent{Ev: "exit", Owner: owner})
			return
		}
		c, ok, err := q.Claim(ctx, owner, chaosLease)
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if !ok {
			// Every Claim is a write transaction; an idle worker that polls
			// too often starves the producer of the lock.
			time.Sleep(randDur(10*time.Millisecond, 40*time.Millisecond))
			continue
		}
		widenWindow()
		write(histEvent{Ev: "claim", Job: c.ID, Owner: owner, Token: c.Token, Attempt: c.Attempt,
			LeaseUntil: c.LeaseUntil.UnixMilli(), Deadline: unixMS(c.Deadline), At: clock.lastMS()})
		var stall time.Duration
		if rand.IntN(100) < chaosStallPercent {
			// From just inside the lease to well past it.
			stall = chaosLease - 30*time.Millisecond + time.Duration(rand.IntN(110))*time.Millisecond
		}
		v := url.Values{"job": {c.ID}, "qty": {strconv.Itoa(c.Qty)}, "owner": {owner},
			"token": {strconv.FormatInt(c.Token, 10)}, "stall": {strconv.FormatInt(stall.Milliseconds(), 10)}}
		resp, err := client.PostForm(recv, v)
		if err != nil {
			t.Fatalf("deliver %s: %v", c.ID, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("deliver %s: %s", c.ID, resp.Status)
		}
		write(histEvent{Ev: "deliver", Job: c.ID, Owner: owner, Token: c.Token})
		done, err := q.Finish(ctx, c)
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
		widenWindow()
		write(histEvent{Ev: "finish", Job: c.ID, Owner: owner, Token: c.Token, OK: done, At: clock.lastMS()})
	}
}

// widenWindow sometimes waits between a commit and its history line, so
// that kills land in that window often enough for the checker's handling of
// unlogged operations to be exercised, not just argued.
func widenWindow() {
	if rand.IntN(100) < chaosWidenPercent {
		time.Sleep(randDur(time.Millisecond, 30*time.Millisecond))
	}
}

func unixMS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// receiver is the outside system the workers deliver to. Like any receiver
// of a lease queue it de-duplicates by job ID (SPEC rule 11): a stalled
// worker's request still arrives after another worker delivered the job.
type receiver struct {
	mu         sync.Mutex
	qty        map[string]int // first delivery of each job
	total      int            // sum of qty over first deliveries
	deliveries []delivery
}

type delivery struct {
	job, owner string
	token      int64
	qty        int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	qty, err1 := strconv.Atoi(r.FormValue("qty"))
	token, err2 := strconv.ParseInt(r.FormValue("token"), 10, 64)
	stall, err3 := strconv.Atoi(r.FormValue("stall"))
	if err := errors.Join(err1, err2, err3); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d := delivery{job: r.FormValue("job"), owner: r.FormValue("owner"), token: token, qty: qty}
	rc.mu.Lock()
	rc.deliveries = append(rc.deliveries, d)
	if _, seen := rc.qty[d.job]; !seen {
		rc.qty[d.job] = qty
		rc.total += qty
	}
	rc.mu.Unlock()
	// The request has arrived and counted; only the answer is late, as when
	// a worker stalls after its request left.
	time.Sleep(time.Duration(stall) * time.Millisecond)
}

// incarnation is one run of a worker process under a worker name.
type incarnation struct {
	name    string
	n       int
	hist    string
	out     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	killed  bool
}

// chaos is the parent's side of the test.
type chaos struct {
	t      *testing.T
	dir    string
	dbPath string
	url    string
	stop   string
	all    []*incarnation
	live   map[string]*incarnation
	names  []string
	kills  int
	soak   bool
	// killAt is when the next kill is due; lastReport when progress was
	// last logged in a soak.
	killAt, lastReport time.Time
}

func (c *chaos) start(name string) {
	c.t.Helper()
	n := 0
	for _, inc := range c.all {
		if inc.name == name {
			n++
		}
	}
	inc := &incarnation{name: name, n: n, exited: make(chan struct{}),
		hist: filepath.Join(c.dir, fmt.Sprintf("%s.%d.jsonl", name, n)),
		out:  filepath.Join(c.dir, fmt.Sprintf("%s.%d.out", name, n))}
	out, err := os.Create(inc.out)
	if err != nil {
		c.t.Fatal(err)
	}
	inc.cmd = exec.Command(os.Args[0], "-test.run=^TestChildChaosWorker$", "-test.count=1")
	inc.cmd.Env = append(os.Environ(), "LEASEQ_CHILD=chaos-worker", "LEASEQ_CHAOS_OWNER="+name,
		"LEASEQ_CHAOS_DB="+c.dbPath, "LEASEQ_CHAOS_HISTORY="+inc.hist, "LEASEQ_CHAOS_URL="+c.url,
		"LEASEQ_CHAOS_STOP="+c.stop,
		// A race-enabled binary otherwise sleeps a second before exiting.
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	inc.cmd.Stdout, inc.cmd.Stderr = out, out
	if err := inc.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		inc.waitErr = inc.cmd.Wait()
		out.Close()
		close(inc.exited)
	}()
	c.all = append(c.all, inc)
	c.live[name] = inc
}

// kill SIGKILLs a worker, waits for it to die and starts it again.
func (c *chaos) kill(name string, verbose bool, since time.Time) {
	c.t.Helper()
	inc := c.live[name]
	select {
	case <-inc.exited:
		c.failExit(inc)
	default:
	}
	inc.killed = true
	if err := inc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill %s: %v", name, err)
	}
	<-inc.exited
	if ws, ok := inc.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.failExit(inc) // it had exited on its own just before the signal
	}
	c.kills++
	if verbose {
		c.t.Logf("+%.1fs kill -9 %s (pid %d, incarnation %d)", time.Since(since).Seconds(), name, inc.cmd.Process.Pid, inc.n)
	}
	c.start(name)
}

// checkAlive fails the test if a worker died without being killed.
func (c *chaos) checkAlive() {
	c.t.Helper()
	for _, inc := range c.live {
		select {
		case <-inc.exited:
			c.failExit(inc)
		default:
		}
	}
}

func (c *chaos) failExit(inc *incarnation) {
	c.t.Helper()
	out, _ := os.ReadFile(inc.out)
	c.t.Fatalf("worker %s (incarnation %d) exited on its own: %v\n%s", inc.name, inc.n, inc.waitErr, out)
}

// stopAll asks every worker to stop and waits for it.
func (c *chaos) stopAll() {
	c.t.Helper()
	if err := os.WriteFile(c.stop, nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	for _, inc := range c.live {
		select {
		case <-inc.exited:
		case <-time.After(30 * time.Second):
			inc.cmd.Process.Kill()
			c.t.Fatalf("worker %s did not stop", inc.name)
		}
		if inc.waitErr != nil {
			c.failExit(inc)
		}
	}
}

// chaosDuration is how long jobs arrive: chaosRun, or LEASEQ_SOAK.
func chaosDuration(t *testing.T) (time.Duration, bool) {
	if s := os.Getenv("LEASEQ_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LEASEQ_SOAK=%q: %v", s, err)
		}
		return d, true
	}
	return chaosRun, false
}

// TestChaos is kill -9 chaos: chaosWorkers worker processes claim, deliver
// and finish jobs on one database file with short leases on the real clock,
// some deliveries stall past the lease, and workers are SIGKILLed at random
// moments and restarted under the same names. When the queue has drained,
// checkHistory verifies the workers' histories against the final rows and
// the receiver (see there for what is asserted).
func TestChaos(t *testing.T) {
	run, soak := chaosDuration(t)
	dir := t.TempDir()
	rcv := &receiver{qty: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	c := &chaos{t: t, dir: dir, dbPath: filepath.Join(dir, "chaos.db"), url: srv.URL,
		stop: filepath.Join(dir, "stop"), live: map[string]*incarnation{}, soak: soak}
	db, err := leaseq.Open(c.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A backlog before the workers start, so that they are busy from the
	// first kill on; more jobs arrive while they run.
	var backlog []leaseq.Job
	for i := 0; i < chaosBacklog; i++ {
		j := chaosJob(i)
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
		backlog = append(backlog, j)
	}
	for i := 0; i < chaosWorkers; i++ {
		c.names = append(c.names, fmt.Sprintf("w%d", i+1))
		c.start(c.names[i])
	}
	defer func() {
		for _, inc := range c.live {
			inc.cmd.Process.Kill()
		}
	}()
	began := time.Now()
	produced := make(chan []leaseq.Job, 1)
	produceErr := make(chan error, 1)
	go func() { produce(ctx, q, backlog, run, produced, produceErr) }()
	for len(produced) == 0 { // kill while jobs arrive
		c.chaosTick(rcv, began)
	}
	jobs := <-produced
	if err := <-produceErr; err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	c.killUntilDrained(db, rcv, began)
	c.stopAll()
	elapsed := time.Since(began)
	c.report(checkHistory(t, db, c, jobs, rcv), len(jobs), elapsed)
}

// killUntilDrained goes on killing until no job is pending or leased, and
// fails the test if that takes longer than chaosDrain.
func (c *chaos) killUntilDrained(db *sql.DB, rcv *receiver, began time.Time) {
	drainBy := time.Now().Add(chaosDrain)
	for open := openJobs(c.t, db); open > 0; open = openJobs(c.t, db) {
		if time.Now().After(drainBy) {
			c.t.Fatalf("%d jobs still pending or leased %v after the last enqueue; rows:\n%s", open, chaosDrain, dumpOpen(db))
		}
		c.chaosTick(rcv, began)
	}
}

// chaosTick is one step of the parent's loop: check that no worker died on
// its own, kill one when its time has come, report progress in a soak.
func (c *chaos) chaosTick(rcv *receiver, began time.Time) {
	time.Sleep(10 * time.Millisecond)
	c.checkAlive()
	if c.killAt.IsZero() {
		c.killAt = time.Now().Add(randDur(100*time.Millisecond, 800*time.Millisecond))
	}
	if time.Now().After(c.killAt) {
		c.kill(c.names[rand.IntN(len(c.names))], !c.soak, began)
		c.killAt = time.Now().Add(randDur(100*time.Millisecond, 800*time.Millisecond))
	}
	if c.soak && time.Since(c.lastReport) > 30*time.Second {
		c.lastReport = time.Now()
		c.t.Logf("+%.0fs: %d kills, %d deliveries so far", time.Since(began).Seconds(), c.kills, rcv.count())
	}
}

// report logs what happened and fails the test on violations.
func (c *chaos) report(rep chaosReport, jobs int, elapsed time.Duration) {
	t := c.t
	for i, v := range rep.violations {
		if i == 30 {
			t.Errorf("... and %d more violations", len(rep.violations)-30)
			break
		}
		t.Errorf("violation: %s", v)
	}
	if !c.soak {
		for i, s := range rep.quarantines {
			if i == 10 {
				t.Logf("... and %d more quarantines", len(rep.quarantines)-10)
				break
			}
			t.Logf("quarantined %s", s)
		}
	}
	t.Logf("chaos: %v, %d workers, lease %v: %d jobs (%d done, %d quarantined), %d claims (%d unlogged), "+
		"%d deliveries (%d repeats), %d kills, %d refused stale finishes, %d accepted finishes (%d unlogged), %d violations",
		elapsed.Round(time.Millisecond), chaosWorkers, chaosLease, jobs, rep.done, len(rep.quarantines),
		rep.claims, rep.unloggedClaims, rep.deliveries, rep.repeats, c.kills, rep.refused,
		rep.accepted, rep.unloggedFinishes, len(rep.violations))
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.deliveries)
}

func randDur(lo, hi time.Duration) time.Duration { return lo + rand.N(hi-lo) }

// chaosJob is the i-th job of the chaos test. Most jobs have the default 3
// attempts; some have 1 or 2, so that a stalled delivery or a kill
// quarantines them; some have a deadline a little ahead, which caps their
// leases and quarantines them if they are not done in time.
func chaosJob(i int) leaseq.Job {
	j := leaseq.Job{ID: fmt.Sprintf("job-%06d", i), Qty: 1 + rand.IntN(9),
		Payload: []byte(fmt.Sprintf("payload of job %d", i))}
	switch r := rand.IntN(100); {
	case r < 10:
		j.MaxAttempts = 1
	case r < 20:
		j.MaxAttempts = 2
	case r < 30:
		j.Deadline = time.Now().Add(randDur(300*time.Millisecond, 3*time.Second))
	}
	return j
}

// produce enqueues jobs, numbered from len(jobs), for run, then sends the
// list of all enqueued jobs.
func produce(ctx context.Context, q *leaseq.Queue, jobs []leaseq.Job, run time.Duration, out chan<- []leaseq.Job, errc chan<- error) {
	var err error
	for end := time.Now().Add(run); time.Now().Before(end); time.Sleep(chaosEnqueueEvery) {
		j := chaosJob(len(jobs))
		if err = q.Enqueue(ctx, j); err != nil {
			break
		}
		jobs = append(jobs, j)
	}
	errc <- err // before out: the receiver of out reads errc next
	out <- jobs
}

func openJobs(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM leaseq_jobs WHERE status IN ('pending', 'leased')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func dumpOpen(db *sql.DB) string {
	rows, err := db.Query("SELECT id, status, owner, token, attempts, max_attempts, lease_until, deadline FROM leaseq_jobs WHERE status IN ('pending', 'leased') LIMIT 20")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b bytes.Buffer
	for rows.Next() {
		var id, status, owner string
		var token, attempts, max int64
		var lease, deadline sql.NullInt64
		rows.Scan(&id, &status, &owner, &token, &attempts, &max, &lease, &deadline)
		fmt.Fprintf(&b, "  %s %s owner=%s token=%d attempts=%d/%d lease_until=%v deadline=%v now=%d\n",
			id, status, owner, token, attempts, max, lease.Int64, deadline.Int64, time.Now().UnixMilli())
	}
	return b.String()
}
