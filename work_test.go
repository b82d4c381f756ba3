package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Tests of Work: rules 28–34 in docs/rules.md. They run on short
// real leases and the system clock: Work turns the queue's instants into
// real timers, so a ManualClock would stop its heartbeats rather than step
// them. Nothing waits for a guessed duration: each test waits for an event
// (a handler starting, a log record, a pool parking) with a bounded
// timeout, and where it checks timing, the bound is generous next to what
// a broken rule would take (a PollInterval of an hour, a lease of seconds).
//
// Each test runs on each engine in turn (forEnginesInTurn in
// engine_test.go), never in parallel: some measure the process's CPU, some
// look at every goroutine. TestWorkIdleTakesNoWriteLock holds SQLite's write
// lock from another connection and runs on SQLite only.

// openQueue opens the database of engine eng at path on a *sql.DB of its
// own, as another process would, and returns its default queue on the
// system clock (on PostgreSQL, the server's).
func openQueue(t *testing.T, eng testEngine, path string) *leaseq.Queue {
	t.Helper()
	db := eng.open(t, path)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// realQueue is a queue on a fresh database with the system clock.
func realQueue(t *testing.T, eng testEngine) *leaseq.Queue {
	t.Helper()
	return openQueue(t, eng, eng.fresh(t))
}

// worker is one Work call running in a goroutine.
type worker struct {
	cancel   context.CancelFunc
	returned chan struct{} // closed when Work returned
	err      error         // Work's result, once returned is closed
}

// runWork starts Work in a goroutine; the test's cleanup stops it.
func runWork(t *testing.T, q *leaseq.Queue, opts leaseq.WorkerOptions, h leaseq.Handler) *worker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{cancel: cancel, returned: make(chan struct{})}
	go func() {
		w.err = q.Work(ctx, opts, h)
		close(w.returned)
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends Work's context and returns Work's result.
func (w *worker) stop(t *testing.T) error {
	t.Helper()
	w.cancel()
	return w.wait(t, 30*time.Second, "Work to return after its context ended")
}

// wait waits up to d for Work to return and returns its result.
func (w *worker) wait(t *testing.T, d time.Duration, what string) error {
	t.Helper()
	select {
	case <-w.returned:
		return w.err
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		return nil
	}
}

// running reports whether Work has not returned yet.
func (w *worker) running() bool {
	select {
	case <-w.returned:
		return false
	default:
		return true
	}
}

// waitFor waits for ch with a bounded timeout.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return waitWithin(t, ch, 20*time.Second, what)
}

// waitWithin waits up to d for ch.
func waitWithin[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}

// waitUntil polls cond every millisecond until it holds, for at most d: for
// states no event announces, such as a pool parking.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.After(d)
	for !cond() {
		select {
		case <-tick.C:
		case <-limit:
			t.Fatalf("timed out after %v waiting for %s; goroutines:\n%s", d, what, poolStacks())
		}
	}
}

