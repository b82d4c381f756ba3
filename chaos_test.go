package leaseq_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The chaos test runs worker processes and one operator process against one
// database on the real clock, SIGKILLs them at random moments, restarts
// them under the same names, stops whole processes for a few leases with
// SIGSTOP (as a long GC pause or an overloaded host would), and afterwards
// checks the history they wrote against the final rows, an audit of every
// committed change, what the receiver got and the effects table. It runs
// on each engine (see chaosEngine): on SQLite the parent also holds long
// reads on the file, on PostgreSQL it also crash-restarts the server
// mid-run, which cuts every connection.
//
// Two kinds of workers share the jobs. A loop worker makes every call
// itself — claim, deliver and then finish, release with a delay (the
// delivery failed transiently) or fail (it failed for good), extending the
// lease while a slow delivery runs — and logs each call's result. A pool
// worker runs Queue.Work with heartbeats on; its handlers deliver, some
// slowly (watching their context), some stalled in a call that ignores it,
// and return nil, an error, RetryAfter, Permanent or panic — or, a third of
// them, record the delivery with FinishTx: an effects row of the job, the
// token and the owner, written in the transaction of the job's fenced
// finish (rule 46 in docs/rules.md), some stalled inside it past the lease;
// the checker then finds each effect exactly once, of the claim that
// finished its job. The parent also shuts pools down gracefully (SIGTERM)
// and restarts them. The loop worker keeps the public calls and the
// checker's reasoning about calls a kill left unlogged in play; the pools
// are what a service runs. The operator cancels pending and leased jobs,
// purges done and quarantined jobs older than a moment, and enqueues some
// purged IDs again.
const (
	// chaosLoopWorkers loop workers and chaosPools pools of
	// chaosPoolConcurrency handlers each.
	chaosLoopWorkers     = 1
	chaosPools           = 2
	chaosPoolConcurrency = 4
	chaosLease           = 150 * time.Millisecond
	// chaosHeartbeat is the pools' WorkerOptions.Heartbeat: its default, a
	// third of the lease.
	chaosHeartbeat = chaosLease / 3
	// chaosPollInterval is how soon a pool finds jobs the parent enqueued;
	// chaosDrainTimeout how long a shutting-down pool lets its handlers run
	// before their contexts end with ErrShutdown.
	chaosPollInterval = 50 * time.Millisecond
	chaosDrainTimeout = 100 * time.Millisecond
	// chaosMaxAttempts is every chaos queue's default MaxAttempts.
	chaosMaxAttempts = 3
	// chaosRun is how long jobs keep arriving in CI; LEASEQ_SOAK=10m makes
	// it a soak.
	chaosRun = 8 * time.Second
	// chaosDrain bounds the wait for the queue to empty after the last
	// enqueue; a queue that does not drain by then has stuck jobs.
	chaosDrain = 60 * time.Second
	// chaosSoakDrain is chaosDrain for a soak: its backlog (up to
	// chaosMaxWaiting jobs) drains under the same chaos, server restarts
	// included, which on a loaded host takes minutes.
	chaosSoakDrain = 5 * time.Minute
	// chaosEnqueueEvery is the arrival rate of jobs.
	chaosEnqueueEvery = 30 * time.Millisecond
	// chaosBacklog jobs are enqueued before the workers start.
	chaosBacklog = 100
	// chaosMaxWaiting bounds the jobs waiting (pending, scheduled, leased
	// or expired) when the next one is due: an arrival that finds more
	// waits for the next tick. A soak whose workers take jobs more slowly
	// than they arrive (a loaded host, many stalls) then ends with a
	// backlog the drain can clear, where a fixed rate left ever more.
	chaosMaxWaiting = 300
	// chaosFinishTxPercent of a pool's handlers record their delivery with
	// FinishTx; chaosStallFnPercent of those that would be quick stall
	// inside its function instead, for about a lease without a heartbeat
	// (on SQLite the function holds every writer of the file; on
	// PostgreSQL the job's row), so that the finish after the function is
	// often refused. chaosFinishTxTimeout bounds one FinishTx.
	chaosFinishTxPercent = 33
	chaosStallFnPercent  = 10
	chaosFinishTxTimeout = 10 * time.Second
	// chaosStallPercent of a loop worker's deliveries stall for about a
	// lease without renewing it, so that their results are often refused
	// and another worker takes the job.
	chaosStallPercent = 12
	// chaosSlowPercent of deliveries take one to three leases and renew
	// the lease every third of one while they run.
	chaosSlowPercent = 15
	// chaosLatePercent of those renewals come late, up to one and a half
	// leases after the last, so some find the lease already over.
	chaosLatePercent = 10
	// chaosReleasePercent of deliveries fail transiently (Release with a
	// delay), chaosFailPercent for good (Fail).
	chaosReleasePercent = 10
	chaosFailPercent    = 4
	// chaosMaxDelay bounds a release's delay.
	chaosMaxDelay = 200 * time.Millisecond
	// chaosWidenPercent of calls wait before their history line is
	// written; see widenWindow.
	chaosWidenPercent = 10
	// chaosOperateEvery is the operator's average pause between two
	// calls; chaosPurgeAge bounds the moment a job must have been done or
	// quarantined for before it is purged.
	chaosOperateEvery = 80 * time.Millisecond
	chaosPurgeAge     = 500 * time.Millisecond
	// chaosPurgedPool bounds the purged IDs the operator keeps to enqueue
	// again.
	chaosPurgedPool = 200
	// The parent's chaos: a SIGKILL and restart, a SIGSTOP of one to
	// three leases, a graceful restart of a pool, a long read, each after
	// a random time between the constant and eight times it.
	chaosKillEvery  = 100 * time.Millisecond
	chaosPauseEvery = 150 * time.Millisecond
	chaosTermEvery  = 700 * time.Millisecond
	// chaosHoldEvery the parent holds a read open on the file for one to
	// three leases; see hold.
	chaosHoldEvery = 250 * time.Millisecond
	// chaosRestartEvery the parent crash-restarts a PostgreSQL server (see
	// restart), the first time after a quarter of it, so that every run
	// has some. A restart is dear on a small host — crash recovery, its
	// checkpoint, every process connecting again — and what it takes from
	// the processes' running time the pools' observers see only in part.
	chaosRestartEvery = time.Second
	// chaosRetryAfter is how long a process waits before it tries again a
	// call that failed with an error.
	chaosRetryAfter = 50 * time.Millisecond
	// chaosFaultSlack bounds how long after a server restart a process's
	// call may still fail on a connection the restart cut: database/sql
	// hands out a pooled connection without asking the server whether it
	// is alive when it was used less than a second before (pgx's
	// stdlib pings one idle for longer), so a connection last used just
	// before the crash fails its next call up to a second after it; the
	// rest is room for a loaded host.
	chaosFaultSlack = 3 * time.Second
	// chaosObserveEvery is how often a pool's observer reads the clock;
	// a reading chaosGapMin or more after the one before is logged as a
	// gap: the process was not running in between.
	chaosObserveEvery = 2 * time.Millisecond
	chaosGapMin       = 10 * time.Millisecond
	// chaosCtxSlack bounds how long a running pool process may take to end
	// a handler's context and let the handler see it once the lease ended;
	// see checkContext for the rule and why this bound.
	chaosCtxSlack = 25 * time.Millisecond
)

// histEvent is one line of a chaos process's history.
//
// Loop worker lines:
//   - start: the incarnation began (PID).
//   - claim: Claim returned Job with Token, Attempt, LeaseUntil and
//     Deadline.
//   - extend: Extend of Job/Token by Lease returned OK (and, if OK, the new
//     LeaseUntil).
//   - deliver: the receiver answered the delivery of Job/Token; Plan is the
//     call the worker makes next (finish, release or fail), Delay the
//     release's delay.
//   - finish, release (Delay, Reason), fail (Reason): the call on Job/Token
//     returned OK.
//   - exit: the incarnation was asked to stop and did.
//
// A call that returns an error writes its line as above with Fault, the
// error's text, and neither OK nor a result: the process cannot tell
// whether it took effect (on PostgreSQL, a statement whose connection was
// cut may have committed). The worker claims again after a failed claim,
// extends again at the next renewal after a failed extension, and makes a
// failed finish, release or fail again until it is answered. The checker
// learns from the audit what such a call did.
//
// Pool worker lines (At is always a reading of the queue's clock, taken in
// the pool's process):
//   - start, exit: as above; exit once Work returned nil.
//   - run: a handler started on the claim Job/Token (Attempt, LeaseUntil,
//     Deadline as the handler got them); Plan is the result it means to
//     return (finish, error, retry, permanent, panic; finishtx: it records
//     its delivery with FinishTx), Style how it works (quick, slow: watching
//     its context; stall: in a call that ignores it; stall in fn: quick,
//     then stalled inside FinishTx's function after its write).
//   - ctxend: the handler's watcher saw its context end, with Cause.
//   - deliver: as above, the plan being the call its result asks for.
//   - finishtx: the handler's FinishTx of Job/Token, called at T0, returned
//     at T1: OK if it finished the job; FnRuns is how often its function
//     ran (0 when the fence refused before it); Fault if it failed with an
//     error, after which it may have committed or not.
//   - return: the handler is returning: Plan is what (finish for nil,
//     error, retry, permanent, panic, "gave up" when it stopped because its
//     context ended, lost for ErrLeaseLost after its FinishTx was refused),
//     Reason the error's text, Delay RetryAfter's; Cause the context's
//     cause if it had ended by then ("" if still live).
//   - log: a record Work logged: Msg, Level, and its Job, Token, Outcome,
//     Err; Stack says a stack was attached; T1 is the record's time.
//   - gap: the observer goroutine read the clock at T0 and next at T1,
//     chaosGapMin or more later: the process did not run in between.
//   - shutdown: the pool was asked to stop (SIGTERM or the stop file) and
//     is about to cancel Work's context.
//
// Operator lines:
//   - intent: the call Op is about to be made, with the fields of its result
//     line; T0 is the real time before it. A kill that leaves an intent as
//     the last line may have hit before, during or after that call.
//   - cancel: Cancel of Job with Reason was accepted (OK) or refused (Err:
//     "invalid" or "not found").
//   - purge: Purge of Statuses older than Before deleted Deleted jobs;
//     Listed of them List had shown as done or quarantined and older than
//     Before just before it.
//   - enqueue: Job enqueued again, with Qty, Payload, MaxAttempts, Deadline,
//     RunAt: OK, or Err "duplicate".
//   - a cancel, purge or enqueue that returned an error: its line with
//     Fault, as a loop worker's; it is not made again.
//
// Every call line carries when the call ran (instant). Times are Unix
// milliseconds, the queue's own resolution.
type histEvent struct {
	Ev         string `json:"ev"`
	Job        string `json:"job,omitempty"`
	Owner      string `json:"owner,omitempty"`
	Token      int64  `json:"token,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	LeaseUntil int64  `json:"lease_until,omitempty"`
	Deadline   int64  `json:"deadline,omitempty"`
	instant
	OK          bool            `json:"ok,omitempty"`
	Err         string          `json:"err,omitempty"`
	Lease       int64           `json:"lease,omitempty"`
	Plan        string          `json:"plan,omitempty"`
	Delay       int64           `json:"delay,omitempty"`
	Reason      string          `json:"reason,omitempty"`
	Op          string          `json:"op,omitempty"`
	Before      int64           `json:"before,omitempty"`
	Statuses    []leaseq.Status `json:"statuses,omitempty"`
	Deleted     int             `json:"deleted,omitempty"`
	Listed      int             `json:"listed,omitempty"`
	Qty         int             `json:"qty,omitempty"`
	Payload     string          `json:"payload,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	RunAt       int64           `json:"run_at,omitempty"`
	PID         int             `json:"pid,omitempty"`
	Style       string          `json:"style,omitempty"`
	Cause       string          `json:"cause,omitempty"`
	Msg         string          `json:"msg,omitempty"`
	Level       string          `json:"level,omitempty"`
	Outcome     string          `json:"outcome,omitempty"`
	Stack       bool            `json:"stack,omitempty"`
	Fault       string          `json:"fault,omitempty"`
	FnRuns      int             `json:"fn_runs,omitempty"`
	// Raced marks an enqueue refused while a purge of its ID ran
	// (racePurge): no generation, and no fault.
	Raced bool `json:"raced,omitempty"`
	// seq and committed: a call the checker took from the audit
	// (auditRow's), 0 otherwise.
	seq, committed int64
}

