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
	"time"

	"github.com/leaseq/leaseq/internal/engine"
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
	// Heartbeat is how often a running handler's lease is extended; 0
	// means Lease/3. It must be shorter than Lease: each extension must
	// commit before the lease it extends ends.
	Heartbeat time.Duration
	// Backoff is the delay before the next attempt of a job whose handler
	// failed on its attempt-th claim; nil means DefaultBackoff. A negative
	// delay counts as 0.
	Backoff func(attempt int) time.Duration
	// PollInterval bounds how long an idle worker waits before it looks
	// for jobs that another process enqueued; 0 means 1s. Jobs enqueued or
	// released through a Queue of this process wake it at once, and it
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
	// goroutine that recorded it, after the handler's slot was freed;
	// Work returns only after every call returned. Calls of several runs
	// may overlap. A panic in it is logged.
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
// into free handler slots with one ClaimBatch, runs h on each with the
// lease kept alive by heartbeats, and records each handler's result.
//
// When ctx ends Work stops claiming; running handlers keep their contexts
// for up to DrainTimeout, then those end with ErrShutdown; once every
// handler has returned and its result is recorded, Work returns nil.
// Invalid options are ErrInvalid at once. A Queue closed under it (noticed
// at once) gives ErrClosed, a closed *sql.DB (noticed at the next claim,
// within PollInterval) its error; then the handlers' contexts end at once
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
	defer p.stop(nil)
	defer q.watchStart()()         // rule 56: other processes' changes wake the pool
	defer p.watchLeases()()        // and end the handlers of jobs taken from them
	stopTimed := p.startTimed(ctx) // periodic jobs and retention: work_periodic.go
	err := p.run(ctx)
	stopTimed()
	if err != nil {
		p.stop(err) // no result can be recorded: stop the handlers at once
	}
	p.drain()
	if err != nil {
		return opError("work", as(opts.Owner), err)
	}
	return nil
}

// pool is one running Work call.
type pool struct {
	q    *Queue
	opts WorkerOptions
	h    Handler
	log  *slog.Logger
	// bg carries ctx's values, never its cancellation: the database calls
	// that record results and extend leases run on it, so a shutdown does
	// not interrupt them.
	bg context.Context
	// handlers is the parent of every handler's context; stop ends it with
	// ErrShutdown when the drain time is over.
	handlers context.Context
	stop     context.CancelCauseFunc
	running  int           // handlers started and not yet returned; run's goroutine only
	done     chan struct{} // a handler returned: its slot is free
	records  sync.WaitGroup
	held     heldLeases // the running claims (work_listen.go)
}

func newPool(ctx context.Context, q *Queue, opts WorkerOptions, h Handler) *pool {
	bg := context.WithoutCancel(ctx)
	handlers, stop := context.WithCancelCause(bg)
	return &pool{q: q, opts: opts, h: h, log: opts.Logger, bg: bg, handlers: handlers, stop: stop,
		done: make(chan struct{}, opts.Concurrency)}
}

// run claims and starts handlers until ctx ends or the queue or database
// is closed, which is its error.
func (p *pool) run(ctx context.Context) error {
	faults := 0
	claimCtx, stopWait := p.claimContext(ctx)
	defer stopWait()
	for {
		wake := p.q.e.Wakers().Wakeup(p.q.name)
		var sleep <-chan time.Time // nil: nothing to wait for but events
		p.reap()
		if free := p.opts.Concurrency - p.running; free > 0 {
			cs, err := p.q.claimN(claimCtx, "work", p.opts.Owner, p.opts.Lease, free, engine.SharePool)
			// A claim that committed as ctx ended is run too, under the
			// drain: dropped, its jobs would stay leased to a pool that is
			// gone until their leases end.
			for _, c := range cs {
				p.start(c)
			}
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				if fatal := p.fatal(err); fatal != nil {
					return fatal
				}
				faults++
				wait := faultDelay(faults, p.opts.PollInterval)
				p.log.Error("leaseq: claiming failed; retrying", "queue", p.q.name, "owner", p.opts.Owner,
					"error", err, "retry_in", wait)
				sleep = time.After(wait)
			default:
				faults = 0
				if len(cs) < free {
					sleep = time.After(p.idleFor(ctx))
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.q.closing:
			return ErrClosed
		case <-p.done:
			p.running--
		case <-wake:
		case <-sleep:
		}
	}
}

// claimContext is ctx for the pool's claims, with the drain time as their
// engine.StepWait (internal/postgres/pool.go): a claim that a PostgreSQL pool step is
// running as ctx ends is waited for up to DrainTimeout, then left — its
// claims are released when the step answers — so that Work returns within
// its drain time also when the server does not answer (rule 24).
func (p *pool) claimContext(ctx context.Context) (context.Context, func()) {
	wait, cancel := context.WithCancel(p.bg)
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(p.opts.DrainTimeout, cancel) })
	return engine.WithStepWait(ctx, wait), func() { stop(); cancel() }
}