// mustGet returns job id's row.
func mustGet(t *testing.T, q *leaseq.Queue, id string) leaseq.State {
	t.Helper()
	s, err := q.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustEnqueue enqueues jobs one by one.
func mustEnqueue(t *testing.T, q *leaseq.Queue, jobs ...leaseq.Job) {
	t.Helper()
	for _, j := range jobs {
		if err := q.Enqueue(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
}

// Where a pool is, read from the goroutines' stacks. A job that starts
// promptly proves a wake-up only if the pool was asleep when the job was
// written, not about to look anyway; nothing announces that moment, but the
// stacks show it: the pool's loop waits in its select, and no claim,
// handler, heartbeat, result write or drain of any pool is in flight.

const poolFrame = "github.com/leaseq/leaseq.(*pool)."

// goroutineTops returns, for each goroutine that runs code of a pool, its
// state and the function it is in.
func goroutineTops() (states, tops []string) {
	for _, g := range goroutineDump() {
		if !strings.Contains(g, poolFrame) {
			continue
		}
		lines := strings.Split(g, "\n")
		state := ""
		if i, j := strings.Index(lines[0], "["), strings.Index(lines[0], "]"); i >= 0 && j > i {
			state = lines[0][i+1 : j]
		}
		top := ""
		if len(lines) > 1 {
			top = lines[1]
			if i := strings.LastIndex(top, "("); i > 0 {
				top = top[:i]
			}
		}
		states, tops = append(states, state), append(tops, top)
	}
	return states, tops
}

// goroutineDump is every goroutine's stack, one string each.
func goroutineDump() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(strings.TrimSpace(string(buf[:n])), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// poolStacks is the stacks of the goroutines running pool code, for a
// failure message.
func poolStacks() string {
	var b strings.Builder
	for _, g := range goroutineDump() {
		if strings.Contains(g, poolFrame) {
			b.WriteString(g + "\n\n")
		}
	}
	return b.String()
}

// poolsParked reports whether at least one pool runs and every pool is
// asleep in its loop's select with nothing in flight; so are its periodic
// and retention loops (timedLoop), if any.
func poolsParked() bool {
	states, tops := goroutineTops()
	for i, top := range tops {
		if top != poolFrame+"await" && top != poolFrame+"timedLoop" || !strings.HasPrefix(states[i], "select") {
			return false
		}
	}
	return len(tops) > 0
}

// poolDraining reports whether a pool's loop waits in its drain.
func poolDraining() bool {
	for _, g := range goroutineDump() {
		if strings.Contains(g, poolFrame+"await(") && strings.Contains(g, poolFrame+"drain(") {
			return true
		}
	}
	return false
}

// waitParked waits until every pool of the process is asleep.
func waitParked(t *testing.T) {
	t.Helper()
	waitUntil(t, 10*time.Second, "the pool to go idle", poolsParked)
}

// logEntry is one captured log record.
type logEntry struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

// str is attribute key's value as text ("" if absent).
func (e logEntry) str(key string) string {
	v, ok := e.attrs[key]
	if !ok {
		return ""
	}
	return v.String()
}

func (e logEntry) String() string {
	return fmt.Sprintf("%v %q %v", e.level, e.msg, e.attrs)
}

// logSink keeps every record of a logger made by newLogSink, at every
// level from Debug up.
type logSink struct {
	mu      sync.Mutex
	entries []logEntry
	changed chan struct{} // closed and replaced at each record
}

// newLogSink returns a sink and the logger that writes into it.
func newLogSink() (*logSink, *slog.Logger) {
	s := &logSink{changed: make(chan struct{})}
	return s, slog.New(captureHandler{sink: s})
}

type captureHandler struct {
	sink  *logSink
	attrs []slog.Attr
}

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	e := logEntry{level: r.Level, msg: r.Message, attrs: map[string]slog.Value{}}
	for _, a := range h.attrs {
		e.attrs[a.Key] = a.Value.Resolve()
	}
	r.Attrs(func(a slog.Attr) bool {
		e.attrs[a.Key] = a.Value.Resolve()
		return true
	})
	s := h.sink
	s.mu.Lock()
	s.entries = append(s.entries, e)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return nil
}

func (h captureHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return captureHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

// WithGroup is not used by Work; the records stay flat.
func (h captureHandler) WithGroup(string) slog.Handler { return h }

// all returns the records that match.
func (s *logSink) all(match func(logEntry) bool) []logEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []logEntry
	for _, e := range s.entries {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// waitFor waits for a record that matches and returns the first.
func (s *logSink) waitFor(t *testing.T, what string, match func(logEntry) bool) logEntry {
	t.Helper()
	limit := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if got := s.all(match); len(got) > 0 {
			return got[0]
		}
		select {
		case <-changed:
		case <-limit:
			t.Fatalf("timed out waiting for a log record: %s; records:\n%s", what, s)
		}
	}
}

func (s *logSink) String() string {
	var b strings.Builder
	for _, e := range s.all(func(logEntry) bool { return true }) {
		fmt.Fprintln(&b, e)
	}
	return b.String()
}

// record matches records at level whose message contains msg and, if id is
// not empty, that name job id.
func record(level slog.Level, msg, id string) func(logEntry) bool {
	return func(e logEntry) bool {
		return e.level == level && strings.Contains(e.msg, msg) && (id == "" || e.str("job") == id)
	}
}

// atLevel matches every record at level.
func atLevel(level slog.Level) func(logEntry) bool {
	return func(e logEntry) bool { return e.level == level }
}

// backoffRecorder is a WorkerOptions.Backoff that records the attempts it
// is asked about and answers delay.
type backoffRecorder struct {
	delay time.Duration
	mu    sync.Mutex
	asked []int
}

func (b *backoffRecorder) backoff(attempt int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asked = append(b.asked, attempt)
	return b.delay
}

func (b *backoffRecorder) attempts() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.asked...)
}

// cpuUsed is the CPU time this process has used, user and system.
func cpuUsed(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuOver is the CPU time the process uses during the next d of real time.
// The sleep is the measuring window, not a wait for an event.
func cpuOver(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	before := cpuUsed(t)
	time.Sleep(d)
	return cpuUsed(t) - before
}

// idleCPUBound is a spin guard, not a benchmark: half a core. A pool that
// busy-polls burns a whole one (a second per second). One that sleeps
// between looks every 10ms uses under a tenth (a look costs well under a
// millisecond), up to a fifth with the race detector on a loaded machine.
const idleCPUBound = 500 * time.Millisecond

// faultSwitch makes every UPDATE of leaseq_jobs in one database fail
// while it is on: a database fault that a second connection, like an
// operator's tool, can switch on and off under a running pool. Enqueue (an
// INSERT) and reads still work, so the pool's claims fail only once a job
// is claimable, and its heartbeats and results fail too. This helper is the
// only raw SQL the worker tests run on the queue's tables.
type faultSwitch struct {
	db  *sql.DB
	eng testEngine
}

// faultSQL makes the switch, in each engine's SQL.
var faultSQL = map[string][]string{
	sqliteEngine.name: {
		`CREATE TABLE test_fault (active INTEGER NOT NULL)`,
		`INSERT INTO test_fault VALUES (0)`,
		`CREATE TRIGGER test_fault BEFORE UPDATE ON leaseq_jobs WHEN (SELECT active FROM test_fault)
		 BEGIN SELECT RAISE(ABORT, 'injected fault'); END`,
	},
	postgresEngine.name: {
		`CREATE TABLE test_fault (active boolean NOT NULL)`,
		`INSERT INTO test_fault VALUES (false)`,
		`CREATE FUNCTION test_fault() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF (SELECT active FROM test_fault) THEN RAISE EXCEPTION 'injected fault'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER test_fault BEFORE UPDATE ON leaseq_jobs FOR EACH ROW EXECUTE FUNCTION test_fault()`,
	},
}

func newFaultSwitch(t *testing.T, eng testEngine, path string) *faultSwitch {
	t.Helper()
	db := eng.open(t, path)
	for _, stmt := range faultSQL[eng.name] {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return &faultSwitch{db: db, eng: eng}
}

// set switches the fault on or off; it holds for every write that begins
// after set returns.
func (f *faultSwitch) set(t *testing.T, on bool) {
	t.Helper()
	if _, err := f.db.Exec(f.eng.rebind(`UPDATE test_fault SET active = ?1`), on); err != nil {
		t.Fatal(err)
	}
}

// ---- Rule 28: bounded concurrency ----

func TestWorkBoundedConcurrency(t *testing.T) { forEnginesInTurn(t, testWorkBoundedConcurrency) }

func testWorkBoundedConcurrency(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	const n, conc = 300, 8
	var jobs []leaseq.Job
	for i := range n {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprint("j", i)})
	}
	if err := q.EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var running, peak atomic.Int64
	done := make(chan string, n)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: conc}, func(ctx context.Context, c leaseq.Claim) error {
		r := running.Add(1)
		for {
			p := peak.Load()
			if r <= p || peak.CompareAndSwap(p, r) {
				break
			}
		}
		defer running.Add(-1)
		done <- c.ID
		return nil
	})
	seen := map[string]bool{}
	for range n {
		seen[waitFor(t, done, "a handler")] = true
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n || peak.Load() > conc {
		t.Fatalf("handled %d distinct jobs of %d, peak concurrency %d (bound %d)", len(seen), n, peak.Load(), conc)
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Done != n {
		t.Fatalf("stats %+v %v; want %d done", st, err, n)
	}
}

// ---- Rule 29: heartbeats, lost leases, deadlines ----

func TestWorkHeartbeatKeepsLongJob(t *testing.T) { forEnginesInTurn(t, testWorkHeartbeatKeepsLongJob) }

func testWorkHeartbeatKeepsLongJob(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	mustEnqueue(t, q, leaseq.Job{ID: "long"})
	// Heartbeats every tenth of the lease: the lease survives a stall of
	// 9/10 of it between two extensions, which a loaded machine running the
	// race detector can cause (no worker can keep a lease through a longer
	// one).
	const lease = 250 * time.Millisecond
	result := make(chan error, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: lease, Heartbeat: lease / 10}, func(ctx context.Context, c leaseq.Claim) error {
		// Work 5× the lease, watching the lease from outside: no other
		// claim may get the job meanwhile.
		end := time.Now().Add(5 * lease)
		for time.Now().Before(end) {
			if _, ok, err := q.Claim(context.Background(), "thief", lease); ok || err != nil {
				result <- fmt.Errorf("another claim got the job (ok=%v err=%v)", ok, err)
				return nil
			}
			select {
			case <-ctx.Done():
				result <- fmt.Errorf("handler context ended: %v", context.Cause(ctx))
				return ctx.Err()
			case <-time.After(lease / 10):
			}
		}
		result <- nil
		return nil
	})
	if err := waitFor(t, result, "the long handler"); err != nil {
		t.Fatal(err)
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	s, err := q.Get(ctx, "long")
	if err != nil || s.Status != leaseq.StatusDone || s.Token != 1 {
		t.Fatalf("row %+v %v; want done with token 1", s, err)
	}
}

func TestWorkCancelReachesHandler(t *testing.T) { forEnginesInTurn(t, testWorkCancelReachesHandler) }

func testWorkCancelReachesHandler(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	mustEnqueue(t, q, leaseq.Job{ID: "c"})
	// The lease is long, so only the refused heartbeat can explain a
	// context that ends within about one heartbeat of the Cancel.
	const heartbeat = 50 * time.Millisecond
	started := make(chan struct{})
	type ending struct {
		cause error
		at    time.Time
	}
	ended := make(chan ending, 1)
	sink, logger := newLogSink()
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: 10 * time.Second, Heartbeat: heartbeat, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			ended <- ending{context.Cause(ctx), time.Now()}
			return nil // a result the fence must refuse
		})
	waitFor(t, started, "the handler to start")
	if err := q.Cancel(ctx, "c", "operator stop"); err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	after := mustGet(t, q, "c")
	got := waitFor(t, ended, "the handler's context to end")
	if !errors.Is(got.cause, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", got.cause)
	}
	if lag := got.at.Sub(cancelled); lag > heartbeat+time.Second {
		t.Fatalf("the handler learned of the Cancel %v after it, want within a heartbeat (%v) and slack", lag, heartbeat)
	}
	// Since rule 56 the Cancel's own wake-up ends the handler, unless its
	// next heartbeat is refused first.
	byCheck, byHeartbeat := record(slog.LevelWarn, "taken from its handler", "c"), record(slog.LevelWarn, "extension refused", "c")
	sink.waitFor(t, "the lost job at Warn, naming the job", func(e logEntry) bool { return byCheck(e) || byHeartbeat(e) })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if s := mustGet(t, q, "c"); !reflect.DeepEqual(s, after) || s.Status != leaseq.StatusQuarantined || s.Reason != "operator stop" {
		t.Fatalf("row %s; want as the Cancel left it, %s: the handler's nil is not recorded", fmtState(s), fmtState(after))
	}
}

