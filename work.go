package leaseq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Handler does the work of one claimed job. Its context ends, with
// context.Cause ErrLeaseLost, the moment the queue stops considering it the
// job's holder, and with ErrShutdown when Work is shutting down and its
// drain time is over. Its result decides the job's fate: nil finishes it;
// an error releases it for another attempt after WorkerOptions.Backoff,
// RetryAfter(d, err) after d, Snooze(d) puts it off for d without spending
// an attempt, and Permanent(err) fails it. Receivers of
// what a handler sends must be idempotent by job ID: a handler that lost
// its lease may already have sent, and another will send again.
type Handler func(ctx context.Context, c Claim) error

// WorkerOptions configures Work. The zero value of each field but Owner
// means its default.
type WorkerOptions struct {
	// Owner names the worker in every claim, for logs and Get. Required.
	Owner string
	// Concurrency is how many handlers run at once at most; 0 means 1. At
	// most MaxCount.
	Concurrency int
	// Lease is the lease each claim and each extension asks for; 0 means
	// 30s. A longer lease costs a longer wait before a dead worker's jobs
	// are claimed again; heartbeats keep a live worker's lease whatever its
	// length.
	Lease time.Duration
	// Heartbeat is how often the running handlers' leases are extended,
	// all of them in one write (rule 48); 0 means Lease/3. It must be
	// shorter than Lease: each extension must commit before the lease it
	// extends ends.
	Heartbeat time.Duration
	// Backoff is the delay before the next attempt of a job whose handler
	// failed on its attempt-th claim; nil means DefaultBackoff. A negative
	// delay counts as 0.
	Backoff func(attempt int) time.Duration
	// PollInterval bounds how long an idle worker waits before it looks
	// for jobs that another process enqueued when nothing woke it; 0 means
	// 1s. Jobs enqueued or released through a Queue of this process wake it
	// at once, as do other processes' writes on SQLite (the file is
	// watched) and on PostgreSQL with Options.Listener (rule 56); it also
	// wakes when a delayed job it knows of becomes due.
	PollInterval time.Duration
	// DrainTimeout is how long running handlers may go on after Work's
	// context ends before their contexts end with ErrShutdown; 0 means 10s.
	//
	// Each of Lease, Heartbeat, PollInterval and DrainTimeout is 0 for its
	// default or at least 1ms, the resolution of the queue's clock; a
	// shorter positive one (which would make an idle pool spin) is
	// ErrInvalid naming the field. The default Heartbeat is at least 1ms
	// too, so Work refuses a Lease under 2ms: no heartbeat could renew it.
	DrainTimeout time.Duration
	// Logger gets the worker's records; nil means slog.Default(). Per job
	// it logs at Debug; lost leases at Warn; panics and database faults at
	// Error.
	Logger *slog.Logger
	// Middleware wraps the handler, the first the outermost (rule 51): each
	// gets the Handler it wraps and returns one that calls it, as a trace
	// span or a panic policy around every run. A nil one, or one that
	// returns nil, is ErrInvalid.
	Middleware []func(Handler) Handler
	// OnOutcome, if not nil, is called once per handler run, after the
	// queue decided what became of its result (see Outcome), on the
	// goroutine that recorded it, after the handler's slot was freed.
	// Calls of several runs may overlap. A panic in it is logged. It
	// should return soon: while as many runs as Concurrency wait for it
	// (and for AfterOutcome's functions) beside the running handlers, the
	// pool claims nothing more, and once Work's context ended and the
	// handlers' results are recorded, Work waits for the calls at most
	// DrainTimeout, then returns without them and logs an Error.
	OnOutcome func(Outcome)
	// Periodic lists the jobs the pool enqueues on a schedule, one per slot
	// across every pool that lists them (see Periodic; rule 53).
	Periodic []Periodic
	// Retention is how long the pool keeps done and quarantined jobs
	// before it purges them: by default done jobs 24 hours, quarantined
	// ones 7 days; Retention{Off: true} keeps everything (rule 55).
	Retention Retention
}

// Defaults of WorkerOptions.
const (
	WorkLeaseDefault        = 30 * time.Second
	WorkPollIntervalDefault = time.Second
	WorkDrainTimeoutDefault = 10 * time.Second
)