// reap counts the handlers that returned since the last look, so that
// slots freed together are filled with one claim.
func (p *pool) reap() {
	for {
		select {
		case <-p.done:
			p.running--
		default:
			return
		}
	}
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

// drain waits for the running handlers: for DrainTimeout, then it ends
// their contexts with ErrShutdown and waits for them to return; then it
// waits for their results to be recorded.
func (p *pool) drain() {
	defer p.records.Wait()
	if p.running == 0 {
		return
	}
	timeout := time.NewTimer(p.opts.DrainTimeout)
	defer timeout.Stop()
	for p.running > 0 {
		select {
		case <-p.done:
			p.running--
		case <-timeout.C:
			p.stop(ErrShutdown)
		}
	}
}

// start runs one claimed job in a goroutine of its own. The job's slot is
// free once the handler returns; its result is recorded after that, so
// that the next claim can share a commit with the results.
func (p *pool) start(c Claim) {
	p.running++
	p.records.Add(1)
	go func() {
		defer p.records.Done()
		p.handle(c)
	}()
}

// handle runs the handler on c with its lease kept alive, frees its slot,
// then records the result.
func (p *pool) handle(c Claim) {
	began := time.Now()
	p.q.holds.add(c)
	defer p.q.holds.drop(c)
	r := p.started(c)
	ctx, cancel := context.WithCancelCause(p.handlers)
	defer cancel(nil)
	k := p.keepLease(c, cancel)
	untrack := p.track(c, cancel)
	err := p.call(r.context(ctx), c)
	untrack()
	r.o.Run = time.Since(began)
	c = k.release()
	cause := context.Cause(ctx)
	p.done <- struct{}{}
	p.record(c, err, cause, began, r)
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

// keeper extends one handler's lease every Heartbeat and ends the
// handler's context with ErrLeaseLost when the lease ends unextended or an
// extension is refused.
type keeper struct {
	stop chan struct{}
	done chan Claim // the claim as last extended, once the keeper stopped
}

// extension is the answer to one heartbeat.
type extension struct {
	c   Claim
	ok  bool
	err error
}

func (p *pool) keepLease(c Claim, lost context.CancelCauseFunc) *keeper {
	k := &keeper{stop: make(chan struct{}), done: make(chan Claim, 1)}
	go func() {
		tick := time.NewTicker(p.opts.Heartbeat)
		defer tick.Stop()
		end := time.NewTimer(p.untilLeaseEnd(c))
		defer end.Stop()
		// The heartbeat in flight, nil if none. It runs on a goroutine of
		// its own so that the end timer fires on time even when the
		// heartbeat's COMMIT is held up past the lease end (a COMMIT waits
		// for readers whatever its context says). The keeper waits for it
		// before it stops, so that every extension is over before the
		// result is recorded.
		var beat chan extension
		settled := p.q.holds.get(c).settledChan()
		finish := func() {
			if beat != nil {
				<-beat
			}
			<-k.stop
			k.done <- c
		}
		for {
			select {
			case <-k.stop:
				finish()
				return
			case <-settled: // FinishTx finished the job: nothing to keep
				finish()
				return
			case <-end.C:
				if p.q.holds.get(c).doneAfter(recordTimeout) {
					finish()
					return
				}
				p.log.Warn("leaseq: lease ended before the handler returned", p.attrs(c, "lease lost", time.Time{})...)
				lost(ErrLeaseLost)
				finish()
				return
			case <-tick.C:
				if beat == nil {
					beat = make(chan extension, 1)
					go func(c Claim, answer chan<- extension) {
						next, ok, err := p.extend(c)
						answer <- extension{next, ok, err}
					}(c, beat)
				}
			case x := <-beat:
				beat = nil
				switch {
				case x.err != nil:
					// The lease may still be extended at the next beat; the
					// end timer guards the handler meanwhile.
					p.log.Error("leaseq: extending a lease failed", p.attrs(c, "extend error", time.Time{}, "error", x.err)...)
				case !x.ok && p.q.holds.get(c).doneAfter(recordTimeout):
					finish()
					return
				case !x.ok:
					p.log.Warn("leaseq: extension refused; the job is no longer this handler's", p.attrs(c, "lease lost", time.Time{})...)
					lost(ErrLeaseLost)
					finish()
					return
				default:
					c = x.c
					end.Reset(p.untilLeaseEnd(c))
				}
			}
		}
	}()
	return k
}

// release stops the keeper and returns the claim as last extended.
func (k *keeper) release() Claim {
	close(k.stop)
	return <-k.done
}

// extend is one heartbeat: its context ends with the lease, though a
// COMMIT held up by readers may keep it longer.
func (p *pool) extend(c Claim) (Claim, bool, error) {
	ctx, cancel := context.WithTimeout(p.bg, p.untilLeaseEnd(c))
	defer cancel()
	return p.q.Extend(ctx, c, p.opts.Lease)
}

// untilLeaseEnd is the real time left until c's lease ends by the queue's
// clock.
func (p *pool) untilLeaseEnd(c Claim) time.Duration {
	return c.LeaseUntil.Sub(p.q.clock.Now())
}

// record writes the handler's result err, offered to the fence: Finish for
// nil, Fail for Permanent, Release otherwise — at once if the handler was
// stopped by the shutdown. A database error is retried while the claim can
// still win (until its lease ends); a refusal is logged and never retried.
// What became of it is reported to r (rule 51); a job the handler settled
// with FinishTx was finished by that call's fence.
func (p *pool) record(c Claim, err, cause error, began time.Time, r *run) {
	if result, ok := p.settledByHandler(c, err, began); ok {
		p.report(r, c, err, result)
		return
	}
	var quarantined bool
	outcome, write := p.outcome(c, err, cause, &quarantined)
	for n := 1; ; n++ {
		// A try may take until the lease ends, and at least recordTimeout:
		// a result that comes after its lease ended must still meet the
		// fence, which refuses it (a lost lease, at Warn), not a timeout
		// that would be logged as a fault.
		ctx, cancel := context.WithTimeout(p.bg, max(p.untilLeaseEnd(c), recordTimeout))
		ok, werr := write(ctx)
		cancel()
		switch {
		case werr == nil && ok:
			p.log.Debug("leaseq: job "+outcome, p.attrs(c, outcome, began, "error", err)...)
			p.report(r, c, err, accepted(outcome, quarantined))
			return
		case werr == nil:
			p.log.Warn("leaseq: result refused; the lease was lost", p.attrs(c, outcome, began, "error", err)...)
			p.report(r, c, err, OutcomeRefused)
			return
		case p.fatal(werr) != nil || p.untilLeaseEnd(c) <= 0:
			p.log.Error("leaseq: recording a result failed", p.attrs(c, outcome, began, "error", werr)...)
			p.report(r, c, err, OutcomeUnrecorded)
			return
		}
		p.log.Error("leaseq: recording a result failed; retrying", p.attrs(c, outcome, began, "error", werr)...)
		wait := time.NewTimer(min(faultDelay(n, 0), max(p.untilLeaseEnd(c), 0)))
		<-wait.C
	}
}

// outcome names what the handler's result asks for and returns the write
// that records it; a release sets *quarantined when it quarantined the job.
func (p *pool) outcome(c Claim, err, cause error, quarantined *bool) (string, func(context.Context) (bool, error)) {
	var perm *permanentError
	var retry *retryAfterError
	var snooze *snoozeError
	switch {
	case err == nil:
		return "finished", func(ctx context.Context) (bool, error) { return p.q.finish(ctx, c, engine.SharePool) }
	case errors.Is(cause, ErrShutdown): // rule 49: a restart spends no attempt
		return "released at shutdown", p.snoozed(c, 0, "worker shut down: "+err.Error(), quarantined)
	case errors.As(err, &snooze):
		return "snoozed", p.snoozed(c, snooze.d, err.Error(), quarantined)
	case errors.As(err, &perm):
		return "failed", func(ctx context.Context) (bool, error) { return p.q.Fail(ctx, c, err.Error()) }
	case errors.As(err, &retry):
		return "released", p.released(c, retry.d, err.Error(), quarantined)
	default:
		delay := max(p.opts.Backoff(c.Attempt), 0) // as RetryAfter: Release refuses a negative delay
		return "released", p.released(c, delay, err.Error(), quarantined)
	}
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