func TestWorkContextEndsAtDeadline(t *testing.T) { forEnginesInTurn(t, testWorkContextEndsAtDeadline) }

func testWorkContextEndsAtDeadline(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	// The lease is six times the time to the deadline, and heartbeats run
	// all along: a context tied to the lease alone would end seconds late.
	const heartbeat = 25 * time.Millisecond
	sink, logger := newLogSink()
	type ending struct {
		cause     error
		at        time.Time
		extended  bool // a heartbeat committed while the handler ran
		claimedAt time.Time
	}
	ended := make(chan ending, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: 3 * time.Second, Heartbeat: heartbeat, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			first, _ := q.Get(context.Background(), c.ID)
			<-ctx.Done()
			at := time.Now()
			last, _ := q.Get(context.Background(), c.ID)
			ended <- ending{context.Cause(ctx), at, last.UpdatedAt.After(first.UpdatedAt), first.UpdatedAt}
			return nil // too late: the deadline has passed
		})
	deadline := time.Now().Add(500 * time.Millisecond).Truncate(time.Millisecond)
	mustEnqueue(t, q, leaseq.Job{ID: "d", Deadline: deadline})
	got := waitFor(t, ended, "the handler's context to end")
	if !errors.Is(got.cause, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", got.cause)
	}
	if got.at.Before(deadline) || got.at.After(deadline.Add(time.Second)) {
		t.Fatalf("context ended at deadline%+v, want at or just after the deadline", got.at.Sub(deadline))
	}
	if !got.extended {
		t.Fatalf("no heartbeat committed between the claim at %v and the deadline %v", got.claimedAt, deadline)
	}
	sink.waitFor(t, "the late result refused", record(slog.LevelWarn, "result refused", "d"))
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	// The job could not be finished; the next claim's sweep quarantines it.
	if _, ok, err := q.Claim(ctx, "sweeper", time.Second); ok || err != nil {
		t.Fatalf("Claim after the deadline: %v %v; want nothing", ok, err)
	}
	s := mustGet(t, q, "d")
	if s.Status != leaseq.StatusQuarantined || !strings.Contains(s.Reason, "deadline passed") || s.Token != 1 {
		t.Fatalf("row %s; want quarantined for its deadline after one claim", fmtState(s))
	}
}

func TestWorkLeaseEndsUnextended(t *testing.T) { forEnginesInTurn(t, testWorkLeaseEndsUnextended) }

func testWorkLeaseEndsUnextended(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	fault := newFaultSwitch(t, eng, path)
	sink, logger := newLogSink()
	started := make(chan struct{})
	type ending struct {
		cause error
		at    time.Time
	}
	ended := make(chan ending, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: 400 * time.Millisecond, Heartbeat: 100 * time.Millisecond, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			if c.Attempt > 1 {
				return nil
			}
			close(started)
			<-ctx.Done()
			ended <- ending{context.Cause(ctx), time.Now()}
			return nil
		})
	mustEnqueue(t, q, leaseq.Job{ID: "u"})
	waitFor(t, started, "the handler to start")
	// From now on every extension fails with an error, which is not a
	// refusal: the handler keeps its context until the last lease that
	// committed ends, and not a moment longer.
	fault.set(t, true)
	last := mustGet(t, q, "u").LeaseUntil
	got := waitFor(t, ended, "the handler's context to end")
	if !errors.Is(got.cause, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", got.cause)
	}
	if got.at.Before(last) || got.at.After(last.Add(time.Second)) {
		t.Fatalf("context ended at lease end%+v, want at or just after it", got.at.Sub(last))
	}
	sink.waitFor(t, "the failed extension at Error", record(slog.LevelError, "extending a lease failed", "u"))
	sink.waitFor(t, "the lost lease at Warn", record(slog.LevelWarn, "lease ended", "u"))
	fault.set(t, false)
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
}

// ---- Rule 30: outcomes ----

