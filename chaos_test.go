package leaseq_test

import (
	"context"
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The chaos test runs worker processes and one operator process against one
// database file on the real clock, SIGKILLs them at random moments,
// restarts them under the same names, and afterwards checks the history
// they wrote against the final rows and what the receiver got.
//
// Workers claim, deliver and then finish, release with a delay (the
// delivery failed transiently) or fail (it failed for good); while a slow
// delivery runs they extend the lease. The operator cancels pending and
// leased jobs, purges done and quarantined jobs older than a moment, and
// enqueues some purged IDs again.
const (
	chaosWorkers = 3
	chaosLease   = 150 * time.Millisecond
	// chaosMaxAttempts is every chaos queue's default MaxAttempts.
	chaosMaxAttempts = 3
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
	// chaosStallPercent of deliveries stall for about a lease without
	// renewing it, so that their results are often refused and another
	// worker takes the job.
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
)

// histEvent is one line of a chaos process's history.
//
// Worker lines:
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
// clock reads it once inside its committed transaction (rule 8 in README's
// "The rules"), so right after a call returns, last is exactly the "now"
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
// operator share: a queue on the test's file with a recording clock, and
// the history file.
type chaosProc struct {
	t     *testing.T
	ctx   context.Context
	name  string
	q     *leaseq.Queue
	clock *recordingClock
	hist  *os.File
	stop  string
}

func chaosEnv(k string) string { return os.Getenv("LEASEQ_CHAOS_" + k) }

func newChaosProc(t *testing.T) *chaosProc {
	p := &chaosProc{t: t, ctx: context.Background(), name: chaosEnv("OWNER"), clock: &recordingClock{},
		stop: chaosEnv("STOP")}
	db, err := leaseq.Open(chaosEnv("DB"))
	if err != nil {
		t.Fatal(err)
	}
	p.q, err = leaseq.New(p.ctx, db, leaseq.Options{Clock: p.clock, MaxAttempts: chaosMaxAttempts})
	if err != nil {
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

func (p *chaosProc) write(e histEvent) {
	b, _ := json.Marshal(e)
	if _, err := p.hist.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

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
			// An idle Claim is a read (rule 23 in README's "The rules"),
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
		w.t.Fatalf("Claim: %v", err)
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
			if err != nil {
				w.t.Fatalf("Extend: %v", err)
			}
			widenWindow()
			e := histEvent{Ev: "extend", Job: c.ID, Owner: w.name, Token: c.Token, Lease: chaosLease.Milliseconds(),
				OK: ok, instant: when}
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
	v := url.Values{"job": {c.ID}, "qty": {strconv.Itoa(c.Qty)}, "payload": {string(c.Payload)},
		"owner": {w.name}, "token": {strconv.FormatInt(c.Token, 10)},
		"stall": {strconv.FormatInt(plan.stall.Milliseconds(), 10)}, "plan": {plan.outcome}}
	resp, err := w.client.PostForm(w.recv, v)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if want := receiverStatus(plan.outcome); resp.StatusCode != want {
		return fmt.Errorf("receiver answered %s, want %d", resp.Status, want)
	}
	return nil
}

// settle makes the call the plan says after the delivery: Finish, Release
// or Fail.
func (w *chaosWorker) settle(c leaseq.Claim, plan deliveryPlan) {
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
		w.t.Fatalf("%s: %v", plan.outcome, err)
	}
	widenWindow()
	w.write(e)
}

// The reasons of a worker's Release and Fail name the claim, so the
// checker can tell from a row's reason which call put it there.
func chaosReleaseReason(id string, token int64) string {
	return fmt.Sprintf("transient failure of %s token %d", id, token)
}

func chaosFailReason(id string, token int64) string {
	return fmt.Sprintf("permanent failure of %s token %d", id, token)
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
	o := &chaosOperator{chaosProc: newChaosProc(t)}
	for !o.stopped() {
		time.Sleep(randDur(chaosOperateEvery/2, chaosOperateEvery*3/2))
		switch r := rand.IntN(100); {
		case r < 30:
			o.cancel()
		case r < 55:
			o.purge()
		default:
			o.reenqueue()
		}
	}
}

type chaosOperator struct {
	*chaosProc
	seq int
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
	if err != nil {
		o.t.Fatalf("List: %v", err)
	}
	if len(page) == 0 {
		return
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
		o.t.Fatalf("Cancel: %v", err)
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
		o.t.Fatalf("List: %v", err)
	}
	e := histEvent{Ev: "purge", Owner: o.name, Before: before.UnixMilli(), Statuses: statuses, Listed: len(listed)}
	o.intend(e)
	e.instant = o.call(func() { e.Deleted, err = o.q.Purge(o.ctx, before, statuses...) })
	if err != nil {
		o.t.Fatalf("Purge: %v", err)
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
		o.t.Fatalf("Enqueue: %v", err)
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
// of a lease queue it de-duplicates (rule 11 in README's "The rules"): a
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
	role    string // "chaos-worker" or "chaos-operator"
	n       int
	hist    string
	out     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	killed  bool
}

// chaosOperatorName is the operator process's name.
const chaosOperatorName = "op"

// chaos is the parent's side of the test.
type chaos struct {
	t      *testing.T
	dir    string
	dbPath string
	url    string
	all    []*incarnation
	live   map[string]*incarnation
	// killable are the names the next kill picks from.
	killable       []string
	kills, opKills int
	soak           bool
	// killAt is when the next kill is due; lastReport when progress was
	// last logged in a soak.
	killAt, lastReport time.Time
}

// stopFile is the file whose existence asks the processes of role to stop.
func (c *chaos) stopFile(role string) string { return filepath.Join(c.dir, "stop-"+role) }

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
	run := "^TestChildChaosWorker$"
	if role == "chaos-operator" {
		run = "^TestChildChaosOperator$"
	}
	inc.cmd = exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	inc.cmd.Env = append(os.Environ(), "LEASEQ_CHILD="+role, "LEASEQ_CHAOS_OWNER="+name,
		"LEASEQ_CHAOS_DB="+c.dbPath, "LEASEQ_CHAOS_HISTORY="+inc.hist, "LEASEQ_CHAOS_URL="+c.url,
		"LEASEQ_CHAOS_STOP="+c.stopFile(role),
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

// kill SIGKILLs a process, waits for it to die and starts it again.
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
	if inc.role == "chaos-operator" {
		c.opKills++
	}
	if verbose {
		c.t.Logf("+%.1fs kill -9 %s (pid %d, incarnation %d)", time.Since(since).Seconds(), name, inc.cmd.Process.Pid, inc.n)
	}
	c.start(name, inc.role)
}

// checkAlive fails the test if a process died without being killed.
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
	c.t.Fatalf("%s %s (incarnation %d) exited on its own: %v\n%s", inc.role, inc.name, inc.n, inc.waitErr, out)
}

// stop asks the live processes of role to stop and waits for them.
func (c *chaos) stop(role string) {
	c.t.Helper()
	if err := os.WriteFile(c.stopFile(role), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	for name, inc := range c.live {
		if inc.role != role {
			continue
		}
		select {
		case <-inc.exited:
		case <-time.After(30 * time.Second):
			inc.cmd.Process.Kill()
			c.t.Fatalf("%s did not stop", inc.name)
		}
		if inc.waitErr != nil {
			c.failExit(inc)
		}
		delete(c.live, name)
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
// and then finish, release or fail jobs on one database file with short
// leases on the real clock, renewing the lease while a slow delivery runs;
// some deliveries stall past the lease; an operator process cancels,
// purges and enqueues purged IDs again; and all of them are SIGKILLed at
// random moments and restarted under the same names. When the jobs have
// stopped arriving the operator is stopped (jobs it enqueued again would
// keep the queue from draining), and when the queue has drained,
// checkHistory verifies the histories against the final rows and the
// receiver (see there for what is asserted).
func TestChaos(t *testing.T) {
	run, soak := chaosDuration(t)
	dir := t.TempDir()
	rcv := &receiver{qty: map[string]int{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	c := &chaos{t: t, dir: dir, dbPath: filepath.Join(dir, "chaos.db"), url: srv.URL,
		live: map[string]*incarnation{}, soak: soak}
	db, err := leaseq.Open(c.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{MaxAttempts: chaosMaxAttempts})
	if err != nil {
		t.Fatal(err)
	}
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
	for i := 0; i < chaosWorkers; i++ {
		c.killable = append(c.killable, fmt.Sprintf("w%d", i+1))
		c.start(c.killable[i], "chaos-worker")
	}
	c.start(chaosOperatorName, "chaos-operator")
	c.killable = append(c.killable, chaosOperatorName)
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
	c.stop("chaos-operator")
	c.killable = c.killable[:chaosWorkers]
	c.killUntilDrained(q, rcv, began)
	c.stop("chaos-worker")
	elapsed := time.Since(began)
	c.report(checkHistory(t, q, c, jobs, rcv), elapsed)
}

// killUntilDrained goes on killing until no job is pending or leased, and
// fails the test if that takes longer than chaosDrain.
func (c *chaos) killUntilDrained(q *leaseq.Queue, rcv *receiver, began time.Time) {
	drainBy := time.Now().Add(chaosDrain)
	for open := openJobs(c.t, q); open > 0; open = openJobs(c.t, q) {
		if time.Now().After(drainBy) {
			c.t.Fatalf("%d jobs still pending or leased %v after the last enqueue; rows:\n%s", open, chaosDrain, dumpOpen(q))
		}
		c.chaosTick(rcv, began)
	}
}

// chaosTick is one step of the parent's loop: check that no process died on
// its own, kill one when its time has come, report progress in a soak.
func (c *chaos) chaosTick(rcv *receiver, began time.Time) {
	time.Sleep(10 * time.Millisecond)
	c.checkAlive()
	if c.killAt.IsZero() {
		c.killAt = time.Now().Add(randDur(100*time.Millisecond, 800*time.Millisecond))
	}
	if time.Now().After(c.killAt) {
		c.kill(c.killable[rand.IntN(len(c.killable))], !c.soak, began)
		c.killAt = time.Now().Add(randDur(100*time.Millisecond, 800*time.Millisecond))
	}
	if c.soak && time.Since(c.lastReport) > 30*time.Second {
		c.lastReport = time.Now()
		c.t.Logf("+%.0fs: %d kills, %d deliveries so far", time.Since(began).Seconds(), c.kills, rcv.count())
	}
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
	t.Logf("chaos: %v, %d workers and an operator, lease %v: %s; %d kills (%d of the operator); %d violations",
		elapsed.Round(time.Millisecond), chaosWorkers, chaosLease, rep.summary(), c.kills, c.opKills, len(rep.violations))
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
	return b.String()
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
// list of all enqueued jobs.
func produce(ctx context.Context, q *leaseq.Queue, jobs []leaseq.Job, run time.Duration, out chan<- []leaseq.Job, errc chan<- error) {
	var err error
	for end := time.Now().Add(run); time.Now().Before(end); time.Sleep(chaosEnqueueEvery) {
		j := chaosJob(chaosJobID(len(jobs)), "")
		if err = q.Enqueue(ctx, j); err != nil {
			break
		}
		jobs = append(jobs, j)
	}
	errc <- err // before out: the receiver of out reads errc next
	out <- jobs
}

// openJobs counts the jobs pending or leased, claimable or not.
func openJobs(t *testing.T, q *leaseq.Queue) int {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Pending + st.Scheduled + st.Leased + st.Expired
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