// workerOptionsProblem validates opts as given.
func workerOptionsProblem(opts WorkerOptions) string {
	if why := nameProblem("Owner", opts.Owner); why != "" {
		return why
	}
	switch {
	case opts.Concurrency < 0:
		return fmt.Sprintf("Concurrency %d is negative", opts.Concurrency)
	case opts.Concurrency > MaxCount:
		return countProblem("Concurrency", opts.Concurrency)
	}
	for _, d := range []struct {
		what string
		d    time.Duration
	}{{"Lease", opts.Lease}, {"Heartbeat", opts.Heartbeat}, {"PollInterval", opts.PollInterval}, {"DrainTimeout", opts.DrainTimeout}} {
		if why := intervalProblem(d.what, d.d); why != "" {
			return why
		}
	}
	lease := cmp.Or(opts.Lease, WorkLeaseDefault).Truncate(time.Millisecond) // as the claims count it
	switch hb := heartbeat(opts.Heartbeat, lease); {
	case hb < lease:
		return ""
	case opts.Heartbeat == 0:
		return fmt.Sprintf("Lease %v leaves no room for a heartbeat of at least 1ms before it ends; use at least 2ms", lease)
	default:
		return fmt.Sprintf("Heartbeat %v is not shorter than the lease %v", hb, lease)
	}
}

// heartbeat is the interval of a pool's extensions: hb, or by default a
// third of the lease, at least the 1ms floor of every interval.
func heartbeat(hb, lease time.Duration) time.Duration {
	return cmp.Or(hb, max(lease/3, time.Millisecond))
}

// withDefaults fills the zero fields of valid opts.
func (opts WorkerOptions) withDefaults() WorkerOptions {
	opts.Concurrency = cmp.Or(opts.Concurrency, 1)
	opts.Lease = cmp.Or(opts.Lease, WorkLeaseDefault)
	opts.Heartbeat = heartbeat(opts.Heartbeat, opts.Lease)
	opts.PollInterval = cmp.Or(opts.PollInterval, WorkPollIntervalDefault)
	opts.DrainTimeout = cmp.Or(opts.DrainTimeout, WorkDrainTimeoutDefault)
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts
}

// Work runs a pool of handlers on the queue until ctx ends: it claims jobs
// into free handler slots, runs h on each with the lease kept alive by
// heartbeats, and records each handler's result. It writes in batches
// (rule 48 in docs/rules.md): the results of the handlers that returned
// since its last write and the claim that refills their slots in one
// transaction (SQLite) or statement (PostgreSQL), and all its running
// leases' extensions in one write per Heartbeat.
//
// When ctx ends Work stops claiming; running handlers keep their contexts
// for up to DrainTimeout, then those end with ErrShutdown; once every
// handler has returned and its result is recorded, Work returns nil.
// Invalid options are ErrInvalid at once. A Queue closed under it (noticed
// at once) gives ErrClosed, a closed *sql.DB (noticed within PollInterval,
// whether the pool is idle or every slot is busy) its error; then the handlers' contexts end at once
// with that error as the cause, and Work returns when they have returned.
// Any other database fault is logged and retried with backoff; it does not
// stop the pool. If ctx is done already, Work claims nothing and returns
// nil.
func (q *Queue) Work(ctx context.Context, opts WorkerOptions, h Handler) error {
	if err := q.callable(ctx); err != nil {
		return opError("work", as(opts.Owner), err)
	}
	why := workerOptionsProblem(opts)
	if why == "" && h == nil {
		why = "handler is nil"
	}
	if why == "" {
		why = cmp.Or(retentionProblem(opts.Retention), q.periodicProblem(opts.Periodic, q.now()))
	}
	if why == "" && q.ReadOnly() {
		why = "the queue was opened read-only (Options.ReadOnly)"
	}
	if why == "" {
		h, why = withMiddleware(h, opts.Middleware)
	}
	if err := problem(why); err != nil {
		return opError("work", as(opts.Owner), err)
	}
	if ctx.Err() != nil {
		return nil
	}
	p := newPool(ctx, q, opts.withDefaults(), h)
	defer p.release()
	defer p.stop(nil)
	defer q.watchStart()()         // rule 56: other processes' changes wake the pool
	defer p.watchLeases()()        // and end the handlers of jobs taken from them
	stopTimed := p.startTimed(ctx) // periodic jobs and retention: work_periodic.go
	err := p.run(ctx)
	stopTimed()
	p.records.Wait()
	p.awaitReports()
	if err != nil {
		return opError("work", as(opts.Owner), err)
	}
	return nil
}