// jobRun is what became of one job run through Work.
type jobRun struct {
	row      leaseq.State
	log      *logSink
	backoffs []int // the attempts Backoff was asked about
}

// runJob enqueues j, runs Work with h until h has returned calls times,
// then stops Work, which records the last result before it returns.
// Backoff answers backoff.
func runJob(t *testing.T, eng testEngine, j leaseq.Job, calls int, backoff time.Duration, h leaseq.Handler) jobRun {
	t.Helper()
	q := realQueue(t, eng)
	mustEnqueue(t, q, j)
	sink, logger := newLogSink()
	b := &backoffRecorder{delay: backoff}
	returned := make(chan struct{}, calls)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Backoff: b.backoff, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			defer func() {
				select {
				case returned <- struct{}{}:
				default:
				}
			}()
			return h(ctx, c)
		})
	for i := range calls {
		waitFor(t, returned, fmt.Sprintf("the handler's call %d", i+1))
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	return jobRun{row: mustGet(t, q, j.ID), log: sink, backoffs: b.attempts()}
}

func TestWorkOutcomes(t *testing.T) { forEnginesInTurn(t, testWorkOutcomes) }

func testWorkOutcomes(t *testing.T, eng testEngine) {
	const backoff = 90 * time.Minute
	errTransient := errors.New("upstream timeout")
	cases := []struct {
		name    string
		result  error
		status  leaseq.Status
		delay   time.Duration // RunAt - UpdatedAt of a released job
		reason  string
		backoff []int
	}{
		{name: "nil finishes", result: nil, status: leaseq.StatusDone},
		{name: "an error releases after Backoff(attempt)", result: errTransient,
			status: leaseq.StatusPending, delay: backoff, reason: "upstream timeout", backoff: []int{1}},
		{name: "RetryAfter releases after its delay", result: leaseq.RetryAfter(42*time.Second, errors.New("rate limited")),
			status: leaseq.StatusPending, delay: 42 * time.Second, reason: "rate limited"},
		{name: "a wrapped RetryAfter too", result: fmt.Errorf("sending: %w", leaseq.RetryAfter(7*time.Second, errTransient)),
			status: leaseq.StatusPending, delay: 7 * time.Second, reason: "sending: upstream timeout"},
		{name: "Permanent fails", result: leaseq.Permanent(errors.New("no such customer")),
			status: leaseq.StatusQuarantined, reason: "no such customer"},
		{name: "a wrapped Permanent too", result: fmt.Errorf("order 7: %w", leaseq.Permanent(errors.New("no such customer"))),
			status: leaseq.StatusQuarantined, reason: "order 7: no such customer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := runJob(t, eng, leaseq.Job{ID: "o"}, 1, backoff, func(context.Context, leaseq.Claim) error { return tc.result })
			s := run.row
			if s.Status != tc.status || s.Reason != tc.reason || s.Token != 1 || s.Attempts != 1 {
				t.Fatalf("row %s; want %s with reason %q after one claim", fmtState(s), tc.status, tc.reason)
			}
			if tc.status == leaseq.StatusPending && s.RunAt.Sub(s.UpdatedAt) != tc.delay {
				t.Fatalf("released at %v, claimable at %v: delay %v, want %v", s.UpdatedAt, s.RunAt, s.RunAt.Sub(s.UpdatedAt), tc.delay)
			}
			if !reflect.DeepEqual(run.backoffs, tc.backoff) {
				t.Fatalf("Backoff asked about attempts %v, want %v", run.backoffs, tc.backoff)
			}
			if bad := run.log.all(func(e logEntry) bool { return e.level != slog.LevelDebug }); len(bad) > 0 {
				t.Fatalf("records above Debug for an ordinary outcome: %v", bad)
			}
		})
	}
}

func TestWorkAttemptsRunOut(t *testing.T) { forEnginesInTurn(t, testWorkAttemptsRunOut) }

func testWorkAttemptsRunOut(t *testing.T, eng testEngine) {
	// Backoff 0: each failure is claimable again at once, until the third
	// attempt's release finds the attempts used up.
	run := runJob(t, eng, leaseq.Job{ID: "a", MaxAttempts: 3}, 3, 0, func(_ context.Context, c leaseq.Claim) error {
		return fmt.Errorf("failure on attempt %d", c.Attempt)
	})
	s := run.row
	if s.Status != leaseq.StatusQuarantined || s.Attempts != 3 || s.Token != 3 || !strings.Contains(s.Reason, "failure on attempt 3") {
		t.Fatalf("row %s; want quarantined after 3 attempts with the last error as reason", fmtState(s))
	}
	if want := []int{1, 2, 3}; !reflect.DeepEqual(run.backoffs, want) {
		t.Fatalf("Backoff asked about attempts %v, want %v", run.backoffs, want)
	}
}

func TestWorkPanic(t *testing.T) { forEnginesInTurn(t, testWorkPanic) }

func testWorkPanic(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	sink, logger := newLogSink()
	b := &backoffRecorder{delay: time.Hour}
	done := make(chan string, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Backoff: b.backoff, Logger: logger},
		func(_ context.Context, c leaseq.Claim) error {
			if c.ID == "p" {
				panic(fmt.Sprintf("kaboom %d", 42))
			}
			done <- c.ID
			return nil
		})
	mustEnqueue(t, q, leaseq.Job{ID: "p"})
	e := sink.waitFor(t, "the panic at Error", record(slog.LevelError, "panicked", "p"))
	if e.str("panic") != "kaboom 42" || !strings.Contains(e.str("stack"), "work_test.go") {
		t.Fatalf("panic record %v; want the panic value and a stack through the handler", e)
	}
	sink.waitFor(t, "the release", record(slog.LevelDebug, "released", "p"))
	// The pool goes on.
	mustEnqueue(t, q, leaseq.Job{ID: "next"})
	waitFor(t, done, "the next job after the panic")
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	s := mustGet(t, q, "p")
	if s.Status != leaseq.StatusPending || !strings.Contains(s.Reason, "kaboom 42") || s.RunAt.Sub(s.UpdatedAt) != time.Hour {
		t.Fatalf("row %s; want released after Backoff with the panic value as reason", fmtState(s))
	}
	if want := []int{1}; !reflect.DeepEqual(b.attempts(), want) {
		t.Fatalf("Backoff asked about attempts %v, want %v", b.attempts(), want)
	}
	if info := sink.all(atLevel(slog.LevelInfo)); len(info) > 0 {
		t.Fatalf("records at Info: %v", info)
	}
}

func TestWorkRefusedOutcomeNotRetried(t *testing.T) {
	forEnginesInTurn(t, testWorkRefusedOutcomeNotRetried)
}