// instant is when a call ran. At is the queue clock reading its
// transaction used, when known (0 otherwise); T0 and T1 are the real time
// just before the call and just after it returned, so the reading lies in
// [T0, T1] whatever the clock. The checker judges by At where it has it and
// is tolerant in exactly [T0, T1] where it has not — as on an engine whose
// clock is the database server's, which no client can record.
type instant struct {
	At int64 `json:"at,omitempty"`
	T0 int64 `json:"t0,omitempty"`
	T1 int64 `json:"t1,omitempty"`
}

// recordingClock is the system clock, remembering its last reading. A chaos
// process makes one queue call at a time, and each call that decides by the
// clock reads it once inside its committed transaction (rule 8 in docs/rules.md), so right after a call returns, last is exactly the "now"
// that call compared and stored. forget clears it before a call, so that a
// call that read no clock leaves no stale reading behind.
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

func (c *recordingClock) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Time{}
}

func (c *recordingClock) lastMS() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return unixMS(c.last)
}

// chaosProc is the part of a chaos child process that workers and the
// operator share: a queue on the test's database with a recording clock,
// and the history file.
type chaosProc struct {
	t      *testing.T
	ctx    context.Context
	name   string
	engine chaosEngine
	q      *leaseq.Queue
	clock  *recordingClock
	hist   *os.File
	stop   string
}

func chaosEnv(k string) string { return os.Getenv("LEASEQ_CHAOS_" + k) }