// pool is one running Work call. One loop, run's, does all its writing
// (rule 48 in docs/rules.md): it collects the results of the handlers that
// returned and records them, with the claim that refills their slots, in
// one engine step (a cycle: work_cycle.go); every Heartbeat it extends
// every running lease with one ExtendBatch, and it keeps the lease ends in
// one timer structure (work_lease.go). At most one cycle and one heartbeat
// are in flight, each on a goroutine of its own, so that the loop ends a
// handler whose lease ended on time even while a write waits. Handlers run
// as goroutines; nothing else per job has one.
type pool struct {
	q    *Queue
	opts WorkerOptions
	h    Handler
	log  *slog.Logger
	// bg carries ctx's values, never its cancellation: the writes of
	// results and the heartbeats run on it, each bounded by its leases, so
	// a shutdown does not interrupt them.
	bg context.Context
	// claims is bg until DrainTimeout after Work's ctx ended: a cycle that
	// only claims runs on it, so that a claim that commits as ctx ends is
	// still run, and Work returns within its drain time also when the
	// database does not answer (rule 24).
	claims context.Context
	// release ends what newPool set up for claims.
	release func()
	// handlers is the parent of every handler's context; stop ends it with
	// ErrShutdown when the drain time is over.
	handlers context.Context
	stop     context.CancelCauseFunc
	records  sync.WaitGroup // the handlers' goroutines, until told what became of their results
	// reports are the runs whose AfterOutcome and OnOutcome calls have not
	// returned (work_outcome.go): a hook that blocks holds the pool back,
	// and Work waits for them at most DrainTimeout.
	reports   sync.WaitGroup
	reporting atomic.Int64
	heldBack  atomic.Bool   // free was bound by reporting: a report that ends wakes the loop
	reported  chan struct{} // that wake-up
	held      heldLeases    // the running claims (work_listen.go)
	// returns gets each handler's result as it returns; txIn each FinishTx
	// of a claim the pool runs (work_tx.go). gone is closed when the loop
	// ended.
	returns chan returned
	txIn    chan *txCall
	gone    chan struct{}
	// sem holds a token for each handler running: at most Concurrency,
	// also while the job claimed for the slot of a handler that settled
	// its own with FinishTx waits for that handler to return.
	sem chan struct{}

	// The loop's own state, touched by run's goroutine only.
	running  map[*slot]struct{} // handlers started and not yet returned
	ends     leaseEnds          // their lease ends, earliest first
	pending  []returned         // results not yet in a cycle
	txs      []*txCall          // FinishTx calls not yet in a cycle
	nSettled int                // running slots whose FinishTx a cycle accepted
	cycling  bool               // a cycle is in flight
	beating  bool               // a heartbeat is in flight
	settling int                // results being settled alone (Cycle.Alone)
}

// slot is one running claim of the pool, in a handler slot.
type slot struct {
	c     Claim // as last extended; the loop's
	lost  context.CancelCauseFunc
	hold  *hold // FinishTx's view of the claim (work_tx.go)
	r     *run
	began time.Time
	idx   int // in the pool's leaseEnds; -1 once out of it: returned, its lease lost, or settled
	// settled: a cycle accepted the handler's FinishTx; its slot is free
	// for the next claim. The loop's.
	settled bool
	// ahead: an extension of the lease, ahead of a FinishTx, is in flight
	// in a cycle (pool.aheadOf). The loop's.
	ahead bool
	// renewedTo: the lease end, in Unix ms, that extension committed (0:
	// none yet), set by the cycle as soon as it committed: a lease end the
	// loop meets before the cycle's answer moves to it.
	renewedTo atomic.Int64
	// told gets what became of the handler's result, once.
	told chan told
}

// returned is a handler's result as the loop gets it.
type returned struct {
	j     *slot
	err   error // the handler's
	cause error // its context's cause when it returned
	w     resultWrite
}

// told is what the loop tells a handler's goroutine: the result of its
// run and the claim as last extended.
type told struct {
	c      Claim
	result string
}

func newPool(ctx context.Context, q *Queue, opts WorkerOptions, h Handler) *pool {
	bg := context.WithoutCancel(ctx)
	handlers, stop := context.WithCancelCause(bg)
	claims, cut := context.WithCancel(bg)
	unhook := context.AfterFunc(ctx, func() { time.AfterFunc(opts.DrainTimeout, cut) })
	return &pool{q: q, opts: opts, h: h, log: opts.Logger, bg: bg, claims: claims, handlers: handlers, stop: stop,
		release: func() { unhook(); cut() },
		returns: make(chan returned, min(opts.Concurrency, 256)), txIn: make(chan *txCall, min(opts.Concurrency, 256)),
		gone: make(chan struct{}), reported: make(chan struct{}, 1), sem: make(chan struct{}, opts.Concurrency), running: make(map[*slot]struct{})}
}

// run is the pool's loop: until ctx ends it claims into free slots; then
// it records the results of the handlers still running, ending their
// contexts with ErrShutdown after DrainTimeout, and returns once every
// result is recorded. A Queue or database closed under it is its error:
// then the handlers' contexts end at once with it as their cause, and
// nothing more is written.
func (p *pool) run(ctx context.Context) error {
	l := newLoop(p, ctx)
	defer close(p.gone)
	defer l.stopTimers()
	for l.claiming {
		p.await(l)
	}
	p.drain(l)
	return l.fatal
}