func testWorkRefusedOutcomeNotRetried(t *testing.T, eng testEngine) {
	results := map[string]error{
		"nil":       nil,
		"error":     errors.New("transient"),
		"Permanent": leaseq.Permanent(errors.New("bad")),
	}
	for name, result := range results {
		t.Run(name, func(t *testing.T) {
			q := realQueue(t, eng)
			ctx := context.Background()
			mustEnqueue(t, q, leaseq.Job{ID: "r"})
			sink, logger := newLogSink()
			started, proceed := make(chan struct{}), make(chan struct{})
			// Heartbeats are far apart, so the handler returns before any
			// heartbeat notices the Cancel: the result meets the fence.
			w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Logger: logger},
				func(context.Context, leaseq.Claim) error {
					close(started)
					<-proceed
					return result
				})
			waitFor(t, started, "the handler to start")
			if err := q.Cancel(ctx, "r", "operator stop"); err != nil {
				t.Fatal(err)
			}
			after := mustGet(t, q, "r")
			close(proceed)
			sink.waitFor(t, "the refusal at Warn", record(slog.LevelWarn, "result refused", "r"))
			if err := w.stop(t); err != nil {
				t.Fatal(err)
			}
			if n := len(sink.all(record(slog.LevelWarn, "result refused", "r"))); n != 1 {
				t.Fatalf("%d refusals logged; a refused result must be offered once:\n%s", n, sink)
			}
			if errs := sink.all(atLevel(slog.LevelError)); len(errs) > 0 {
				t.Fatalf("errors logged for a refusal: %v", errs)
			}
			if s := mustGet(t, q, "r"); !reflect.DeepEqual(s, after) {
				t.Fatalf("row %s; want as the Cancel left it, %s", fmtState(s), fmtState(after))
			}
		})
	}
}

// ---- Rule 31: wake-ups and idling ----

func TestWorkWakesAtOnce(t *testing.T) { forEnginesInTurn(t, testWorkWakesAtOnce) }

func testWorkWakesAtOnce(t *testing.T, eng testEngine) {
	ctx := context.Background()
	cases := []struct {
		name string
		// prepare runs before Work starts; it returns the call that makes
		// a job claimable.
		prepare func(t *testing.T, q *leaseq.Queue) func() error
	}{
		{"Enqueue", func(t *testing.T, q *leaseq.Queue) func() error {
			return func() error { return q.Enqueue(ctx, leaseq.Job{ID: "x"}) }
		}},
		{"EnqueueBatch", func(t *testing.T, q *leaseq.Queue) func() error {
			return func() error { return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "x"}, {ID: "y"}}) }
		}},
		{"Release", func(t *testing.T, q *leaseq.Queue) func() error {
			mustEnqueue(t, q, leaseq.Job{ID: "x"})
			// Held by another worker for an hour: nothing due that Work
			// could sleep until.
			c, ok, err := q.Claim(ctx, "other", time.Hour)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			return func() error {
				if ok, err := q.Release(ctx, c, 0, "give back"); !ok || err != nil {
					return fmt.Errorf("release: %v %v", ok, err)
				}
				return nil
			}
		}},
		{"Requeue", func(t *testing.T, q *leaseq.Queue) func() error {
			mustEnqueue(t, q, leaseq.Job{ID: "x"})
			c, ok, err := q.Claim(ctx, "other", time.Hour)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if ok, err := q.Fail(ctx, c, "broken"); !ok || err != nil {
				t.Fatal(ok, err)
			}
			return func() error { return q.Requeue(ctx, "x") }
		}},
		{"Enqueue on another Queue of the same *sql.DB", func(t *testing.T, q *leaseq.Queue) func() error {
			q2, err := leaseq.New(ctx, q.DB(), leaseq.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { q2.Close() })
			return func() error { return q2.Enqueue(ctx, leaseq.Job{ID: "x"}) }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := realQueue(t, eng)
			wake := tc.prepare(t, q)
			started := make(chan time.Time, 2)
			// An hour between looks: only a wake-up can explain a prompt start.
			runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour},
				func(context.Context, leaseq.Claim) error {
					started <- time.Now()
					return nil
				})
			waitParked(t)
			before := time.Now()
			if err := wake(); err != nil {
				t.Fatal(err)
			}
			at := waitWithin(t, started, 5*time.Second, "a handler to start after the wake-up")
			if at.Before(before) {
				t.Fatalf("a handler started at %v, before the job was made claimable at %v", at, before)
			}
			t.Logf("woke %v after the call began", at.Sub(before))
		})
	}
}

func TestWorkFindsOtherProcessJobs(t *testing.T) { forEnginesInTurn(t, testWorkFindsOtherProcessJobs) }

func testWorkFindsOtherProcessJobs(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	other := openQueue(t, eng, path) // its own *sql.DB: no wake-up reaches q's pool
	const poll = 100 * time.Millisecond
	started := make(chan time.Time, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: poll}, func(context.Context, leaseq.Claim) error {
		started <- time.Now()
		return nil
	})
	waitParked(t)
	before := time.Now()
	if err := other.Enqueue(context.Background(), leaseq.Job{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	at := waitWithin(t, started, 10*time.Second, "the other process's job to start")
	lag := at.Sub(before)
	if lag < 0 || lag > poll+time.Second {
		t.Fatalf("started %v after the other process's Enqueue began, want within PollInterval %v and slack", lag, poll)
	}
	t.Logf("found %v after the Enqueue began", lag)
}

func TestWorkDelayedJobStartsWhenDue(t *testing.T) {
	forEnginesInTurn(t, testWorkDelayedJobStartsWhenDue)
}

func testWorkDelayedJobStartsWhenDue(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	started := make(chan time.Time, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour}, func(context.Context, leaseq.Claim) error {
		started <- time.Now()
		return nil
	})
	runAt := time.Now().Add(200 * time.Millisecond).Truncate(time.Millisecond)
	mustEnqueue(t, q, leaseq.Job{ID: "later", RunAt: runAt})
	at := waitWithin(t, started, 10*time.Second, "the delayed job to start")
	if at.Before(runAt) || at.After(runAt.Add(time.Second)) {
		t.Fatalf("started at RunAt%+v, want at or just after RunAt", at.Sub(runAt))
	}
}

func TestWorkTakesOverEndedLease(t *testing.T) { forEnginesInTurn(t, testWorkTakesOverEndedLease) }