func newChaosProc(t *testing.T) *chaosProc {
	p := &chaosProc{t: t, ctx: context.Background(), name: chaosEnv("OWNER"), clock: &recordingClock{},
		stop: chaosEnv("STOP")}
	var err error
	if p.engine, err = chaosEngineNamed(chaosEnv("ENGINE")); err != nil {
		t.Fatal(err)
	}
	db, err := p.engine.open(chaosEnv("DB"))
	if err != nil {
		t.Fatal(err)
	}
	if p.q, err = newChaosQueue(p, db, p.queueClock()); err != nil {
		t.Fatal(err)
	}
	// Each line is one write(2) on an O_APPEND file: once written it
	// survives the death of the process (SIGKILL does not lose the page
	// cache), so a kill loses at most the line in flight. No fsync: the
	// test kills processes, not the machine.
	p.hist, err = os.OpenFile(chaosEnv("HISTORY"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.write(histEvent{Ev: "start", Owner: p.name, PID: os.Getpid()})
	return p
}

// queueClock is the clock of the process's queue: the recording clock,
// except that chaosServerClockPool runs on the server's clock on
// PostgreSQL (rule 40 in docs/rules.md), as a service's would: a pool on
// an injected clock runs each cycle as two transactions (rule 8: such a
// clock is read once the rows are held), on the server's as one
// statement, leaseq_pool_step, and the chaos exercises both. Its calls'
// instants come from the audit, which has the server's, and its lines'
// readings of this host's clock are the server's too, on one machine, up to
// the millisecond they are truncated to.
func (p *chaosProc) queueClock() leaseq.Clock {
	if os.Getenv("LEASEQ_CHILD") == "chaos-pool" && p.engine.onServerClock(p.name) {
		return nil
	}
	return p.clock
}

// openBusy is leaseq.Open, tried again while it finds the file busy. Open
// reads the schema to check the file and, having no context, does not
// retry a lock wait that outlasts the busy timeout as the queue's calls do;
// stopped processes and long reads that overlap, each stretched by the race
// detector, can keep the file locked that long, and a process starting into
// it then tries again, as a service would.
func openBusy(path string) (*sql.DB, error) {
	for give := time.Now().Add(chaosDrain); ; {
		db, err := leaseq.Open(path)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(give) {
			return db, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fault writes the line of a call that returned err: no result, and no
// clock reading, since no transaction may have used it.
func (p *chaosProc) fault(e histEvent, err error) {
	e.OK, e.Err, e.Fault, e.At = false, "", err.Error(), 0
	p.write(e)
}

func (p *chaosProc) write(e histEvent) {
	b, _ := json.Marshal(e)
	if _, err := p.hist.Write(append(b, '\n')); err != nil {
		p.die("writing the history: %v", err)
	}
}

// die ends the process at once from any goroutine (t.Fatal works only on
// the test's own, and a panic in a handler would be taken for the
// handler's); the parent sees it exit on its own and fails the test with
// this output.
func (p *chaosProc) die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", p.name, fmt.Sprintf(format, args...))
	os.Exit(2)
}

// now reads the queue's clock, in Unix milliseconds.
func (p *chaosProc) now() int64 { return p.clock.Now().UnixMilli() }

// stopped reports whether the parent asked this process to stop, and if so
// writes the exit line.
func (p *chaosProc) stopped() bool {
	if _, err := os.Stat(p.stop); err != nil {
		return false
	}
	p.write(histEvent{Ev: "exit", Owner: p.name})
	return true
}

// call runs one queue call and tells when it ran.
func (p *chaosProc) call(fn func()) instant {
	p.clock.forget()
	t0 := time.Now().UnixMilli()
	fn()
	return instant{At: p.clock.lastMS(), T0: t0, T1: time.Now().UnixMilli()}
}

// TestChildChaosWorker is a chaos worker process: claim, deliver (renewing
// the lease while a slow delivery runs), then finish, release or fail,
// forever, writing every step to its history file. It is started by
// TestChaos and does nothing otherwise.
func TestChildChaosWorker(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "chaos-worker" {
		return
	}
	w := &chaosWorker{chaosProc: newChaosProc(t), client: &http.Client{}, recv: chaosEnv("URL")}
	for !w.stopped() {
		c, ok := w.claim()
		if !ok {
			// An idle Claim is a read (rule 23 in docs/rules.md),
			// but polling flat out would still crowd the writers.
			time.Sleep(randDur(10*time.Millisecond, 40*time.Millisecond))
			continue
		}
		plan := newDeliveryPlan()
		c = w.deliver(c, plan)
		w.settle(c, plan)
	}
}

type chaosWorker struct {
	*chaosProc
	client *http.Client
	recv   string
}

func (w *chaosWorker) claim() (leaseq.Claim, bool) {
	var c leaseq.Claim
	var ok bool
	var err error
	when := w.call(func() { c, ok, err = w.q.Claim(w.ctx, w.name, chaosLease) })
	if err != nil {
		w.fault(histEvent{Ev: "claim", Owner: w.name, instant: when}, err)
		return c, false
	}
	if ok {
		widenWindow()
		w.write(histEvent{Ev: "claim", Job: c.ID, Owner: w.name, Token: c.Token, Attempt: c.Attempt,
			LeaseUntil: c.LeaseUntil.UnixMilli(), Deadline: unixMS(c.Deadline), instant: when})
	}
	return c, ok
}

// deliveryPlan is what happens to one delivery.
type deliveryPlan struct {
	stall     time.Duration // how long the receiver takes to answer
	heartbeat bool          // renew the lease while waiting for the answer
	outcome   string        // the call after the answer: finish, release or fail
	delay     time.Duration // the release's delay
}

func newDeliveryPlan() deliveryPlan {
	var p deliveryPlan
	switch r := rand.IntN(100); {
	case r < chaosStallPercent:
		// From just inside the lease to well past it.
		p.stall = chaosLease - 30*time.Millisecond + time.Duration(rand.IntN(110))*time.Millisecond
	case r < chaosStallPercent+chaosSlowPercent:
		p.stall, p.heartbeat = randDur(chaosLease, 3*chaosLease), true
	}
	switch r := rand.IntN(100); {
	case r < chaosReleasePercent:
		p.outcome = "release"
		if rand.IntN(3) > 0 {
			p.delay = randDur(time.Millisecond, chaosMaxDelay)
		}
	case r < chaosReleasePercent+chaosFailPercent:
		p.outcome = "fail"
	default:
		p.outcome = "finish"
	}
	return p
}

// nextBeat is when the next renewal of a slow delivery's lease is due.
func nextBeat() <-chan time.Time {
	if rand.IntN(100) < chaosLatePercent {
		return time.After(randDur(chaosLease/2, chaosLease*3/2))
	}
	return time.After(chaosLease / 3)
}

// deliver sends the job to the receiver and waits for its answer,
// extending the lease meanwhile if the plan says so, until an extension is
// refused (the lease is lost; the answer is still awaited, as a real
// worker cannot call back a request already sent). It returns the claim
// with its last lease end.
func (w *chaosWorker) deliver(c leaseq.Claim, plan deliveryPlan) leaseq.Claim {
	answered := make(chan error, 1)
	go func(sent leaseq.Claim) { answered <- w.post(sent, plan) }(c)
	var beat <-chan time.Time
	if plan.heartbeat {
		beat = nextBeat()
	}
	for {
		select {
		case err := <-answered:
			if err != nil {
				w.t.Fatalf("deliver %s: %v", c.ID, err)
			}
			w.write(histEvent{Ev: "deliver", Job: c.ID, Owner: w.name, Token: c.Token, Plan: plan.outcome,
				Delay: plan.delay.Milliseconds(), instant: instant{T1: time.Now().UnixMilli()}})
			return c
		case <-beat:
			var ext leaseq.Claim
			var ok bool
			var err error
			when := w.call(func() { ext, ok, err = w.q.Extend(w.ctx, c, chaosLease) })
			e := histEvent{Ev: "extend", Job: c.ID, Owner: w.name, Token: c.Token, Lease: chaosLease.Milliseconds(),
				OK: ok, instant: when}
			if err != nil {
				// Whether the lease was extended is unknown: renew as
				// if not; a lost lease shows in the next answer.
				w.fault(e, err)
				beat = nextBeat()
				continue
			}
			widenWindow()
			beat = nil
			if ok {
				c, e.LeaseUntil, beat = ext, ext.LeaseUntil.UnixMilli(), nextBeat()
			}
			w.write(e)
		}
	}
}

// post delivers c to the receiver, which answers as the plan says.
func (w *chaosWorker) post(c leaseq.Claim, plan deliveryPlan) error {
	return postDelivery(context.Background(), w.client, w.recv, c, plan.outcome, plan.stall)
}

// postDelivery delivers c to the receiver at recv, which answers after
// stall as plan (finish, release or fail) says; ctx ends the request.
func postDelivery(ctx context.Context, client *http.Client, recv string, c leaseq.Claim, plan string, stall time.Duration) error {
	v := url.Values{"job": {c.ID}, "qty": {strconv.Itoa(c.Qty)}, "payload": {string(c.Payload)},
		"owner": {c.Owner}, "token": {strconv.FormatInt(c.Token, 10)},
		"stall": {strconv.FormatInt(stall.Milliseconds(), 10)}, "plan": {plan}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, recv, strings.NewReader(v.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if want := receiverStatus(plan); resp.StatusCode != want {
		return fmt.Errorf("receiver answered %s, want %d", resp.Status, want)
	}
	return nil
}

// settle makes the call the plan says after the delivery: Finish, Release
// or Fail, made again after an error until it is answered. If a try that
// failed did take effect, the fence refuses the next one.
func (w *chaosWorker) settle(c leaseq.Claim, plan deliveryPlan) {
	for {
		e := histEvent{Ev: plan.outcome, Job: c.ID, Owner: w.name, Token: c.Token}
		var err error
		switch plan.outcome {
		case "finish":
			e.instant = w.call(func() { e.OK, err = w.q.Finish(w.ctx, c) })
		case "release":
			e.Delay, e.Reason = plan.delay.Milliseconds(), chaosReleaseReason(c.ID, c.Token)
			e.instant = w.call(func() { e.OK, err = w.q.Release(w.ctx, c, plan.delay, e.Reason) })
		case "fail":
			e.Reason = chaosFailReason(c.ID, c.Token)
			e.instant = w.call(func() { e.OK, err = w.q.Fail(w.ctx, c, e.Reason) })
		}
		if err != nil {
			w.fault(e, err)
			time.Sleep(chaosRetryAfter)
			continue
		}
		widenWindow()
		w.write(e)
		return
	}
}

// The reasons of a worker's Release and Fail name the claim, so the
// checker can tell from a row's reason which call put it there.
func chaosReleaseReason(id string, token int64) string {
	return fmt.Sprintf("transient failure of %s token %d", id, token)
}

func chaosFailReason(id string, token int64) string {
	return fmt.Sprintf("permanent failure of %s token %d", id, token)
}

// TestChildChaosPool is a chaos pool process: Queue.Work with
// chaosPoolConcurrency handlers, heartbeats a third of the lease, a small
// Backoff, and a Logger that writes Work's records to the history. Each
// handler logs its start, the end of its context as its watcher sees it, and
// its return; an observer goroutine logs the gaps in the process's running
// time. SIGTERM or the stop file shuts the pool down gracefully. It is
// started by TestChaos and does nothing otherwise.
func TestChildChaosPool(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "chaos-pool" {
		return
	}
	// Before the start line: the parent sends SIGTERM only once it is
	// there.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	w := &chaosPool{chaosProc: newChaosProc(t), client: &http.Client{}, recv: chaosEnv("URL")}
	ctx, shutdown := context.WithCancel(context.Background())
	go w.awaitShutdown(term, shutdown)
	unobserve := w.observe()
	opts := leaseq.WorkerOptions{Owner: w.name, Concurrency: chaosPoolConcurrency, Lease: chaosLease,
		Heartbeat: chaosHeartbeat, Backoff: chaosBackoff, PollInterval: chaosPollInterval,
		DrainTimeout: chaosDrainTimeout, Logger: slog.New(historyLog{w.chaosProc})}
	if err := w.q.Work(ctx, opts, w.handle); err != nil {
		t.Fatalf("Work: %v", err)
	}
	unobserve() // the exit line is the last
	w.write(histEvent{Ev: "exit", Owner: w.name})
}

// chaosBackoff is the pools' Backoff: small, so that released jobs come
// back within the run, and exact, so that the checker can tell the delay
// Work must have asked for (rule 30 in docs/rules.md).
func chaosBackoff(attempt int) time.Duration { return time.Duration(attempt) * 40 * time.Millisecond }

type chaosPool struct {
	*chaosProc
	client *http.Client
	recv   string
}

// awaitShutdown waits for SIGTERM or the stop file, writes the shutdown
// line and only then cancels Work's context, so that the line's reading
// comes before Work's drain begins.
func (w *chaosPool) awaitShutdown(term <-chan os.Signal, shutdown context.CancelFunc) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for stop := false; !stop; {
		select {
		case <-term:
			stop = true
		case <-tick.C:
			_, err := os.Stat(w.stop)
			stop = err == nil
		}
	}
	w.write(histEvent{Ev: "shutdown", Owner: w.name, instant: instant{At: w.now()}})
	shutdown()
}

// observe reads the clock every chaosObserveEvery and logs each gap of
// chaosGapMin or more between two readings: a time in which this
// goroutine, and as a rule the whole process, did not run — a SIGSTOP, or a
// host too busy to schedule it. The checker does not count such gaps
// against the process when it judges how late a handler saw its lease end.
// It runs until the returned function is called, which returns once it has
// stopped.
func (w *chaosPool) observe() func() {
	stop, gone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		tick := time.NewTicker(chaosObserveEvery)
		defer tick.Stop()
		for last := w.now(); ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			now := w.now()
			if now-last >= chaosGapMin.Milliseconds() {
				w.write(histEvent{Ev: "gap", Owner: w.name, instant: instant{T0: last, T1: now}})
			}
			last = now
		}
	}()
	return func() { close(stop); <-gone }
}

// workPlan is what one handler does.
type workPlan struct {
	// style: quick; slow: works for span watching its context; stall: in a
	// call that ignores it for span; stall in fn: quick, then stalls for
	// span inside FinishTx's function.
	style  string
	span   time.Duration // one to three leases; a stall in fn's, about one lease
	result string        // finish, error, retry, permanent, panic, finishtx
	delay  time.Duration // retry's
}

func newWorkPlan() workPlan {
	p := workPlan{style: "quick", result: "finish", span: randDur(chaosLease, 3*chaosLease)}
	switch r := rand.IntN(100); {
	case r < 20:
		p.style = "slow"
	case r < 35:
		p.style = "stall"
	}
	if rand.IntN(100) < chaosFinishTxPercent {
		return finishTxPlan(p)
	}
	switch r := rand.IntN(100); {
	case r < 9:
		p.result = "error"
	case r < 15:
		p.result, p.delay = "retry", randDur(time.Millisecond, chaosMaxDelay)
	case r < 20:
		p.result = "permanent"
	case r < 24:
		p.result = "panic"
	}
	return p
}

// finishTxPlan makes p a plan that records its delivery with FinishTx.
// Some quick ones stall inside its function after their write, from just
// inside a lease to a little past it: the heartbeat waits for the function
// meanwhile (the process's writer on SQLite, the job's row on PostgreSQL),
// so the fence judged after the function refuses when the stall outlasts
// what was left of the lease. No longer: on SQLite every writer of the
// file waits for it.
func finishTxPlan(p workPlan) workPlan {
	p.result = "finishtx"
	if p.style == "quick" && rand.IntN(100) < chaosStallFnPercent {
		p.style = "stall in fn"
		p.span = chaosLease - 30*time.Millisecond + time.Duration(rand.IntN(80))*time.Millisecond
	}
	return p
}

// workResult is what a handler returns: kind is its plan's result, or
// "gave up" when it stopped because its context ended; text is the
// error's text, as Work will record it.
type workResult struct {
	kind, text string
	delay      time.Duration
}

// receiverPlan is the call a handler's result asks Work for, which is what
// the receiver is told to expect.
func receiverPlan(result string) string {
	switch result {
	case "finish", "finishtx":
		return "finish"
	case "permanent":
		return "fail"
	}
	return "release"
}

// handle is the pool's Handler. It logs its start, watches its context,
// works as its plan says, and logs its return before returning (or
// panicking).
func (w *chaosPool) handle(ctx context.Context, c leaseq.Claim) error {
	p := newWorkPlan()
	w.write(histEvent{Ev: "run", Job: c.ID, Owner: c.Owner, Token: c.Token, Attempt: c.Attempt,
		LeaseUntil: c.LeaseUntil.UnixMilli(), Deadline: unixMS(c.Deadline), Plan: p.result, Style: p.style,
		instant: instant{At: w.now()}})
	unwatch := w.watch(ctx, c)
	res := w.work(ctx, c, p)
	unwatch()
	// The clock first, then the context: a context still live after the
	// reading was live at it.
	e := histEvent{Ev: "return", Job: c.ID, Owner: c.Owner, Token: c.Token, Plan: res.kind, Reason: res.text,
		Delay: res.delay.Milliseconds(), instant: instant{At: w.now()}}
	if ctx.Err() != nil {
		e.Cause = context.Cause(ctx).Error()
	}
	w.write(e)
	switch res.kind {
	case "finish":
		return nil
	case "lost":
		return leaseq.ErrLeaseLost
	case "retry":
		return leaseq.RetryAfter(res.delay, errors.New(res.text))
	case "permanent":
		return leaseq.Permanent(errors.New(res.text))
	case "panic":
		panic(strings.TrimPrefix(res.text, "panic: "))
	}
	return errors.New(res.text)
}

// watch logs the end of ctx when it comes, until the returned function is
// called; that function returns once the watcher is gone, so that the end
// Work gives every context after its handler returned is never logged.
func (w *chaosPool) watch(ctx context.Context, c leaseq.Claim) func() {
	stop, gone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(gone)
		select {
		case <-ctx.Done():
			at := w.now()
			w.write(histEvent{Ev: "ctxend", Job: c.ID, Owner: c.Owner, Token: c.Token,
				Cause: context.Cause(ctx).Error(), instant: instant{At: at}})
		case <-stop:
		}
	}()
	return func() { close(stop); <-gone }
}

// work does what the plan says: a slow handler works for its span unless
// its context ends first; a stalled one delivers through a call that takes
// no context and answers only after its span; the others deliver at once,
// on their context. A handler that finds its context ended before its
// delivery answered gives up.
func (w *chaosPool) work(ctx context.Context, c leaseq.Claim, p workPlan) workResult {
	gaveUp := func() workResult {
		return workResult{kind: "gave up", text: fmt.Sprintf("gave up %s token %d: %v", c.ID, c.Token, context.Cause(ctx))}
	}
	if p.style == "slow" {
		t := time.NewTimer(p.span)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return gaveUp()
		case <-t.C:
		}
	}
	rctx, stall := ctx, time.Duration(0)
	if p.style == "stall" {
		rctx, stall = context.Background(), p.span
	}
	if err := postDelivery(rctx, w.client, w.recv, c, receiverPlan(p.result), stall); err != nil {
		// An error whose cause is a lost lease or a shutdown is a
		// handler's context's end, however the HTTP transport passed it on
		// (once seen from a connection that was being handed on).
		ended := errors.Is(err, leaseq.ErrLeaseLost) || errors.Is(err, leaseq.ErrShutdown)
		if ctx.Err() != nil && rctx == ctx || ended {
			return workResult{kind: "gave up", text: fmt.Sprintf("gave up %s token %d: %v", c.ID, c.Token, err)}
		}
		w.die("deliver %s token %d: %v", c.ID, c.Token, err)
	}
	w.write(histEvent{Ev: "deliver", Job: c.ID, Owner: c.Owner, Token: c.Token, Plan: receiverPlan(p.result),
		instant: instant{T1: w.now()}})
	switch p.result {
	case "error":
		return workResult{kind: "error", text: chaosReleaseReason(c.ID, c.Token)}
	case "retry":
		return workResult{kind: "retry", text: fmt.Sprintf("busy: retry %s token %d later", c.ID, c.Token), delay: p.delay}
	case "permanent":
		return workResult{kind: "permanent", text: chaosFailReason(c.ID, c.Token)}
	case "panic":
		return workResult{kind: "panic", text: fmt.Sprintf("panic: chaos panic in %s token %d", c.ID, c.Token)}
	case "finishtx":
		return w.finishTx(ctx, c, p)
	}
	return workResult{kind: "finish"}
}

// chaosEffectsSQL is the effects table: the rows FinishTx handlers write
// with their finish. It has no key, so that a second effect of one claim
// shows in it for the checker to find, rather than failing the write.
const chaosEffectsSQL = `CREATE TABLE effects (job TEXT NOT NULL, token BIGINT NOT NULL, owner TEXT NOT NULL)`

// finishTx records the delivery of c as an effect row in the transaction
// of its fenced finish (rule 46 in docs/rules.md), stalling inside the
// function if the plan says so, and logs what FinishTx answered. It runs
// on the handler's context without its end: a handler whose lease was lost
// must hear it from the fence, which is what is under test, not from an
// ended context. It returns finish (nil) only if FinishTx finished the job,
// lost (ErrLeaseLost) if the fence refused, and an error if the call
// failed.
func (w *chaosPool) finishTx(ctx context.Context, c leaseq.Claim, p workPlan) workResult {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chaosFinishTxTimeout)
	defer cancel()
	e := histEvent{Ev: "finishtx", Job: c.ID, Owner: c.Owner, Token: c.Token, instant: instant{T0: time.Now().UnixMilli()}}
	insert := w.engine.rebind(`INSERT INTO effects (job, token, owner) VALUES (?1, ?2, ?3)`)
	ok, err := w.q.FinishTx(fctx, c, func(ctx context.Context, tx leaseq.Tx) error {
		e.FnRuns++
		_, err := tx.ExecContext(ctx, insert, c.ID, c.Token, c.Owner)
		if p.style == "stall in fn" {
			time.Sleep(p.span)
		}
		return err
	})
	e.T1, e.OK = time.Now().UnixMilli(), ok
	if err != nil {
		e.Fault = err.Error()
	}
	w.write(e)
	switch {
	case err != nil:
		return workResult{kind: "error", text: fmt.Sprintf("recording %s token %d failed: %v", c.ID, c.Token, err)}
	case !ok:
		return workResult{kind: "lost", text: leaseq.ErrLeaseLost.Error()}
	}
	return workResult{kind: "finish"}
}