// drain is the loop once no more jobs are claimed: until every handler
// returned and its result is recorded.
func (p *pool) drain(l *loop) {
	for !l.over() {
		p.await(l)
	}
}

// call runs the handler, turning a panic into an error whose text holds
// the panic value.
func (p *pool) call(ctx context.Context, c Claim) (err error) {
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("leaseq: handler panicked", p.attrs(c, "panic", time.Time{}, "panic", fmt.Sprint(v),
				"stack", string(debug.Stack()))...)
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return p.h(ctx, c)
}

// start runs the handler of c, a claim of the loop's cycle, in a goroutine
// of its own, which reports its result to the loop and, once the loop
// told it what became of it, the run's outcome (rule 51).
func (p *pool) start(c Claim) {
	ctx, lost := context.WithCancelCause(p.handlers)
	j := &slot{c: c, lost: lost, r: p.started(c), told: make(chan told, 1)}
	j.hold = p.q.holds.add(c, p, j)
	p.running[j] = struct{}{}
	p.ends.add(j)
	untrack := p.track(c, lost, j.hold)
	p.records.Add(1)
	go func() {
		defer lost(nil)
		err := p.runSlot(ctx, j, c)
		untrack()
		p.returns <- returned{j: j, err: err, cause: context.Cause(ctx)}
		t := <-j.told
		p.q.holds.drop(c)
		p.reportStarts()
		p.records.Done()
		defer p.reportEnds()
		p.report(j.r, t.c, err, t.result)
	}()
}

// runSlot runs j's handler on c once it has a slot (sem), which it gives
// back when the handler returned. It waits for one only behind a handler
// that settled its job with FinishTx and has not yet returned; a claim
// whose context ended meanwhile is run all the same, as any claim is, and
// its handler finds its context ended.
func (p *pool) runSlot(ctx context.Context, j *slot, c Claim) error {
	p.sem <- struct{}{}
	defer func() { <-p.sem }()
	j.began = time.Now()
	err := p.call(j.r.context(ctx), c) // call recovers a panic
	j.r.o.Run = time.Since(j.began)
	return err
}

// fatal is the error that ends Work, if err is one: the Queue or its
// database was closed. Anything else is a fault to retry.
func (p *pool) fatal(err error) error {
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	if closed := p.q.e.Usable(); closed != nil {
		return closed
	}
	return nil
}

// faultDelay is how long the pool waits after its n-th fault in a row: from
// 10ms, doubling, capped at max(limit, 1s), with jitter, so a database that
// is down costs a few wake-ups a second at most.
func faultDelay(n int, limit time.Duration) time.Duration {
	d := max(limit, time.Second)
	if n < 10 {
		d = min(10*time.Millisecond<<n, d)
	}
	return d/2 + rand.N(d/2+1)
}

// idleFor is how long an idle pool sleeps: until the earliest delayed job
// or lease end it knows of, at most PollInterval (jobs of other processes
// are found no later), at least a millisecond.
func (p *pool) idleFor(ctx context.Context) time.Duration {
	due, ok, err := p.q.e.JobNextDue(ctx, p.q.name)
	if err != nil || !ok {
		return p.opts.PollInterval
	}
	return idleWait(due, p.q.now(), p.opts.PollInterval)
}

// idleWait is how long to sleep at now (Unix ms) for an instant due:
// between 1ms and poll. It bounds the wait in milliseconds before it
// becomes a Duration, which counts nanoseconds: a job due centuries ahead
// would overflow it, and a wrapped, negative wait would make the pool spin.
func idleWait(due, now int64, poll time.Duration) time.Duration {
	left := due - now
	switch {
	case due <= now:
		return time.Millisecond
	case left < 0: // the difference overflowed: as far off as can be
		left = math.MaxInt64
	}
	return max(time.Duration(min(left, poll.Milliseconds()))*time.Millisecond, time.Millisecond)
}

// untilLeaseEnd is the real time left until c's lease ends by the queue's
// clock.
func (p *pool) untilLeaseEnd(c Claim) time.Duration {
	return c.LeaseUntil.Sub(p.q.clock.Now())
}

// attrs are the fields of a log record about c.
func (p *pool) attrs(c Claim, outcome string, began time.Time, more ...any) []any {
	a := []any{"job", c.ID, "queue", p.q.name, "owner", c.Owner, "token", c.Token, "attempt", c.Attempt,
		"outcome", outcome}
	if !began.IsZero() {
		a = append(a, "duration", time.Since(began))
	}
	return append(a, more...)
}