func testWorkTakesOverEndedLease(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "x"})
	crashed, ok, err := q.Claim(context.Background(), "crashed", 300*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	type start struct {
		at    time.Time
		token int64
	}
	started := make(chan start, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour}, func(_ context.Context, c leaseq.Claim) error {
		started <- start{time.Now(), c.Token}
		return nil
	})
	got := waitWithin(t, started, 10*time.Second, "the ended lease to be taken over")
	if got.at.Before(crashed.LeaseUntil) || got.at.After(crashed.LeaseUntil.Add(time.Second)) || got.token != 2 {
		t.Fatalf("took over at lease end%+v with token %d, want at or just after it with token 2",
			got.at.Sub(crashed.LeaseUntil), got.token)
	}
}

func TestWorkIdleTakesNoWriteLock(t *testing.T) {
	path := sqliteEngine.fresh(t)
	q := openQueue(t, sqliteEngine, path)
	sink, logger := newLogSink()
	done := make(chan string, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 16, PollInterval: 10 * time.Millisecond, Logger: logger},
		func(_ context.Context, c leaseq.Claim) error {
			done <- c.ID
			return nil
		})
	waitParked(t)

	// Another process's connection, with no busy timeout: its BEGIN
	// IMMEDIATE fails at once if the pool holds the write lock at that
	// instant. It tries without pause for 50 of the pool's looks.
	other, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		t.Fatal(err)
	}
	tries := 0
	for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end); tries++ {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatalf("try %d: the idle pool held the write lock: %v", tries, err)
		}
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}

	// Now the other process holds the write lock for 30 looks. A pool that
	// needed it to look would be stuck waiting in a claim; this one keeps
	// going back to sleep.
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the stimulus: a lock held across many looks
	waitUntil(t, time.Second, "the pool to sleep while another process holds the write lock", poolsParked)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if !w.running() {
		t.Fatalf("Work returned: %v", w.err)
	}
	if bad := sink.all(func(e logEntry) bool { return e.level > slog.LevelDebug }); len(bad) > 0 {
		t.Fatalf("records while idle: %v", bad)
	}
	mustEnqueue(t, q, leaseq.Job{ID: "after"})
	waitWithin(t, done, 5*time.Second, "a job enqueued after the lock was released")
	t.Logf("%d BEGIN IMMEDIATE by another connection while the pool idled, none refused", tries)
}

func TestWorkIdleCPU(t *testing.T) { forEnginesInTurn(t, testWorkIdleCPU) }

func testWorkIdleCPU(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 16, PollInterval: 10 * time.Millisecond},
		func(context.Context, leaseq.Claim) error { return nil })
	waitParked(t)
	used := cpuOver(t, time.Second)
	if used > idleCPUBound {
		t.Fatalf("an idle pool of 16 polling every 10ms used %v of CPU in 1s, want under %v", used, idleCPUBound)
	}
	if !w.running() {
		t.Fatalf("Work returned: %v", w.err)
	}
	t.Logf("idle pool of 16, PollInterval 10ms: %v CPU in 1s", used)
}

// ---- Rule 32: shutdown ----

func TestWorkShutdownDrains(t *testing.T) { forEnginesInTurn(t, testWorkShutdownDrains) }

func testWorkShutdownDrains(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "running"}, leaseq.Job{ID: "waiting"})
	started, proceed := make(chan struct{}), make(chan struct{})
	ctxAlive := make(chan error, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 1, DrainTimeout: time.Minute},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-proceed
			ctxAlive <- context.Cause(ctx)
			return nil
		})
	waitFor(t, started, "the handler to start")
	w.cancel()
	waitUntil(t, 10*time.Second, "Work to drain", poolDraining)
	close(proceed)
	if err := w.wait(t, 10*time.Second, "Work to return once its handler did"); err != nil {
		t.Fatalf("Work: %v, want nil after a clean shutdown", err)
	}
	if cause := <-ctxAlive; cause != nil {
		t.Fatalf("the handler's context ended (%v) within the drain time", cause)
	}
	if s := mustGet(t, q, "running"); s.Status != leaseq.StatusDone {
		t.Fatalf("drained job %s; want done by the time Work returned", fmtState(s))
	}
	if s := mustGet(t, q, "waiting"); s.Status != leaseq.StatusPending || s.Token != 0 {
		t.Fatalf("job %s; want never claimed once the shutdown began", fmtState(s))
	}
}

func TestWorkShutdownReleases(t *testing.T) { forEnginesInTurn(t, testWorkShutdownReleases) }

func testWorkShutdownReleases(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	ctx := context.Background()
	mustEnqueue(t, q, leaseq.Job{ID: "s"})
	const drain = 100 * time.Millisecond
	started := make(chan struct{})
	type ending struct {
		cause error
		at    time.Time
	}
	ended := make(chan ending, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", DrainTimeout: drain}, func(ctx context.Context, c leaseq.Claim) error {
		close(started)
		<-ctx.Done()
		ended <- ending{context.Cause(ctx), time.Now()}
		return ctx.Err()
	})
	waitFor(t, started, "the handler to start")
	stopped := time.Now()
	if err := w.stop(t); err != nil {
		t.Fatalf("Work: %v, want nil after a clean shutdown", err)
	}
	got := <-ended
	if !errors.Is(got.cause, leaseq.ErrShutdown) {
		t.Fatalf("cause %v, want ErrShutdown", got.cause)
	}
	if got.at.Sub(stopped) < drain {
		t.Fatalf("the handler was stopped %v after the shutdown began, before the drain time %v", got.at.Sub(stopped), drain)
	}
	if s := mustGet(t, q, "s"); s.Status != leaseq.StatusPending || !s.RunAt.Equal(s.UpdatedAt) || !strings.HasPrefix(s.Reason, "worker shut down") {
		t.Fatalf("row %s; want released with no delay, saying why", fmtState(s))
	}
	c, ok, err := q.Claim(ctx, "next", time.Second)
	if err != nil || !ok || c.ID != "s" || c.Token != 2 {
		t.Fatalf("Claim right after Work returned: %+v %v %v; want s with token 2", c, ok, err)
	}
}

// TestWorkShutdownLeavesNoLease stops busy pools at random instants: a
// claim that commits just as the context ends must still be run, never left
// leased to a pool that is gone. The window is a claim's commit, so the
// stop comes at a random instant of the busy period rather than on an
// event of the handlers, which would fall between claims.
func TestWorkShutdownLeavesNoLease(t *testing.T) { forEnginesInTurn(t, testWorkShutdownLeavesNoLease) }