// historyLog is a slog.Handler that writes every record of Work to the
// history, with the attributes the checker reads.
type historyLog struct{ p *chaosProc }

func (h historyLog) Enabled(context.Context, slog.Level) bool { return true }
func (h historyLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h historyLog) WithGroup(string) slog.Handler            { return h }

func (h historyLog) Handle(_ context.Context, r slog.Record) error {
	e := histEvent{Ev: "log", Msg: r.Message, Level: r.Level.String(), instant: instant{T1: r.Time.UnixMilli()}}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "job":
			e.Job = a.Value.String()
		case "owner":
			e.Owner = a.Value.String()
		case "token":
			e.Token, _ = a.Value.Any().(int64)
		case "outcome":
			e.Outcome = a.Value.String()
		case "error":
			e.Err = a.Value.String()
		case "panic":
			e.Reason = a.Value.String()
		case "stack":
			e.Stack = a.Value.String() != ""
		}
		return true
	})
	h.p.write(e)
	return nil
}

// TestChildChaosOperator is the chaos operator process: it cancels
// pending and leased jobs (and sometimes a done one, which Cancel must
// refuse), purges done and quarantined jobs older than a moment, and
// enqueues some of the purged IDs again, writing an intent line before
// each call and a result line after it. It is started by TestChaos and
// does nothing otherwise.
func TestChildChaosOperator(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "chaos-operator" {
		return
	}
	o := &chaosOperator{chaosProc: newChaosProc(t), racerClock: &recordingClock{}}
	var err error
	if o.racer, err = newChaosQueue(o.chaosProc, o.q.DB(), o.racerClock); err != nil {
		t.Fatal(err)
	}
	for !o.stopped() {
		time.Sleep(randDur(chaosOperateEvery/2, chaosOperateEvery*3/2))
		switch r := rand.IntN(100); {
		case r < 30:
			o.cancel()
		case r < 45:
			o.purge()
		case r < 55:
			o.racePurge()
		default:
			o.reenqueue()
		}
	}
}

type chaosOperator struct {
	*chaosProc
	// racer enqueues while a purge runs (racePurge), on a Queue of its
	// own so that each reads its own clock.
	racer      *leaseq.Queue
	racerClock *recordingClock
	seq        int
	// purged holds IDs this incarnation saw purged and has not enqueued
	// again yet.
	purged []string
}

// intend writes the intent line of the call e is the result line of.
func (o *chaosOperator) intend(e histEvent) {
	e.Op, e.Ev, e.instant = e.Ev, "intent", instant{T0: time.Now().UnixMilli()}
	o.write(e)
}

func (o *chaosOperator) cancel() {
	st := leaseq.StatusLeased
	switch r := rand.IntN(10); {
	case r < 3:
		st = leaseq.StatusPending
	case r < 4:
		st = leaseq.StatusDone
	}
	page, err := o.q.List(o.ctx, leaseq.Filter{Status: st, Limit: 20})
	if err != nil || len(page) == 0 {
		return // a failed read is tried again at the next turn
	}
	o.seq++
	e := histEvent{Ev: "cancel", Job: page[rand.IntN(len(page))].ID, Owner: o.name,
		Reason: fmt.Sprintf("cancelled by %s (pid %d) #%d", o.name, os.Getpid(), o.seq)}
	o.intend(e)
	e.instant = o.call(func() { err = o.q.Cancel(o.ctx, e.Job, e.Reason) })
	switch {
	case err == nil:
		e.OK = true
	case errors.Is(err, leaseq.ErrInvalid):
		e.Err = "invalid"
	case errors.Is(err, leaseq.ErrNotFound):
		e.Err = "not found"
	default:
		o.fault(e, err)
		return
	}
	widenWindow()
	o.write(e)
}

func (o *chaosOperator) purge() {
	before := time.Now().Add(-randDur(time.Millisecond, chaosPurgeAge))
	statuses := [][]leaseq.Status{{leaseq.StatusDone, leaseq.StatusQuarantined}, {leaseq.StatusDone},
		{leaseq.StatusQuarantined}}[rand.IntN(3)]
	listed, err := listOlder(o.ctx, o.q, before, statuses)
	if err != nil {
		return
	}
	e := histEvent{Ev: "purge", Owner: o.name, Before: before.UnixMilli(), Statuses: statuses, Listed: len(listed)}
	o.intend(e)
	e.instant = o.call(func() { e.Deleted, err = o.q.Purge(o.ctx, before, statuses...) })
	if err != nil {
		// Some of its chunks may have committed: which of the listed
		// jobs are gone is unknown, so none is enqueued again.
		o.fault(e, err)
		return
	}
	widenWindow()
	o.write(e)
	// Nobody else purges and nothing changes a done or quarantined job
	// here, so every listed job is gone now.
	o.purged = append(o.purged, listed...)
	for len(o.purged) > chaosPurgedPool {
		i := rand.IntN(len(o.purged))
		o.purged = append(o.purged[:i], o.purged[i+1:]...)
	}
}

// racePurge is a purge of done jobs raced by an enqueue of one of them
// again, at full speed: while the purge runs, another goroutine enqueues
// the ID in a loop until it is no longer refused as a duplicate, so that
// the enqueue runs into the purge's deletion as it commits, where the
// enqueue may read the remembered tokens before the purge wrote them
// (rule 21). The checker finds a token handed out twice in the ID's next
// generation if the enqueue lost them. The refused attempts are logged as
// raced, and are no generation.
func (o *chaosOperator) racePurge() {
	before := time.Now().Add(-randDur(time.Millisecond, chaosPurgeAge))
	statuses := []leaseq.Status{leaseq.StatusDone}
	listed, err := listOlder(o.ctx, o.q, before, statuses)
	if err != nil || len(listed) == 0 {
		return
	}
	id := listed[rand.IntN(len(listed))]
	o.seq++
	j := chaosJob(id, fmt.Sprintf("%s again in a race, by %s (pid %d) #%d", id, o.name, os.Getpid(), o.seq))
	e := histEvent{Ev: "purge", Owner: o.name, Before: before.UnixMilli(), Statuses: statuses, Listed: len(listed)}
	o.intend(e)
	purged := make(chan struct{})
	raced := make(chan bool, 1)
	go func() { raced <- o.raceEnqueue(j, purged) }()
	e.instant = o.call(func() { e.Deleted, err = o.q.Purge(o.ctx, before, statuses...) })
	close(purged)
	again := <-raced
	if err != nil {
		o.fault(e, err)
		return
	}
	o.write(e)
	for _, l := range listed {
		if l != id || !again {
			o.purged = append(o.purged, l)
		}
	}
}

// raceEnqueue enqueues j on the racer until it is not refused as a
// duplicate, or it was refused after purged closed, and reports whether it
// was written; a failed attempt ends it.
func (o *chaosOperator) raceEnqueue(j leaseq.Job, purged <-chan struct{}) bool {
	for {
		e := enqueueEvent(j)
		e.Owner = o.name
		o.intend(e)
		done := false
		select {
		case <-purged:
			done = true
		default:
		}
		var err error
		o.racerClock.forget()
		t0 := time.Now().UnixMilli()
		err = o.racer.Enqueue(o.ctx, j)
		e.instant = instant{At: o.racerClock.lastMS(), T0: t0, T1: time.Now().UnixMilli()}
		switch {
		case err == nil:
			e.OK = true
			o.write(e)
			return true
		case errors.Is(err, leaseq.ErrDuplicate):
			e.Err, e.Raced = "duplicate", true
			o.write(e)
			if done {
				return false
			}
		default:
			o.fault(e, err)
			return false
		}
	}
}

// listOlder lists the IDs of the jobs in statuses whose last change is
// before before: the jobs Purge(before, statuses...) must delete.
func listOlder(ctx context.Context, q *leaseq.Queue, before time.Time, statuses []leaseq.Status) ([]string, error) {
	var ids []string
	for _, st := range statuses {
		f := leaseq.Filter{Status: st, Limit: leaseq.MaxListLimit}
		for {
			page, err := q.List(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, s := range page {
				if s.UpdatedAt.UnixMilli() < before.UnixMilli() {
					ids = append(ids, s.ID)
				}
			}
			if len(page) < f.Limit {
				break
			}
			f.AfterID = page[len(page)-1].ID
		}
	}
	return ids, nil
}

func (o *chaosOperator) reenqueue() {
	if len(o.purged) == 0 {
		return
	}
	i := rand.IntN(len(o.purged))
	id := o.purged[i]
	o.purged = append(o.purged[:i], o.purged[i+1:]...)
	o.seq++
	j := chaosJob(id, fmt.Sprintf("%s again, by %s (pid %d) #%d", id, o.name, os.Getpid(), o.seq))
	e := enqueueEvent(j)
	e.Owner = o.name
	o.intend(e)
	var err error
	e.instant = o.call(func() { err = o.q.Enqueue(o.ctx, j) })
	switch {
	case err == nil:
		e.OK = true
	case errors.Is(err, leaseq.ErrDuplicate):
		e.Err = "duplicate"
	default:
		o.fault(e, err)
		return
	}
	widenWindow()
	o.write(e)
}

// enqueueEvent is the history line of enqueueing j.
func enqueueEvent(j leaseq.Job) histEvent {
	return histEvent{Ev: "enqueue", Job: j.ID, Qty: j.Qty, Payload: string(j.Payload), MaxAttempts: j.MaxAttempts,
		Deadline: unixMS(j.Deadline), RunAt: unixMS(j.RunAt)}
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
// of a lease queue it de-duplicates (rule 11 in docs/rules.md): a
// stalled worker's request still arrives after another worker delivered
// the job. It tells jobs apart by ID and payload, since an ID purged and
// enqueued again is a new job with a new payload. A delivery whose plan is
// release or fail is answered with an error and not counted.
type receiver struct {
	mu         sync.Mutex
	qty        map[string]int // first successful delivery of each job, by jobKey
	total      int            // sum of qty over those
	deliveries []delivery     // every request, in arrival order
}

type delivery struct {
	job, payload, owner, plan string
	token                     int64
	qty                       int
}

func jobKey(id, payload string) string { return id + "\x00" + payload }

// receiverStatus is the receiver's answer to a delivery with plan.
func receiverStatus(plan string) int {
	switch plan {
	case "release":
		return http.StatusServiceUnavailable
	case "fail":
		return http.StatusUnprocessableEntity
	}
	return http.StatusOK
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	qty, err1 := strconv.Atoi(r.FormValue("qty"))
	token, err2 := strconv.ParseInt(r.FormValue("token"), 10, 64)
	stall, err3 := strconv.Atoi(r.FormValue("stall"))
	if err := errors.Join(err1, err2, err3); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.record(delivery{job: r.FormValue("job"), payload: r.FormValue("payload"), owner: r.FormValue("owner"),
		plan: r.FormValue("plan"), token: token, qty: qty})
	// The request has arrived and counted; only the answer is late, as when
	// a worker stalls after its request left.
	time.Sleep(time.Duration(stall) * time.Millisecond)
	w.WriteHeader(receiverStatus(r.FormValue("plan")))
}

func (rc *receiver) record(d delivery) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.deliveries = append(rc.deliveries, d)
	if _, seen := rc.qty[jobKey(d.job, d.payload)]; !seen && d.plan == "finish" {
		rc.qty[jobKey(d.job, d.payload)] = d.qty
		rc.total += d.qty
	}
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.deliveries)
}

// incarnation is one run of a chaos process under a name.
type incarnation struct {
	name    string
	role    string // "chaos-worker" (a loop worker), "chaos-pool" or "chaos-operator"
	n       int
	hist    string
	out     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	killed  bool
	// began is the real time (Unix ms) just before it was started, ended
	// just after it was reaped (0 while it runs), killedAt just before
	// SIGKILL was sent to it.
	began, ended, killedAt int64
	// pauses are the times it was stopped, each from just before SIGSTOP
	// was sent to just after SIGCONT was (or it was reaped, if it was
	// killed stopped).
	pauses []interval
	// The parent's view while it runs: stopped since stoppedAt until
	// resumeAt (zero while it runs); terminating since it was sent SIGTERM.
	stoppedAt   int64
	resumeAt    time.Time
	terminating time.Time
}

// interval is a time from..to in Unix milliseconds.
type interval struct{ from, to int64 }

// chaosOperatorName is the operator process's name.
const chaosOperatorName = "op"

// chaos is the parent's side of the test.
type chaos struct {
	t      *testing.T
	engine chaosEngine
	dir    string
	where  string // the database: its file, or its URL
	url    string
	all    []*incarnation
	live   map[string]*incarnation
	// names are the processes in the chaos: the workers and, while jobs
	// arrive, the operator.
	names                                []string
	kills, opKills, pauses, terms, holds int
	soak                                 bool
	// killAt, pauseAt, termAt, holdAt and restartAt are when the next of
	// each is due; lastReport when progress was last logged in a soak.
	killAt, pauseAt, termAt, holdAt, restartAt, lastReport time.Time
	// restarts are the server's crash restarts, each from just before the
	// crash to just after it accepted connections again.
	restarts []interval
	// reader is the parent's own database handle for long reads; holding
	// counts the reads still open.
	reader  *sql.DB
	holding sync.WaitGroup
	// reads are the times a held read was open (for the checker: on
	// SQLite it holds up every commit of the file).
	readsMu sync.Mutex
	reads   []interval
	// counted is the count of open jobs under way, if any; see openJobs.
	counted chan statsResult
	// audit is every committed change of a job, read after the run;
	// effects every row of the effects table.
	audit   []auditRow
	effects []effectRow
	// onServerClock says which processes ran on the server's clock
	// (chaosProc.queueClock; none in the checker's own cases).
	onServerClock func(owner string) bool
}

// stopFile is the file whose existence asks the processes of role to stop.
func (c *chaos) stopFile(role string) string { return filepath.Join(c.dir, "stop-"+role) }

// chaosChildTests are the tests that are the chaos processes, by role.
var chaosChildTests = map[string]string{"chaos-worker": "^TestChildChaosWorker$", "chaos-pool": "^TestChildChaosPool$",
	"chaos-operator": "^TestChildChaosOperator$"}

func (c *chaos) start(name, role string) {
	c.t.Helper()
	n := 0
	for _, inc := range c.all {
		if inc.name == name {
			n++
		}
	}
	inc := &incarnation{name: name, role: role, n: n, exited: make(chan struct{}),
		hist: filepath.Join(c.dir, fmt.Sprintf("%s.%d.jsonl", name, n)),
		out:  filepath.Join(c.dir, fmt.Sprintf("%s.%d.out", name, n))}
	out, err := os.Create(inc.out)
	if err != nil {
		c.t.Fatal(err)
	}
	inc.cmd = exec.Command(os.Args[0], "-test.run="+chaosChildTests[role], "-test.count=1")
	inc.cmd.Env = append(os.Environ(), "LEASEQ_CHILD="+role, "LEASEQ_CHAOS_OWNER="+name,
		"LEASEQ_CHAOS_ENGINE="+c.engine.name, "LEASEQ_CHAOS_DB="+c.where, "LEASEQ_CHAOS_HISTORY="+inc.hist,
		"LEASEQ_CHAOS_URL="+c.url, "LEASEQ_CHAOS_STOP="+c.stopFile(role),
		// A race-enabled binary otherwise sleeps a second before exiting.
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	inc.cmd.Stdout, inc.cmd.Stderr = out, out
	inc.began = time.Now().UnixMilli()
	if err := inc.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		inc.waitErr = inc.cmd.Wait()
		inc.ended = time.Now().UnixMilli()
		out.Close()
		close(inc.exited)
	}()
	c.all = append(c.all, inc)
	c.live[name] = inc
}

// signal sends sig to inc, failing the test if inc has exited on its own.
func (c *chaos) signal(inc *incarnation, sig syscall.Signal) {
	c.t.Helper()
	if err := inc.cmd.Process.Signal(sig); err != nil {
		<-inc.exited
		c.failExit(inc)
	}
}