func testWorkShutdownLeavesNoLease(t *testing.T, eng testEngine) {
	ctx := context.Background()
	for round := range 10 {
		q := realQueue(t, eng)
		var jobs []leaseq.Job
		for i := range 300 {
			jobs = append(jobs, leaseq.Job{ID: fmt.Sprint("j", i)})
		}
		if err := q.EnqueueBatch(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		var handled atomic.Int64
		started := make(chan struct{}, 1)
		w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, DrainTimeout: 10 * time.Second},
			func(context.Context, leaseq.Claim) error {
				handled.Add(1)
				select {
				case started <- struct{}{}:
				default:
				}
				return nil
			})
		waitFor(t, started, "the pool to get going")
		time.Sleep(rand.N(50 * time.Millisecond)) // the random instant, not a wait for an event
		if err := w.stop(t); err != nil {
			t.Fatal(err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leased+st.Expired != 0 || st.Done != int(handled.Load()) {
			t.Errorf("round %d: after Work returned: %+v, %d handled; want no job leased, every handled job done",
				round, st, handled.Load())
		}
	}
}

func TestWorkCancelledContext(t *testing.T) { forEnginesInTurn(t, testWorkCancelledContext) }

func testWorkCancelledContext(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "x"})
	before := mustGet(t, q, "x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := q.Work(ctx, leaseq.WorkerOptions{Owner: "w"}, func(context.Context, leaseq.Claim) error {
		called = true
		return nil
	})
	if err != nil || called {
		t.Fatalf("Work on a done context: %v, handler called %v; want nil and no call", err, called)
	}
	if s := mustGet(t, q, "x"); !reflect.DeepEqual(s, before) {
		t.Fatalf("row %s; want untouched %s", fmtState(s), fmtState(before))
	}
}

// ---- Rule 33: faults ----

func TestWorkClaimFault(t *testing.T) { forEnginesInTurn(t, testWorkClaimFault) }

func testWorkClaimFault(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	fault := newFaultSwitch(t, eng, path)
	sink, logger := newLogSink()
	done := make(chan string, 2)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 16, PollInterval: 100 * time.Millisecond, Logger: logger},
		func(_ context.Context, c leaseq.Claim) error {
			done <- c.ID
			return nil
		})
	mustEnqueue(t, q, leaseq.Job{ID: "before"})
	waitFor(t, done, "the job before the fault")
	// Its Finish must be in before the fault: a call that shares a
	// transaction with a failing one fails with it.
	sink.waitFor(t, "the job before the fault to be finished", record(slog.LevelDebug, "finished", "before"))

	fault.set(t, true)
	// Every claim of this job now fails. It comes from another process:
	// an Enqueue of this one could share a transaction with a failing
	// claim and fail with it.
	mustEnqueue(t, openQueue(t, eng, path), leaseq.Job{ID: "during"})
	sink.waitFor(t, "the failed claim at Error", record(slog.LevelError, "claiming failed", ""))
	used := cpuOver(t, time.Second)
	failures := sink.all(record(slog.LevelError, "claiming failed", ""))
	if used > idleCPUBound {
		t.Fatalf("a pool whose claims fail used %v of CPU in 1s, want under %v", used, idleCPUBound)
	}
	// Backing off from 10ms, doubling: a handful of tries in the first
	// second, not thousands, and each wait longer than the one before last.
	if len(failures) > 30 {
		t.Fatalf("%d failed claims logged in about a second; want a backoff, not a spin", len(failures))
	}
	var waits []time.Duration
	for _, e := range failures {
		waits = append(waits, e.attrs["retry_in"].Duration())
		if !strings.Contains(e.str("error"), "injected fault") {
			t.Fatalf("failure record %v; want the database's error", e)
		}
	}
	for i := 2; i < len(waits); i++ {
		if waits[i] < waits[i-2] {
			t.Fatalf("retry waits %v; want each at least the one before last", waits)
		}
	}
	if len(sink.all(func(e logEntry) bool { return e.level == slog.LevelDebug && e.str("job") == "during" })) > 0 {
		t.Fatal("the job was handled while every claim failed")
	}
	if !w.running() {
		t.Fatalf("Work returned during the fault: %v", w.err)
	}
	t.Logf("faulted for ~1s: %d failed claims, retry waits %v, %v CPU", len(failures), waits, used)

	fault.set(t, false)
	if id := waitFor(t, done, "the job after the fault cleared"); id != "during" {
		t.Fatalf("handled %q, want during", id)
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if s := mustGet(t, q, "during"); s.Status != leaseq.StatusDone || s.Token != 1 {
		t.Fatalf("row %s; want done by its first claim (failed claims issue no token)", fmtState(s))
	}
}

func TestWorkRecordFault(t *testing.T) { forEnginesInTurn(t, testWorkRecordFault) }

func testWorkRecordFault(t *testing.T, eng testEngine) {
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	fault := newFaultSwitch(t, eng, path)
	sink, logger := newLogSink()
	started, proceed := make(chan struct{}), make(chan struct{})
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Minute, Logger: logger},
		func(context.Context, leaseq.Claim) error {
			close(started)
			<-proceed
			return nil
		})
	mustEnqueue(t, q, leaseq.Job{ID: "f"})
	waitFor(t, started, "the handler to start")
	fault.set(t, true)
	close(proceed)
	// The Finish fails while the claim could still win: it is retried.
	sink.waitFor(t, "the failed Finish at Error", record(slog.LevelError, "recording a result failed; retrying", "f"))
	fault.set(t, false)
	sink.waitFor(t, "the Finish after the fault cleared", record(slog.LevelDebug, "finished", "f"))
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if s := mustGet(t, q, "f"); s.Status != leaseq.StatusDone || s.Token != 1 {
		t.Fatalf("row %s; want done by its one claim", fmtState(s))
	}
}

func TestWorkInvalidOptions(t *testing.T) { forEnginesInTurn(t, testWorkInvalidOptions) }

func testWorkInvalidOptions(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	h := func(context.Context, leaseq.Claim) error { return nil }
	cases := map[string]leaseq.WorkerOptions{
		"empty Owner":                {},
		"negative Concurrency":       {Owner: "w", Concurrency: -1},
		"negative Lease":             {Owner: "w", Lease: -time.Second},
		"Lease under 1ms":            {Owner: "w", Lease: time.Microsecond},
		"negative Heartbeat":         {Owner: "w", Heartbeat: -time.Second},
		"negative PollInterval":      {Owner: "w", PollInterval: -time.Second},
		"negative DrainTimeout":      {Owner: "w", DrainTimeout: -time.Second},
		"Heartbeat equal to Lease":   {Owner: "w", Lease: time.Second, Heartbeat: time.Second},
		"Heartbeat over Lease":       {Owner: "w", Lease: time.Second, Heartbeat: 2 * time.Second},
		"Heartbeat over the default": {Owner: "w", Heartbeat: leaseq.WorkLeaseDefault},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			wantInvalidAtOnce(t, func(ctx context.Context) error { return q.Work(ctx, opts, h) })
		})
	}
	t.Run("nil handler", func(t *testing.T) {
		wantInvalidAtOnce(t, func(ctx context.Context) error { return q.Work(ctx, leaseq.WorkerOptions{Owner: "w"}, nil) })
	})
}

// wantInvalidAtOnce runs work, which must return ErrInvalid without
// waiting for its context.
func wantInvalidAtOnce(t *testing.T, work func(context.Context) error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- work(context.Background()) }()
	if err := waitWithin(t, errc, 5*time.Second, "Work to refuse its options"); !errors.Is(err, leaseq.ErrInvalid) {
		t.Fatalf("Work: %v, want ErrInvalid", err)
	}
}

func TestWorkQueueClosedUnderIt(t *testing.T) { forEnginesInTurn(t, testWorkQueueClosedUnderIt) }

func testWorkQueueClosedUnderIt(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "x"})
	started := make(chan struct{})
	cause := make(chan error, 1)
	sink, logger := newLogSink()
	// An hour between looks: the Close must be noticed at once, not at the
	// next look.
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour, Concurrency: 2, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		})
	waitFor(t, started, "the handler to start")
	loopAsleep := func() bool { // the loop asleep while the handler runs
		states, tops := goroutineTops()
		for i, top := range tops {
			if top == poolFrame+"await" && strings.HasPrefix(states[i], "select") {
				return true
			}
		}
		return false
	}
	waitUntil(t, 10*time.Second, "the pool loop to sleep", loopAsleep)
	q.Close()
	if got := waitWithin(t, cause, 5*time.Second, "the handler's context to end"); !errors.Is(got, leaseq.ErrClosed) {
		t.Fatalf("cause %v, want ErrClosed", got)
	}
	if err := w.wait(t, 5*time.Second, "Work to return after Close"); !errors.Is(err, leaseq.ErrClosed) {
		t.Fatalf("Work: %v, want ErrClosed", err)
	}
	// The handler's result cannot be recorded on a closed queue; that is
	// said once, not retried.
	if n := len(sink.all(record(slog.LevelError, "recording a result failed", "x"))); n != 1 {
		t.Fatalf("%d records of the unrecordable result, want 1:\n%s", n, sink)
	}
}

func TestWorkOnClosedQueue(t *testing.T) { forEnginesInTurn(t, testWorkOnClosedQueue) }

func testWorkOnClosedQueue(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	q.Close()
	errc := make(chan error, 1)
	go func() {
		errc <- q.Work(context.Background(), leaseq.WorkerOptions{Owner: "w"}, func(context.Context, leaseq.Claim) error { return nil })
	}()
	if err := waitWithin(t, errc, 5*time.Second, "Work on a closed queue"); !errors.Is(err, leaseq.ErrClosed) {
		t.Fatalf("Work: %v, want ErrClosed", err)
	}
}

func TestWorkDBClosed(t *testing.T) { forEnginesInTurn(t, testWorkDBClosed) }

func testWorkDBClosed(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	const poll = 100 * time.Millisecond
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: poll}, func(context.Context, leaseq.Claim) error { return nil })
	waitParked(t)
	closed := time.Now()
	if err := q.DB().Close(); err != nil {
		t.Fatal(err)
	}
	err := w.wait(t, poll+5*time.Second, "Work to return after db.Close")
	if err == nil {
		t.Fatal("Work returned nil after db.Close; want the database's error")
	}
	if lag := time.Since(closed); lag > poll+2*time.Second {
		t.Fatalf("Work returned %v after db.Close, want within PollInterval %v and slack", lag, poll)
	}
	t.Logf("Work: %v", err)
}

// TestWorkDBClosedBusy: a *sql.DB closed under a pool whose every slot is
// busy, which claims nothing and whose heartbeats are an hour apart, still
// ends the pool within PollInterval (rule 33): the handlers' contexts end
// with the database's error and Work returns it, not once their leases end.
func TestWorkDBClosedBusy(t *testing.T) { forEnginesInTurn(t, testWorkDBClosedBusy) }

func testWorkDBClosedBusy(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "x"})
	const poll = 100 * time.Millisecond
	started := make(chan struct{})
	cause := make(chan error, 1)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: poll, Lease: 3 * time.Hour},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		})
	waitFor(t, started, "the handler to start")
	if err := q.DB().Close(); err != nil {
		t.Fatal(err)
	}
	got := waitWithin(t, cause, poll+10*time.Second, "the handler's context to end after db.Close")
	if got == nil || errors.Is(got, leaseq.ErrShutdown) || errors.Is(got, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want the closed database's error", got)
	}
	if err := w.wait(t, 10*time.Second, "Work to return after db.Close"); err == nil || err.Error() != "leaseq: work as \"w\": "+got.Error() {
		t.Fatalf("Work: %v, want the closed database's error %v", err, got)
	}
}

// ---- Rule 34: logs ----

func TestWorkLogs(t *testing.T) { forEnginesInTurn(t, testWorkLogs) }

func testWorkLogs(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	sink, logger := newLogSink()
	const n = 10
	var jobs []leaseq.Job
	for i := range n {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprint("log-", i)})
	}
	if err := q.EnqueueBatch(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{}, n)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "logger", Concurrency: 4, Logger: logger},
		func(_ context.Context, c leaseq.Claim) error {
			defer func() { returned <- struct{}{} }()
			if strings.HasSuffix(c.ID, "1") || strings.HasSuffix(c.ID, "3") {
				return leaseq.RetryAfter(time.Hour, errors.New("later"))
			}
			return nil
		})
	for range n {
		waitFor(t, returned, "a handler")
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if bad := sink.all(func(e logEntry) bool { return e.level != slog.LevelDebug }); len(bad) > 0 {
		t.Fatalf("records above Debug in a clean run (nothing at Info per job): %v", bad)
	}
	for _, j := range jobs {
		recs := sink.all(func(e logEntry) bool { return e.str("job") == j.ID })
		if len(recs) != 1 {
			t.Fatalf("job %s: %d records, want its one outcome:\n%s", j.ID, len(recs), sink)
		}
		e := recs[0]
		want := "finished"
		if strings.HasSuffix(j.ID, "1") || strings.HasSuffix(j.ID, "3") {
			want = "released"
			if e.str("error") != "later" {
				t.Fatalf("record %v; want the handler's error", e)
			}
		}
		if e.str("queue") != "default" || e.str("owner") != "logger" || e.attrs["token"].Int64() != 1 ||
			e.attrs["attempt"].Int64() != 1 || e.str("outcome") != want || e.attrs["duration"].Kind() != slog.KindDuration {
			t.Fatalf("record %v; want job, queue, owner, token 1, attempt 1, outcome %q, duration", e, want)
		}
	}
}