// kill SIGKILLs a process, stopped or not, waits for it to die and starts
// it again.
func (c *chaos) kill(name string, verbose bool, since time.Time) {
	c.t.Helper()
	inc := c.live[name]
	select {
	case <-inc.exited:
		c.failExit(inc)
	default:
	}
	inc.killed, inc.killedAt = true, time.Now().UnixMilli()
	c.signal(inc, syscall.SIGKILL)
	<-inc.exited
	if ws, ok := inc.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		c.failExit(inc) // it had exited on its own just before the signal
	}
	if !inc.resumeAt.IsZero() {
		inc.pauses, inc.resumeAt = append(inc.pauses, interval{inc.stoppedAt, inc.ended}), time.Time{}
	}
	c.kills++
	if inc.role == "chaos-operator" {
		c.opKills++
	}
	if verbose {
		c.t.Logf("+%.1fs kill -9 %s (pid %d, incarnation %d)", time.Since(since).Seconds(), name, inc.cmd.Process.Pid, inc.n)
	}
	c.start(name, inc.role)
}

// pause stops a process with SIGSTOP for one to three leases, as a long GC
// pause or a host that stopped scheduling it would: its heartbeats stop
// with everything else in it, so its leases run out and other workers may
// take its jobs, and a lock it holds holds up every other process.
// resumeDue sends SIGCONT when the time has come.
func (c *chaos) pause(name string, verbose bool, since time.Time) {
	c.t.Helper()
	inc := c.live[name]
	inc.stoppedAt = time.Now().UnixMilli()
	c.signal(inc, syscall.SIGSTOP)
	d := randDur(chaosLease, 3*chaosLease)
	inc.resumeAt = time.Now().Add(d)
	c.pauses++
	if verbose {
		c.t.Logf("+%.1fs kill -STOP %s (incarnation %d) for %v", time.Since(since).Seconds(), name, inc.n, d.Round(time.Millisecond))
	}
}

func (c *chaos) resume(inc *incarnation) {
	c.t.Helper()
	c.signal(inc, syscall.SIGCONT)
	inc.pauses, inc.resumeAt = append(inc.pauses, interval{inc.stoppedAt, time.Now().UnixMilli()}), time.Time{}
}

// resumeDue sends SIGCONT to the stopped processes whose time has come.
func (c *chaos) resumeDue() {
	c.t.Helper()
	for _, inc := range c.live {
		if !inc.resumeAt.IsZero() && time.Now().After(inc.resumeAt) {
			c.resume(inc)
		}
	}
}

// started reports whether the process has written its start line.
func (inc *incarnation) started() bool {
	st, err := os.Stat(inc.hist)
	return err == nil && st.Size() > 0
}

// terminate asks a pool to shut down gracefully (SIGTERM);
// restartTerminated starts it again once it has.
func (c *chaos) terminate(name string, verbose bool, since time.Time) {
	c.t.Helper()
	inc := c.live[name]
	c.signal(inc, syscall.SIGTERM)
	inc.terminating = time.Now()
	c.terms++
	if verbose {
		c.t.Logf("+%.1fs kill -TERM %s (incarnation %d)", time.Since(since).Seconds(), name, inc.n)
	}
}

// hold keeps a read statement open on the file for one to three leases, as
// a report, a backup or a dashboard may: every COMMIT waits for it (see
// Open), so while it lasts every process's writes — heartbeats and claims
// among them — are held up in their COMMIT while the clock goes on, and a
// call whose statement ran before a lease ended may return after it. It
// reads only the schema; the read lock is on the whole file all the same.
//
// A read that finds a hot journal (a writer was killed mid-commit) must
// roll it back under an exclusive lock, which SQLite does not wait for
// while another read is open; the queue retries such reads, and the parent
// simply skips this one.
func (c *chaos) hold(verbose bool, since time.Time) {
	d := randDur(chaosLease, 3*chaosLease)
	c.holds++
	if verbose {
		c.t.Logf("+%.1fs a read held open for %v", time.Since(since).Seconds(), d.Round(time.Millisecond))
	}
	// On a goroutine of its own: opening a read may wait for a lock that a
	// process the parent has stopped holds.
	c.holding.Add(1)
	go func() {
		defer c.holding.Done()
		from := time.Now().UnixMilli()
		rows, err := c.reader.Query("SELECT name FROM sqlite_schema")
		if err == nil && !rows.Next() {
			err = fmt.Errorf("no rows: %w", rows.Err())
		}
		if err == nil {
			time.Sleep(d)
		}
		if rows != nil {
			rows.Close()
		}
		c.readsMu.Lock()
		c.reads = append(c.reads, interval{from, time.Now().UnixMilli()})
		c.readsMu.Unlock()
		if err != nil && !strings.Contains(err.Error(), "SQLITE_BUSY") {
			c.t.Errorf("holding a read: %v", err)
		}
	}()
}

// restart crash-restarts the database server, as `pg_ctl restart -m
// immediate` does: every process's connections are cut in the middle of
// whatever they were doing, and their calls fail until the server accepts
// connections again. A statement whose connection is cut may have
// committed or not; the processes log such a call as a fault and go on,
// and the checker learns from the audit what it did. Each restart is
// recorded, so that the checker can tell that no call failed while the
// server was up.
func (c *chaos) restart(verbose bool, since time.Time) {
	c.t.Helper()
	from := time.Now()
	c.engine.restart(c.t)
	c.restarts = append(c.restarts, interval{from.UnixMilli(), time.Now().UnixMilli()})
	if verbose {
		c.t.Logf("+%.1fs server crash-restarted in %v", time.Since(since).Seconds(), time.Since(from).Round(time.Millisecond))
	}
}

// chaosShutdownBound bounds a pool's graceful shutdown: its drain, plus a
// handler stalled in a call that ignores its context.
const chaosShutdownBound = 30 * time.Second

// restartTerminated starts again the pools that shut down after SIGTERM,
// failing the test if one failed to exit cleanly or in time.
func (c *chaos) restartTerminated() {
	c.t.Helper()
	for name, inc := range c.live {
		if inc.terminating.IsZero() {
			continue
		}
		select {
		case <-inc.exited:
			if inc.waitErr != nil {
				c.failExit(inc)
			}
			c.start(name, inc.role)
		default:
			if time.Since(inc.terminating) > chaosShutdownBound {
				inc.cmd.Process.Kill()
				c.t.Fatalf("%s did not shut down within %v of SIGTERM", inc.name, chaosShutdownBound)
			}
		}
	}
}

// checkAlive fails the test if a process died without being killed or
// asked to stop.
func (c *chaos) checkAlive() {
	c.t.Helper()
	for _, inc := range c.live {
		select {
		case <-inc.exited:
			if inc.terminating.IsZero() {
				c.failExit(inc)
			}
		default:
		}
	}
}

func (c *chaos) failExit(inc *incarnation) {
	c.t.Helper()
	out, _ := os.ReadFile(inc.out)
	c.t.Fatalf("%s %s (incarnation %d) exited on its own: %v\n%s", inc.role, inc.name, inc.n, inc.waitErr, out)
}

// resumeAll continues every stopped process: before the parent waits for
// anything a stopped process may hold up, such as a lock.
func (c *chaos) resumeAll() {
	c.t.Helper()
	for _, inc := range c.live {
		if !inc.resumeAt.IsZero() {
			c.resume(inc)
		}
	}
}

// stop asks the live processes of role to stop, continues the stopped ones
// (of every role: a stopped process may hold the lock the others need to
// get to their stop), waits for them and takes them out of the chaos.
func (c *chaos) stop(role string) {
	c.t.Helper()
	if err := os.WriteFile(c.stopFile(role), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	c.resumeAll()
	for name, inc := range c.live {
		if inc.role != role {
			continue
		}
		select {
		case <-inc.exited:
		case <-time.After(chaosShutdownBound):
			inc.cmd.Process.Kill()
			c.t.Fatalf("%s did not stop", inc.name)
		}
		if inc.waitErr != nil {
			c.failExit(inc)
		}
		delete(c.live, name)
	}
	c.names = slices.DeleteFunc(c.names, func(name string) bool { return c.live[name] == nil })
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

// TestChaos is kill -9 chaos: loop workers and Work pools claim, deliver
// and then finish, release or fail jobs on one database with short leases
// on the real clock, renewing the lease while slow deliveries run, some
// pool handlers recording their delivery with FinishTx; some deliveries
// stall past the lease; an operator process cancels, purges and
// enqueues purged IDs again; and all of them are SIGKILLed at random
// moments and restarted under the same names, stopped for a few leases
// with SIGSTOP, and pools are shut down gracefully and restarted. On
// PostgreSQL the server is crash-restarted at random moments too, and every
// process goes on through the errors. When the jobs have stopped arriving
// the operator is stopped (jobs it enqueued again would keep the queue from
// draining), and when the queue has drained, checkHistory verifies the
// histories against the final rows, the audit, the receiver and the
// effects FinishTx handlers wrote (see there for what is asserted). It runs
// once per engine, as the subtests sqlite and postgres (rule 42 in
// docs/rules.md).
func TestChaos(t *testing.T) {
	for _, e := range chaosEngines {
		t.Run(e.name, func(t *testing.T) { runChaos(t, e) })
	}
}

func runChaos(t *testing.T, e chaosEngine) {
	run, soak := chaosDuration(t)
	dir := t.TempDir()
	rcv := &receiver{qty: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	c := &chaos{t: t, engine: e, onServerClock: e.onServerClock, dir: dir, where: e.fresh(t, dir), url: srv.URL,
		live: map[string]*incarnation{}, soak: soak}
	db, err := e.open(c.where)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{MaxAttempts: chaosMaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	installChaosAudit(t, db, e)
	if _, err := db.Exec(chaosEffectsSQL); err != nil {
		t.Fatal(err)
	}
	if e.holds {
		if c.reader, err = e.open(c.where); err != nil {
			t.Fatal(err)
		}
		defer c.reader.Close()
	}
	defer c.holding.Wait() // after the processes are killed, below
	// A backlog before the workers start, so that they are busy from the
	// first kill on; more jobs arrive while they run.
	var backlog []leaseq.Job
	for i := 0; i < chaosBacklog; i++ {
		j := chaosJob(chaosJobID(i), "")
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
		backlog = append(backlog, j)
	}
	for i := 0; i < chaosLoopWorkers; i++ {
		c.names = append(c.names, fmt.Sprintf("w%d", i+1))
		c.start(c.names[len(c.names)-1], "chaos-worker")
	}
	for i := 0; i < chaosPools; i++ {
		c.names = append(c.names, fmt.Sprintf("pool%d", i+1))
		c.start(c.names[len(c.names)-1], "chaos-pool")
	}
	c.start(chaosOperatorName, "chaos-operator")
	c.names = append(c.names, chaosOperatorName)
	defer func() {
		for _, inc := range c.live {
			inc.cmd.Process.Kill()
		}
	}()
	began := time.Now()
	produced := make(chan []leaseq.Job, 1)
	produceErr := make(chan error, 1)
	go func() { produce(ctx, q, backlog, run, e.restart != nil, produced, produceErr) }()
	for len(produced) == 0 { // chaos while jobs arrive
		c.chaosTick(rcv, began)
	}
	jobs := <-produced
	if err := <-produceErr; err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	c.stop("chaos-operator")
	c.killUntilDrained(q, rcv, began)
	c.resumeAll() // a stopped process may hold the lock a long read waits for
	c.holding.Wait()
	c.stop("chaos-worker")
	c.stop("chaos-pool")
	elapsed := time.Since(began)
	checkChaosCounts(t, db, q)
	c.audit = readChaosAudit(t, db, q.Name())
	if e.onServerClock(chaosServerClockPool) {
		checkChaosSteps(t, c.audit)
	}
	c.effects = readChaosEffects(t, db)
	c.report(checkHistory(t, q, c, jobs, rcv), elapsed)
}

// checkChaosCounts fails t unless Stats' done and quarantined counts, which
// both engines keep apart from the rows (a table of counters: rule 35 in
// docs/rules.md; on PostgreSQL kept by a trigger and by each pool step),
// equal the rows of each status
// once the chaos is over: kills, server restarts, purges and pool steps
// all changed them.
func checkChaosCounts(t *testing.T, db *sql.DB, q *leaseq.Queue) {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for status, counted := range map[leaseq.Status]int{leaseq.StatusDone: st.Done, leaseq.StatusQuarantined: st.Quarantined} {
		var rows int
		query := fmt.Sprintf("SELECT count(*) FROM leaseq_jobs WHERE queue = '%s' AND status = '%s'", q.Name(), status)
		if err := db.QueryRow(query).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if counted != rows {
			t.Errorf("Stats counts %d jobs %s; the rows say %d", counted, status, rows)
		}
	}
}

// checkChaosSteps fails t unless the calls of the pool on PostgreSQL's
// server clock went through its step, leaseq_pool_step: every claim of it,
// and some of its finishes (the rest are the finishes the step left to
// JobSettle, of rows another transaction held); the other pool's cycles,
// on its injected clock, are two transactions each and never the step. It
// logs how many.
func checkChaosSteps(t *testing.T, audit []auditRow) {
	t.Helper()
	var claims, stepClaims, finishes, stepFinishes, others int
	for _, a := range audit {
		if a.Owner != chaosServerClockPool {
			// A step's sweep quarantines the rows of any owner: no call.
			others += btoi(a.Step && a.call() != "")
			continue
		}
		switch a.call() {
		case "claim":
			claims, stepClaims = claims+1, stepClaims+btoi(a.Step)
		case "finish":
			finishes, stepFinishes = finishes+1, stepFinishes+btoi(a.Step)
		}
	}
	t.Logf("pool steps: %d of %s's %d claims, %d of its %d finishes", stepClaims, chaosServerClockPool, claims,
		stepFinishes, finishes)
	if claims == 0 || stepClaims != claims || stepFinishes == 0 || others != 0 {
		t.Errorf("%s's calls did not all go through leaseq_pool_step (%d of %d claims, %d of %d finishes), "+
			"or %d calls of others did", chaosServerClockPool, stepClaims, claims, stepFinishes, finishes, others)
	}
}

// killUntilDrained goes on with the chaos until no job is pending or
// leased, and fails the test if that takes longer than chaosDrain
// (chaosSoakDrain in a soak).
func (c *chaos) killUntilDrained(q *leaseq.Queue, rcv *receiver, began time.Time) {
	drain := chaosDrain
	if c.soak {
		drain = chaosSoakDrain
	}
	drainBy := time.Now().Add(drain)
	for {
		open, known := c.openJobs(q)
		if known && open == 0 {
			return
		}
		if time.Now().After(drainBy) {
			c.resumeAll()
			c.t.Fatalf("%d jobs still pending or leased %v after the last enqueue; rows:\n%s", open, drain, dumpOpen(q))
		}
		c.chaosTick(rcv, began)
	}
}

// chaosTick is one step of the parent's loop: continue the processes whose
// pause is over, restart the pools that shut down, check that no process
// died on its own, kill, pause or shut down one when its time has come,
// hold a long read (SQLite) or restart the server (PostgreSQL) when that
// is due, and report progress in a soak.
func (c *chaos) chaosTick(rcv *receiver, began time.Time) {
	time.Sleep(5 * time.Millisecond)
	c.resumeDue()
	c.restartTerminated()
	c.checkAlive()
	now, verbose := time.Now(), !c.soak
	if c.killAt.IsZero() {
		c.killAt, c.pauseAt, c.termAt, c.holdAt = now.Add(chaosAfter(chaosKillEvery)),
			now.Add(chaosAfter(chaosPauseEvery)), now.Add(chaosAfter(chaosTermEvery)), now.Add(chaosAfter(chaosHoldEvery))
		c.restartAt = now.Add(chaosAfter(chaosRestartEvery / 4))
	}
	running := func(inc *incarnation) bool { return inc.resumeAt.IsZero() && inc.terminating.IsZero() }
	if now.After(c.killAt) {
		if name := c.pick(func(inc *incarnation) bool { return inc.terminating.IsZero() }); name != "" {
			c.kill(name, verbose, began)
		}
		c.killAt = now.Add(chaosAfter(chaosKillEvery))
	}
	if now.After(c.pauseAt) {
		if name := c.pick(running); name != "" {
			c.pause(name, verbose, began)
		}
		c.pauseAt = now.Add(chaosAfter(chaosPauseEvery))
	}
	if now.After(c.termAt) {
		if name := c.pick(func(inc *incarnation) bool { return inc.role == "chaos-pool" && running(inc) && inc.started() }); name != "" {
			c.terminate(name, verbose, began)
		}
		c.termAt = now.Add(chaosAfter(chaosTermEvery))
	}
	if c.engine.holds && now.After(c.holdAt) {
		c.hold(verbose, began)
		c.holdAt = now.Add(chaosAfter(chaosHoldEvery))
	}
	if c.engine.restart != nil && now.After(c.restartAt) {
		c.restart(verbose, began)
		c.restartAt = time.Now().Add(chaosAfter(chaosRestartEvery))
	}
	if c.soak && time.Since(c.lastReport) > 30*time.Second {
		c.lastReport = time.Now()
		c.t.Logf("+%.0fs: %d kills, %d pauses, %d graceful restarts, %d long reads, %d server restarts, %d deliveries so far",
			time.Since(began).Seconds(), c.kills, c.pauses, c.terms, c.holds, len(c.restarts), rcv.count())
	}
}

// chaosAfter is a random wait between every and eight times it.
func chaosAfter(every time.Duration) time.Duration { return randDur(every, 8*every) }

// pick is a random name of the chaos whose live incarnation ok accepts, or
// "" if there is none.
func (c *chaos) pick(ok func(*incarnation) bool) string {
	var names []string
	for _, name := range c.names {
		if ok(c.live[name]) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[rand.IntN(len(names))]
}

// report logs what happened and fails the test on violations.
func (c *chaos) report(rep chaosReport, elapsed time.Duration) {
	t := c.t
	for i, v := range rep.violations {
		if i == 30 {
			t.Errorf("... and %d more violations", len(rep.violations)-30)
			break
		}
		t.Errorf("violation: %s", v)
		if i < 5 {
			t.Logf("history of %s:\n%s", jobOf(v), c.historyOf(jobOf(v)))
		}
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
	t.Logf("chaos on %s: %v, %d loop workers, %d pools of %d handlers and an operator, lease %v, heartbeat %v: %s; "+
		"%d kills (%d of the operator), %d SIGSTOP pauses, %d graceful restarts of a pool, %d long reads, %s; %d violations",
		c.engine.name, elapsed.Round(time.Millisecond), chaosLoopWorkers, chaosPools, chaosPoolConcurrency, chaosLease,
		chaosHeartbeat, rep.summary(), c.kills, c.opKills, c.pauses, c.terms, c.holds, c.restartSummary(), len(rep.violations))
}

// restartSummary counts the server restarts and how long the server was
// down.
func (c *chaos) restartSummary() string {
	var down, longest int64
	for _, r := range c.restarts {
		down, longest = down+r.to-r.from, max(longest, r.to-r.from)
	}
	return fmt.Sprintf("%d server crash restarts (down %dms in all, %dms at most)", len(c.restarts), down, longest)
}

// jobOf is the job ID a violation names first.
func jobOf(violation string) string {
	id, _, _ := strings.Cut(violation, ":")
	return id
}

// historyOf is every history line about job id, so that a failed run
// (a soak, say) can be understood after its files are gone.
func (c *chaos) historyOf(id string) string {
	var b strings.Builder
	needle := fmt.Sprintf("%q:%q", "job", id)
	for _, inc := range c.all {
		data, _ := os.ReadFile(inc.hist)
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, needle+",") || strings.Contains(line, needle+"}") {
				fmt.Fprintf(&b, "  %s.%d %s\n", inc.name, inc.n, line)
			}
		}
	}
	for _, a := range c.audit {
		if a.ID == id {
			fmt.Fprintf(&b, "  audit %+v\n", a)
		}
	}
	return b.String()
}

// The audit. A pool's heartbeats are Work's own calls, and it logs none
// that succeeds; and a pool killed mid-run may leave several committed
// calls without a record. So the histories cannot tell how long a pool's
// leases lasted. Triggers copy every insert of a job and every change of
// its state into chaos_audit inside the transaction that makes it, so a
// change is in the audit exactly when it committed, in commit order, with
// the instant the call judged it at (updated_at, which every writing
// statement sets to its "now"). An insert has no old status, and its old
// token is its token. Promotions, which only move a job between the
// queue's indexes, change no state and are left out. This and the
// PostgreSQL version of it (chaosAuditPostgresSQL) are the one place the
// chaos test touches the queue's table with SQL of its own.
var chaosAuditSQL = []string{`
CREATE TABLE IF NOT EXISTS chaos_audit (
  seq INTEGER PRIMARY KEY, queue TEXT NOT NULL, id TEXT NOT NULL, old_status TEXT NOT NULL, status TEXT NOT NULL,
  owner TEXT NOT NULL, old_token INTEGER NOT NULL, token INTEGER NOT NULL, attempts INTEGER NOT NULL,
  lease_until INTEGER, deadline INTEGER, run_at INTEGER, reason TEXT NOT NULL, at INTEGER NOT NULL,
  step INTEGER NOT NULL DEFAULT 0, committed INTEGER)`, `
CREATE TRIGGER IF NOT EXISTS chaos_audit_update
AFTER UPDATE OF status, owner, token, attempts, lease_until, run_at, reason, updated_at ON leaseq_jobs
BEGIN
  INSERT INTO chaos_audit (queue, id, old_status, status, owner, old_token, token, attempts, lease_until, deadline,
    run_at, reason, at)
  VALUES (new.queue, new.id, old.status, new.status, new.owner, old.token, new.token, new.attempts, new.lease_until,
    new.deadline, new.run_at, new.reason, new.updated_at);
END`, `
CREATE TRIGGER IF NOT EXISTS chaos_audit_insert AFTER INSERT ON leaseq_jobs
BEGIN
  INSERT INTO chaos_audit (queue, id, old_status, status, owner, old_token, token, attempts, lease_until, deadline,
    run_at, reason, at)
  VALUES (new.queue, new.id, '', new.status, new.owner, new.token, new.token, new.attempts, new.lease_until,
    new.deadline, new.run_at, new.reason, new.updated_at);
END`}

// auditRow is one committed change of a job: its state before (OldStatus,
// OldToken) and after, and At, the clock reading the call judged by.
// Times are Unix milliseconds, 0 for none. Step: a pool's step made it
// (PostgreSQL's leaseq_pool_step; never on SQLite). Committed: the
// server's clock as its transaction committed (PostgreSQL), else 0.
//
// On an injected clock a call reads it once it holds the rows it changes,
// so a job's changes are in the order of their instants. One pool on
// PostgreSQL runs on the server's clock (chaosProc.queueClock), where a
// statement judges at the instant it began (rule 8 in docs/rules.md), and
// a transaction at its reading after its locks, before its other
// statements and its COMMIT: a change may then commit after another of
// the same row with a later instant (the step began before a heartbeat's
// extension, and reached the row after it committed), and a call that
// reads the row meanwhile does not see a change not yet committed whose
// instant is earlier than its own (a release refused, once the lease had
// ended, while the heartbeat that extended it had yet to commit). The
// checker orders that pool's accepted calls of one claim by seq, and
// judges its refusals without the changes that may not have been visible
// yet.
type auditRow struct {
	Seq                          int64
	ID, OldStatus, Status, Owner string
	OldToken, Token              int64
	Attempts                     int
	LeaseUntil, Deadline, RunAt  int64
	Reason                       string
	At                           int64
	Step                         bool
	Committed                    int64
}

// readChaosAudit reads the audited changes of queue's jobs, in seq order.
// Its one placeholder, $1, is PostgreSQL's and also SQLite's.
func readChaosAudit(t *testing.T, db *sql.DB, queue string) []auditRow {
	t.Helper()
	rows, err := db.Query(`SELECT seq, id, old_status, status, owner, old_token, token, attempts,
		coalesce(lease_until, 0), coalesce(deadline, 0), coalesce(run_at, 0), reason, at, step = 1,
		coalesce(committed, 0) FROM chaos_audit
		WHERE queue = $1 ORDER BY seq`, queue)
	if err != nil {
		t.Fatalf("reading the audit: %v", err)
	}
	defer rows.Close()
	var audit []auditRow
	for rows.Next() {
		var a auditRow
		if err := rows.Scan(&a.Seq, &a.ID, &a.OldStatus, &a.Status, &a.Owner, &a.OldToken, &a.Token, &a.Attempts,
			&a.LeaseUntil, &a.Deadline, &a.RunAt, &a.Reason, &a.At, &a.Step, &a.Committed); err != nil {
			t.Fatalf("reading the audit: %v", err)
		}
		audit = append(audit, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading the audit: %v", err)
	}
	return audit
}

// effectRow is one row of the effects table: the delivery of Job that the
// FinishTx of Token by Owner recorded.
type effectRow struct {
	Job, Owner string
	Token      int64
}

// readChaosEffects reads the effects table.
func readChaosEffects(t *testing.T, db *sql.DB) []effectRow {
	t.Helper()
	rows, err := db.Query(`SELECT job, token, owner FROM effects`)
	if err != nil {
		t.Fatalf("reading the effects: %v", err)
	}
	defer rows.Close()
	var effects []effectRow
	for rows.Next() {
		var e effectRow
		if err := rows.Scan(&e.Job, &e.Token, &e.Owner); err != nil {
			t.Fatalf("reading the effects: %v", err)
		}
		effects = append(effects, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading the effects: %v", err)
	}
	return effects
}

func randDur(lo, hi time.Duration) time.Duration { return lo + rand.N(hi-lo) }

func chaosJobID(i int) string { return fmt.Sprintf("job-%06d", i) }

// chaosJob is a chaos job with ID id, a random Qty, and payload (or one
// naming the ID if ""). Most jobs have the default 3 attempts; some have 1
// or 2, so that a stalled delivery or a kill quarantines them; some have a
// deadline a little ahead, which caps their leases and extensions and
// quarantines them if they are not done in time; some are delayed.
func chaosJob(id, payload string) leaseq.Job {
	if payload == "" {
		payload = "payload of " + id
	}
	j := leaseq.Job{ID: id, Qty: 1 + rand.IntN(9), Payload: []byte(payload)}
	switch r := rand.IntN(100); {
	case r < 10:
		j.MaxAttempts = 1
	case r < 20:
		j.MaxAttempts = 2
	case r < 30:
		j.Deadline = time.Now().Add(randDur(300*time.Millisecond, 3*time.Second))
	case r < 35:
		j.RunAt = time.Now().Add(randDur(time.Millisecond, 500*time.Millisecond))
	}
	return j
}

// produce enqueues jobs, numbered from len(jobs), for run, then sends the
// list of all enqueued jobs. With restarts, the server restarts meanwhile
// and an enqueue that fails is settled by enqueueSurely; otherwise an error
// ends it.
func produce(ctx context.Context, q *leaseq.Queue, jobs []leaseq.Job, run time.Duration, restarts bool,
	out chan<- []leaseq.Job, errc chan<- error) {
	var err error
	for end := time.Now().Add(run); time.Now().Before(end); time.Sleep(chaosEnqueueEvery) {
		if backlogged(ctx, q) {
			continue
		}
		j := chaosJob(chaosJobID(len(jobs)), "")
		in := true
		if restarts {
			in, err = enqueueSurely(ctx, q, j)
		} else {
			err = q.Enqueue(ctx, j)
		}
		if err != nil {
			break
		}
		if in {
			jobs = append(jobs, j)
		}
	}
	errc <- err // before out: the receiver of out reads errc next
	out <- jobs
}

// backlogged reports whether more than chaosMaxWaiting jobs wait; a Stats
// that fails (a restarting server) says no.
func backlogged(ctx context.Context, q *leaseq.Queue) bool {
	st, err := q.Stats(ctx)
	return err == nil && st.Pending+st.Scheduled+st.Leased+st.Expired > chaosMaxWaiting
}

// enqueueSurely enqueues j and tells whether it is in the queue. After an
// error (a restarting server cut the connection) the enqueue may have
// committed or not, so it asks for the job until the server answers: only
// this producer enqueues new IDs, so a row of j's ID is j. A job that is not
// there was not enqueued: to be gone it would have had to be claimed, ended
// and purged within chaosRetryAfter of the server's return, and Purge takes
// only jobs that ended a while before its call. It gives up after
// chaosDrain.
func enqueueSurely(ctx context.Context, q *leaseq.Queue, j leaseq.Job) (bool, error) {
	err := q.Enqueue(ctx, j)
	for give := time.Now().Add(chaosDrain); err != nil && !errors.Is(err, leaseq.ErrInvalid); {
		if time.Now().After(give) {
			return false, err
		}
		time.Sleep(chaosRetryAfter)
		var s leaseq.State
		switch s, err = q.Get(ctx, j.ID); {
		case err == nil && string(s.Payload) != string(j.Payload):
			return false, fmt.Errorf("enqueued %s with payload %q, found %q", j.ID, j.Payload, s.Payload)
		case err == nil:
			return true, nil
		case errors.Is(err, leaseq.ErrNotFound):
			return false, nil
		}
	}
	return err == nil, err
}

// openJobs counts the jobs pending or leased, claimable or not, on a
// goroutine of its own; known is false until the count is in. The parent's
// loop must never wait for the file: the lock may be held by a process it
// has stopped and must continue, and a read waits out its busy timeout
// whatever its context says. A count of 0 stays true once taken: with the
// operator stopped and the producer done, nothing opens a job again. A
// count that fails while the server restarts is taken again.
func (c *chaos) openJobs(q *leaseq.Queue) (open int, known bool) {
	c.t.Helper()
	if c.counted == nil {
		counted := make(chan statsResult, 1)
		c.counted = counted
		go func() {
			st, err := q.Stats(context.Background())
			counted <- statsResult{st, err}
		}()
	}
	select {
	case r := <-c.counted:
		c.counted = nil
		switch {
		case r.err != nil && c.engine.restart != nil:
			return 0, false // the server is restarting: count again
		case r.err != nil:
			c.t.Fatal(r.err)
		}
		return r.st.Pending + r.st.Scheduled + r.st.Leased + r.st.Expired, true
	default:
		return 0, false
	}
}

type statsResult struct {
	st  leaseq.Stats
	err error
}

func dumpOpen(q *leaseq.Queue) string {
	var b strings.Builder
	for _, st := range []leaseq.Status{leaseq.StatusPending, leaseq.StatusLeased} {
		page, err := q.List(context.Background(), leaseq.Filter{Status: st, Limit: 20})
		if err != nil {
			return err.Error()
		}
		for _, s := range page {
			fmt.Fprintf(&b, "  %s %s owner=%s token=%d attempts=%d/%d lease_until=%d deadline=%d run_at=%d now=%d\n",
				s.ID, s.Status, s.Owner, s.Token, s.Attempts, s.MaxAttempts, unixMS(s.LeaseUntil), unixMS(s.Deadline),
				unixMS(s.RunAt), time.Now().UnixMilli())
		}
	}
	return b.String()
}
