package leaseq_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// checkHistory checks the chaos processes' histories, the final rows and
// the receiver against each other. A job here is one generation of an ID:
// the producer's enqueue, or an enqueue of the ID again after a purge.
//
// Tokens and claims:
//   - every token of an ID, across its generations, was handed out exactly
//     once: 1, 2, … with no gap and no repeat; a generation enqueued again
//     after a purge starts where the purged one ended (its first claim's
//     token is the purged job's last token + 1), and its attempts start
//     over (attempt = token - the tokens before the generation);
//   - every claim's lease_until is min(at+lease, deadline); no attempt is
//     beyond the job's MaxAttempts; no claim comes before the job's run_at;
//   - no claim comes before the previous claim's lease ended (after its
//     extensions), or, if that claim released the job, before the release's
//     delay ended: a live lease is never handed over;
//   - no claim of a generation comes after it was cancelled or ended.
//
// Fenced calls (Finish, Extend, Release, Fail), replayed per claim in the
// order its holder made them:
//   - each was made by the incarnation that logged the claim;
//   - an accepted one was made while the claim's lease was live (before
//     lease_until as its earlier accepted extensions left it), before the
//     deadline, before any Cancel of the job, before the next claim, and
//     before the ID was purged and enqueued again — that is, with the job's
//     then-current token by its then-current owner;
//   - a refused one is explained: the lease or deadline had passed, the job
//     had been cancelled, claimed again or enqueued again, or the claim
//     itself had ended it; and after a refusal no call of the same claim is
//     accepted;
//   - an accepted Extend set lease_until = min(at+lease, deadline), never
//     past the deadline;
//   - an accepted Release put the job back pending with the same token
//     (the next claim gets token+1, no earlier than the delay's end) — or
//     quarantined it when its attempts were used up or the delay reached
//     the deadline.
//
// Cancel and Purge:
//   - an accepted Cancel found the job pending or leased; a refused one
//     found it ended; after it no call of an earlier claim is accepted;
//   - Purge deleted at least the jobs List showed as done or quarantined
//     and older than its instant just before it; an ID enqueued again was
//     not a duplicate.
//
// Outcomes (nothing lost, nothing changed by a refused call):
//   - each generation ends exactly once — one accepted finish, fail,
//     quarantining release, cancel, or (with none of those) the claim's
//     quarantine sweep; a generation purged or enqueued again had ended;
//   - the final row of each ID is the last generation's, done or
//     quarantined, and agrees with the accepted calls alone: token,
//     attempts, owner, lease_until, and a reason saying which call or sweep
//     ended it (a done job keeps its last release's reason);
//   - every delivery the receiver got came from a logged claim, with that
//     generation's payload; every logged delivery reached it; every job
//     that ended done was delivered; the receiver's total is the sum of the
//     qty of the distinct delivered jobs;
//   - the engine's integrity check is ok (PRAGMA integrity_check; amcheck).
//
// Unlogged operations. A process writes a call's line after the call
// returned, so a SIGKILL in between leaves a committed call with no line.
// Each killed incarnation (and only a killed one) may account for at most
// one such call, and it must be the call its program makes after its last
// line: a worker's claim after a start or an outcome line (finish, release,
// fail), an extension after a claim or extend line, the planned finish,
// release or fail after a deliver line; the operator's call named by its
// last intent line. Such a call is assumed only where something observed
// needs it (a missing token, a row or a claim that the logged calls do not
// explain), and then only within what the call could have done. A token
// missing from the histories needs such a claim — and if it is a row's
// final token, one by an incarnation with the row's owner name. Everything
// else is a violation. Incarnations that were not killed must end with an
// exit line; a killed one may end in a torn line, which is ignored.
//
// Faults. A call of a loop worker or the operator that returned an error
// (its line has a Fault) may have taken effect or not: on PostgreSQL a
// statement whose connection a server restart cut may have committed
// before the cut. The process cannot tell, and neither can its line; the
// audit, which holds every committed insert and change, can. A claim,
// extension, finish, release, fail, cancel or insert in the audit by the
// call (its owner's, of its claim, with its cancel's reason, of its
// enqueue's job) at an instant within the call is that call, accepted, and
// is checked as a logged one is; with none the call changed nothing (as a
// refused one). A purge, whose deletes the audit does not see, is taken to
// have happened only where something observed needs it, as a killed
// operator's last intent is. Every failed call must have overlapped a
// server restart or begun within chaosFaultSlack after one: an error while
// the server was up is a violation (on SQLite, which is never restarted,
// any error is).
//
// Pools. A pool's calls are Work's, so its claims, extensions and accepted
// results come from the audit (exact, none unlogged) and its refusals from
// Work's records (judged by the record's time); all of the above holds for
// them as for a loop worker's logged calls (synthesizePools). Besides:
//   - every claim of a pool was run by a handler of the incarnation that
//     made it, unless that was killed or its claim failed with an error
//     (logged by Work at or after the claim's instant, before the pool's
//     next claim) and so returned no jobs, with the claim the queue made;
//     no handler ran a claim the queue did not make;
//   - every handler that returned (unless killed) had its result recorded
//     or refused, or a database fault logged, and never both — unless a
//     try that failed with an error had been recorded, and Work's next try
//     was refused for it (the fault logged between the two); what was
//     recorded is what rule 30 asks for its return; it was recorded after
//     the handler returned; a panic was logged at Error with its stack;
//     nothing about a job was logged at Info;
//   - a handler's context ended only with ErrLeaseLost, or with
//     ErrShutdown once its pool's drain time was over;
//   - no handler went on after its lease ended without its context having
//     ended (checkContext).
//
// On PostgreSQL one pool runs on the server's clock (chaosServerClockPool),
// where a call judges at the instant its statement began, or a transaction
// at its reading after its locks, before its COMMIT (rule 8 in
// docs/rules.md). For its calls alone three allowances follow, and no
// others: a claim's accepted calls are replayed in the order they
// committed (inCommitOrder), a refusal is judged without the accepted
// calls that may not have been visible to it yet (seenBy), and a claim's
// instant may come up to chaosServerLag after its process ended or gave
// the claim up (claimant, claimFailed).
//
// Effects (rule 46). A FinishTx handler writes an effects row (job, token,
// owner) in the transaction of its job's fenced finish. An ID may have
// several lives (purged, enqueued again), but its tokens go on rising
// across them (rule 21), so an effect's (ID, token) names one claim:
//   - every effect is of a claim whose finish committed (by the audit), by
//     the effect's owner, and run by a FinishTx handler: no claim that was
//     released, failed, cancelled, refused or taken over has one;
//   - no claim has two effects, and every claim a FinishTx handler
//     finished has its effect: each effect exactly once in the database;
//   - a FinishTx that returned true had its claim's finish commit within
//     the call, one refused had none; one that failed with an error (it
//     must have overlapped a server restart) or was cut by a kill may have
//     committed or not;
//   - Work made no call of its own for a claim its handler's FinishTx
//     finished, and that handler's context need not end at its lease end
//     after that; a context may end late by the time a FinishTx of it was
//     in flight at the lease end, which Work waits for (rule 48).
func checkHistory(t *testing.T, q *leaseq.Queue, c *chaos, jobs []leaseq.Job, rcv *receiver) chaosReport {
	t.Helper()
	restarts := slices.SortedFunc(slices.Values(c.restarts), func(a, b interval) int { return cmp.Compare(a.from, b.from) })
	k := &checker{t: t, all: c.all, jobs: map[string]*jobLog{}, restarts: restarts, reads: c.reads, sqlite: c.engine.name == "sqlite", onServerClock: c.onServerClock,
		delivered: map[string]string{}, audit: c.audit, effects: c.effects, pools: map[*incarnation]*poolLog{}, runs: map[string]*workRun{},
		poolNames: map[string]bool{},
		rep: chaosReport{accepted: map[string]int{}, refused: map[string]int{}, unlogged: map[string]int{},
			faults: map[string]int{}, committed: map[string]int{}}}
	k.loadRows(q, c.engine)
	k.indexAudit()
	k.loadHistories()
	k.synthesizePools()
	k.buildGenerations(jobs)
	k.probePurged(q)
	for _, id := range k.order {
		k.checkJob(k.jobs[id])
	}
	k.checkPools()
	k.checkEffects()
	for id, jl := range k.jobs {
		if len(jl.gens) == 0 && (jl.row() != nil || len(jl.lives) > 0 || len(jl.cancels) > 0) {
			k.bad("%s: in the table or the histories, but never enqueued", id)
		}
	}
	k.accountForUnloggedClaims()
	k.checkPurges()
	k.checkReceiver(rcv)
	return k.rep
}

// chaosReport is what checkHistory found.
type chaosReport struct {
	violations                  []string
	quarantines                 []string
	jobs, reenqueued            int
	done, quarantined, purged   int // how the jobs ended: row done, row quarantined, purged
	claims, unloggedClaims      int
	accepted, refused, unlogged map[string]int // per call; unlogged: accepted calls a kill left without a line
	faults, committed           map[string]int // per call: calls that returned an error; of those, the ones that took effect
	faultLate                   int64          // the latest a failed call began after a restart was over, in ms (0: none began after)
	claimsBeforeEnqueue         int            // claims whose instant came before the enqueue of the generation they took
	purges, deleted             int
	deliveries, repeats, failed int // successful deliveries, repeats of those, failed ones
	pool                        poolReport
	tx                          txReport
}

// txReport is what checkHistory found about the FinishTx handlers and
// their effects.
type txReport struct {
	runs, accepted              int // handlers that meant to call FinishTx; its calls that finished the job
	refusedBefore, refusedAfter int // its calls the fence refused before the function ran, and after
	faults, committed           int // its calls that failed with an error; of those, the ones whose finish committed
	effects                     int // rows of the effects table
}

func (p txReport) summary() string {
	return fmt.Sprintf("FinishTx: %d handlers meant to record with it; %d calls finished the job, %d were refused before fn and %d after it, "+
		"%d failed with an error (%d of them committed); %d effects",
		p.runs, p.accepted, p.refusedBefore, p.refusedAfter, p.faults, p.committed, p.effects)
}

// poolReport is what checkHistory found about the pools.
type poolReport struct {
	runs, claims              int
	extends, refusedExtends   int
	failedExtends             int   // heartbeats that failed with a database error (no answer before the lease ended)
	lostSeen, shutdownSeen    int   // handlers that saw their context end with ErrLeaseLost, ErrShutdown
	panics                    int   // handlers that panicked
	outlived                  int   // handlers still running when their lease ended
	startedLate               int   // handlers that started after their lease had ended
	lateMax, lateRealMax      int64 // of those, the latest end of a context after the lease: running time, real time
	cancelled                 int   // handlers whose job was cancelled while they ran
	cancelSeenMax             int64 // of those, the longest running time from the cancel to the end of the context
	recordFaults, claimFaults int   // database faults Work logged recording a result, claiming
	// Of those: results recorded by a try that failed, and claims that
	// failed but committed (no handler ran them).
	recordedFaults, claimedFaults int
	// undone: claims a pool's caller left before their answer came, which
	// the queue released at once unrun (on PostgreSQL, a claim's COMMIT cut
	// short by its context: rule 24 in docs/rules.md).
	undone int
	// neighbourLost: leases of handlers that never stalled, ended while a
	// handler of their pool stalled inside FinishTx's function; of those,
	// neighbourExcused ended for a reason of their own or the host's.
	neighbourLost, neighbourExcused int
}

// refusedFenced counts the refused fenced calls: stale or late claims.
func (r chaosReport) refusedFenced() int {
	return r.refused["finish"] + r.refused["extend"] + r.refused["release"] + r.refused["fail"]
}

func (r chaosReport) summary() string {
	return fmt.Sprintf("%d jobs (%d enqueued again after a purge; %d done, %d quarantined, %d purged), "+
		"%d claims (%d unlogged), %d extends (%d refused), %d releases (%d refused), %d fails (%d refused), "+
		"%d finishes (%d refused, %d unlogged), %d cancels (%d refused), %d purges deleting %d jobs, "+
		"%d deliveries (%d repeats, %d failing), %d refused stale calls, %d claims at an instant before their job's enqueue, "+
		"unlogged calls a kill explains: %s; %s",
		r.jobs, r.reenqueued, r.done, r.quarantined, r.purged,
		r.claims, r.unloggedClaims, r.accepted["extend"]+r.refused["extend"], r.refused["extend"],
		r.accepted["release"]+r.refused["release"], r.refused["release"], r.accepted["fail"]+r.refused["fail"], r.refused["fail"],
		r.accepted["finish"]+r.refused["finish"], r.refused["finish"], r.unlogged["finish"],
		r.accepted["cancel"]+r.refused["cancel"], r.refused["cancel"], r.purges, r.deleted,
		r.deliveries, r.repeats, r.failed, r.refusedFenced(), r.claimsBeforeEnqueue, fmtCounts(r.unlogged),
		r.faultSummary()) + "; " + r.pool.summary() + "; " + r.tx.summary()
}

// faultSummary counts the calls of loop workers and the operator that
// failed with an error.
func (r chaosReport) faultSummary() string {
	if len(r.faults) == 0 {
		return "no call of a loop worker or the operator failed with an error"
	}
	return fmt.Sprintf("calls of loop workers and the operator that failed with an error: %s, of which took effect: %s; "+
		"none began more than %dms after a server restart was over", fmtCounts(r.faults), fmtCounts(r.committed), r.faultLate)
}

func (p poolReport) summary() string {
	return fmt.Sprintf("pools: %d handler runs of %d claims, %d heartbeats (%d refused, and %d more failed), %d panics; "+
		"handlers saw %d lease losses and %d shutdowns; %d outlived their lease (%d started after it), whose context ended at most "+
		"%dms of running time (%dms of real time) after it or their start; %d were cancelled while running, and saw it at most "+
		"%dms of running time later; database faults: %d recording (%d of them recorded all the same), %d claiming "+
		"(%d of them claimed all the same); %d claims undone unrun after their caller left; "+
		"%d leases of handlers that never stalled ended beside a stall in FinishTx's function, each for a reason of its own or the host's (%d)",
		p.runs, p.claims, p.extends+p.refusedExtends, p.refusedExtends, p.failedExtends, p.panics, p.lostSeen, p.shutdownSeen,
		p.outlived, p.startedLate, p.lateMax, p.lateRealMax, p.cancelled, p.cancelSeenMax, p.recordFaults, p.recordedFaults,
		p.claimFaults, p.claimedFaults, p.undone, p.neighbourLost, p.neighbourExcused)
}

// fmtCounts prints counts by name in name order.
func fmtCounts(m map[string]int) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[name], name))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// loggedOp is a history event with the incarnation that wrote it.
type loggedOp struct {
	histEvent
	inc *incarnation
}

// bounds is the interval the call's clock reading lies in: exactly At
// where it was recorded, else the real-time window around the call.
func (e histEvent) bounds() (lo, hi int64) {
	if e.At != 0 {
		return e.At, e.At
	}
	return e.T0, e.T1
}

// never is an instant after every other.
const never = math.MaxInt64

// life is one lease generation of a job: one token, its claim, and the
// calls its holder made with it.
type life struct {
	token   int64
	claim   *loggedOp   // nil: the claim is not logged
	calls   []*loggedOp // extend, finish, release, fail, in the order made
	deliver *loggedOp
	gen     *generation
	// Set by replay.
	leaseEnd int64     // where the accepted calls left lease_until (a release: its instant)
	release  *loggedOp // the accepted release
	ending   *ending   // the accepted finish, fail or quarantining release
	run      *workRun  // a pool's handler of it
}

// generation is one enqueue of an ID.
type generation struct {
	job  leaseq.Job
	enq  *loggedOp // nil: the producer's
	from int64     // no claim of an earlier generation is at or after it; 0 for the producer's
	// base is the token before its first claim; -1 until known.
	base    int64
	lives   []*life     // its logged claims, by token
	cancels []*loggedOp // its accepted cancels
	endings []*ending
	unsure  *spare // an enqueue that only a killed operator's last intent may have made
}

func (g *generation) deadline() int64 { return unixMS(g.job.Deadline) }

func (g *generation) maxAttempts() int64 {
	if g.job.MaxAttempts == 0 {
		return chaosMaxAttempts
	}
	return int64(g.job.MaxAttempts)
}

// maxAttemptsBefore is g's max attempts as the claim of token found it:
// the job's, plus one for each release at shutdown of an earlier claim,
// which gave its attempt back (rule 49: Work snoozes it).
func (g *generation) maxAttemptsBefore(token int64) int64 {
	n := g.maxAttempts()
	for _, l := range g.lives {
		if l != nil && l.token < token && l.release != nil && refunds(l.release) {
			n++
		}
	}
	return n
}

// refunds reports whether the accepted release op gave its attempt back
// (rule 49): Work's release at shutdown, and the queue's own release of a
// claim its caller never got, are Snoozes.
func refunds(op *loggedOp) bool {
	return op.Ev == "release" && (strings.HasPrefix(op.Reason, "worker shut down: ") ||
		strings.HasPrefix(op.Reason, "claim undone: ") || strings.HasPrefix(op.Reason, "released: the claim's commit failed"))
}

// ending is what ended a generation.
type ending struct {
	what   string // finish, fail, release, cancel, or an unlogged one
	lo, hi int64  // when
	status leaseq.Status
	reason string
	life   *life // the claim whose call it was; nil for a cancel
	maybe  bool  // a window-judged release that may or may not have quarantined
}

// jobLog is everything known about one ID.
type jobLog struct {
	id      string
	gens    []*generation
	lives   map[int64]*life // by token
	cancels []*loggedOp     // every cancel result
	final   *leaseq.State   // its row at the end; nil if purged
	// purgedLast is the last token of the purged job, if it has no row
	// (-1 otherwise), as probePurged found it.
	purgedLast int64
}

// spare is the one call a killed incarnation may have made after its last
// line, with nothing written about it; or a purge of the operator that
// failed with an error (fault), which may have deleted jobs all the same.
type spare struct {
	inc   *incarnation
	kind  string    // claim, extend, finish, release, fail, cancel, purge, enqueue
	ev    histEvent // the last line (or the failed call's): the job, token, plan, reason… of the call
	from  int64     // the call ran at or after this instant
	used  string    // what it was taken to be; "" while unused
	fault bool
}

// checker is the state of one checkHistory run.
type checker struct {
	t         *testing.T
	all       []*incarnation
	rep       chaosReport
	rows      map[string]*leaseq.State
	jobs      map[string]*jobLog
	order     []string // IDs in enqueue order
	spares    []*spare
	restarts  []interval // the server's crash restarts
	reads     []interval // on SQLite, the reads the parent held open
	sqlite    bool
	purges    []*loggedOp
	enqueues  []*loggedOp
	delivered map[string]string // opKey of a logged deliver line → its plan
	audit     []auditRow
	effects   []effectRow
	// auditClaims are the audited claims by owner, in instant order;
	// auditOf the audited changes by job, in commit order (inserts
	// included); auditClaim the audited claim of each token, by
	// opKey(job, "", token).
	auditClaims map[string][]auditRow
	auditOf     map[string][]auditRow
	auditClaim  map[string]auditRow
	pools       map[*incarnation]*poolLog
	// onServerClock says which processes ran on the server's clock, so
	// that their calls' instants may be out of their commit order
	// (auditRow); nil: none did.
	onServerClock func(owner string) bool
	runs          map[string]*workRun // by opKey of the claim
	poolNames     map[string]bool
}

func (k *checker) bad(format string, args ...any) {
	k.rep.violations = append(k.rep.violations, fmt.Sprintf(format, args...))
}

func opKey(job, owner string, token int64) string { return fmt.Sprint(job, "/", owner, "/", token) }

func (k *checker) job(id string) *jobLog {
	jl := k.jobs[id]
	if jl == nil {
		jl = &jobLog{id: id, lives: map[int64]*life{}, final: k.rows[id], purgedLast: -1}
		k.jobs[id] = jl
	}
	return jl
}

// loadRows reads the final rows through List and runs the engine's
// integrity check.
func (k *checker) loadRows(q *leaseq.Queue, e chaosEngine) {
	if problem := e.integrity(q.DB()); problem != "" {
		k.bad("%s", problem)
	}
	k.rows = map[string]*leaseq.State{}
	f := leaseq.Filter{Limit: leaseq.MaxListLimit}
	for {
		page, err := q.List(context.Background(), f)
		if err != nil {
			k.t.Fatal(err)
		}
		for i := range page {
			k.rows[page[i].ID] = &page[i]
			k.job(page[i].ID)
		}
		if len(page) < f.Limit {
			return
		}
		f.AfterID = page[len(page)-1].ID
	}
}

// loadHistories reads every incarnation's history and indexes it by job.
func (k *checker) loadHistories() {
	for _, inc := range k.all {
		evs, torn, err := readHistory(inc.hist)
		if err != nil {
			k.t.Fatal(err)
		}
		switch {
		case torn && !inc.killed:
			k.bad("%s.%d: torn history line, but it was not killed", inc.name, inc.n)
		case !inc.killed && (len(evs) == 0 || evs[len(evs)-1].Ev != "exit"):
			k.bad("%s.%d: history does not end with exit, but it was not killed", inc.name, inc.n)
		}
		if inc.role == "chaos-pool" {
			k.loadPool(inc, evs)
			continue
		}
		if inc.killed && inc.role == "chaos-operator" {
			k.spares = append(k.spares, operatorSpares(inc, evs)...)
		} else if inc.killed && len(evs) > 0 {
			if s := spareAfter(inc, evs[len(evs)-1]); s != nil {
				k.spares = append(k.spares, s)
			}
		}
		for _, e := range evs {
			if e.Fault != "" {
				k.fault(&loggedOp{e, inc})
			} else {
				k.index(&loggedOp{e, inc})
			}
		}
	}
}

// operatorSpares are the calls a killed operator may have made unlogged:
// those whose intent line has no result line after it. There may be two,
// a purge and the enqueue that races it (racePurge).
func operatorSpares(inc *incarnation, evs []histEvent) []*spare {
	open := map[string]*spare{}
	for _, e := range evs {
		switch {
		case e.Ev == "intent":
			open[e.Op] = &spare{inc: inc, ev: e, kind: e.Op, from: e.T0}
		case open[e.Ev] != nil:
			delete(open, e.Ev)
		}
	}
	var out []*spare
	for _, kind := range slices.Sorted(maps.Keys(open)) {
		out = append(out, open[kind])
	}
	return out
}

// spareAfter is the call a killed incarnation whose last line is e may
// have made unlogged, or nil.
func spareAfter(inc *incarnation, e histEvent) *spare {
	s := &spare{inc: inc, ev: e}
	switch {
	case inc.role == "chaos-operator" && e.Ev == "intent":
		s.kind, s.from = e.Op, e.T0
	case inc.role != "chaos-worker":
		return nil
	case e.Fault != "" && (e.Ev == "finish" || e.Ev == "release" || e.Ev == "fail"):
		s.kind, s.from = e.Ev, e.T1 // the same call again
	case e.Ev == "start" || e.Ev == "finish" || e.Ev == "release" || e.Ev == "fail" || e.Fault != "" && e.Ev == "claim":
		s.kind = "claim"
	case e.Ev == "claim" || e.Ev == "extend":
		s.kind, s.from = "extend", e.T1
	case e.Ev == "deliver":
		s.kind, s.from = e.Plan, e.T1
	default:
		return nil
	}
	return s
}

// use takes s to be the call what, unless it was taken to be another one,
// and counts it the first time.
func (k *checker) use(s *spare, what string) bool {
	if s == nil || (s.used != "" && s.used != what) {
		return false
	}
	switch {
	case s.used == "" && s.fault:
		k.rep.committed[s.kind]++
		if !outcomeUnknown(s.ev.Fault) {
			k.bad("%s.%d: its %s at [%d, %d] answered %q, but it committed (rule 41: what happened, or that it is not known)",
				s.inc.name, s.inc.n, s.kind, s.ev.T0, s.ev.T1, s.ev.Fault)
		}
	case s.used == "":
		k.rep.unlogged[s.kind]++
	}
	s.used = what
	return true
}

func (k *checker) index(op *loggedOp) {
	switch op.Ev {
	case "claim":
		if op.Owner != op.inc.name {
			k.bad("%s.%d logged a claim as %q", op.inc.name, op.inc.n, op.Owner)
		}
		k.checkReading(op)
		jl := k.job(op.Job)
		if prev := jl.lives[op.Token]; prev != nil {
			k.bad("%s: token %d handed out twice (%s.%d and %s.%d)", op.Job, op.Token,
				prev.claim.inc.name, prev.claim.inc.n, op.inc.name, op.inc.n)
			return
		}
		jl.lives[op.Token] = &life{token: op.Token, claim: op}
	case "extend", "finish", "release", "fail", "deliver":
		l := k.job(op.Job).lives[op.Token]
		if l == nil || l.claim.inc != op.inc {
			k.bad("%s: %s.%d logged %s of token %d without a logged claim of it", op.Job, op.inc.name, op.inc.n, op.Ev, op.Token)
			return
		}
		if op.Ev == "deliver" {
			l.deliver = op
			k.delivered[opKey(op.Job, op.Owner, op.Token)] = op.Plan
			return
		}
		k.checkReading(op)
		l.calls = append(l.calls, op)
	case "cancel":
		k.checkReading(op)
		k.job(op.Job).cancels = append(k.job(op.Job).cancels, op)
		k.count("cancel", op.OK)
	case "purge":
		k.purges = append(k.purges, op)
	case "enqueue":
		k.enqueues = append(k.enqueues, op)
	}
}

// indexAudit indexes the audit: the claims by owner, in instant order, and
// by token; every change by job.
func (k *checker) indexAudit() {
	k.auditClaims, k.auditOf, k.auditClaim = map[string][]auditRow{}, map[string][]auditRow{}, map[string]auditRow{}
	for _, a := range k.audit {
		k.auditOf[a.ID] = append(k.auditOf[a.ID], a)
		if a.call() == "claim" {
			k.auditClaims[a.Owner] = append(k.auditClaims[a.Owner], a)
			k.auditClaim[opKey(a.ID, "", a.Token)] = a
		}
	}
	for _, claims := range k.auditClaims {
		slices.SortStableFunc(claims, func(a, b auditRow) int { return cmp.Compare(a.At, b.At) })
	}
}

// fault takes in the line of a loop worker's or the operator's call that
// failed with an error: it must have failed during a server restart; what
// it did is what the audit shows it did (see checkHistory).
func (k *checker) fault(op *loggedOp) {
	k.rep.faults[op.Ev]++
	k.checkFaultTime(op)
	switch op.Ev {
	case "purge":
		k.spares = append(k.spares, &spare{inc: op.inc, kind: op.Ev, ev: op.histEvent, from: op.T0, fault: true})
		return
	case "extend", "finish", "release", "fail":
		if l := k.job(op.Job).lives[op.Token]; l == nil || l.claim.inc != op.inc {
			k.bad("%s: %s.%d logged a failed %s of token %d without a logged claim of it", op.Job, op.inc.name, op.inc.n, op.Ev, op.Token)
			return
		}
	}
	var found []histEvent
	for _, a := range k.auditedDuring(op) {
		switch {
		case op.Ev == "claim" || a.ID == op.Job && a.Token == op.Token && a.call() == op.Ev:
			found = append(found, a.event(op.Ev))
		case op.Ev == "cancel" && a.ID == op.Job && a.Reason == op.Reason && a.Status == string(leaseq.StatusQuarantined):
			found = append(found, histEvent{Ev: "cancel", Job: a.ID, Owner: op.Owner, Reason: op.Reason, OK: true,
				instant: instant{At: a.At, T0: a.At, T1: a.At}})
		case op.Ev == "enqueue" && a.ID == op.Job && a.OldStatus == "":
			e := op.histEvent
			e.Fault, e.OK, e.instant = "", true, instant{At: a.At, T0: a.At, T1: a.At}
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
	case 1:
		k.rep.committed[op.Ev]++
		k.index(&loggedOp{found[0], op.inc})
		if op.Ev != "claim" && !outcomeUnknown(op.Fault) { // a claim cut short is undone
			k.bad("%s.%d: its %s of %s at [%d, %d] answered %q, but it committed at %d (rule 41: what happened, or that it is not known)",
				op.inc.name, op.inc.n, op.Ev, op.Job, op.T0, op.T1, op.Fault, found[0].At)
		}
	default:
		k.bad("%s.%d: its failed %s of %s at [%d, %d] matches %d audited changes", op.inc.name, op.inc.n, op.Ev, op.Job, op.T0, op.T1, len(found))
	}
}

// outcomeUnknown reports whether a call's error says that whether it was
// written is not known: the one error a call that committed may answer.
func outcomeUnknown(fault string) bool {
	return strings.Contains(fault, "is not known")
}

// auditedDuring is the audited changes the failed call op may have made:
// of its owner's claims, or of its job (by its owner, but for a cancel or
// an enqueue), at an instant within the call.
func (k *checker) auditedDuring(op *loggedOp) []auditRow {
	rows := k.auditOf[op.Job]
	if op.Ev == "claim" {
		rows = k.auditClaims[op.inc.name]
		from, _ := slices.BinarySearchFunc(rows, op.T0, func(a auditRow, t int64) int { return cmp.Compare(a.At, t) })
		rows = rows[from:]
	}
	var during []auditRow
	for _, a := range rows {
		if a.At > op.T1 && op.Ev == "claim" {
			break
		}
		if op.T0 <= a.At && a.At <= op.T1 && (op.Ev == "cancel" || op.Ev == "enqueue" || a.Owner == op.inc.name) {
			during = append(during, a)
		}
	}
	return during
}

// checkFaultTime checks that the failed call op overlapped a restart of
// the server, or began at most chaosFaultSlack after one was over: the last
// restart to begin before the call returned.
func (k *checker) checkFaultTime(op *loggedOp) {
	i, _ := slices.BinarySearchFunc(k.restarts, op.T1+1, func(r interval, t int64) int { return cmp.Compare(r.from, t) })
	if i > 0 && op.T0 <= k.restarts[i-1].to+chaosFaultSlack.Milliseconds() {
		k.rep.faultLate = max(k.rep.faultLate, op.T0-k.restarts[i-1].to)
		return
	}
	k.bad("%s: %s.%d's %s of token %d failed at [%d, %d], while the server was up: %s",
		op.Job, op.inc.name, op.inc.n, op.Ev, op.Token, op.T0, op.T1, op.Fault)
}

// checkReading checks that a call's recorded clock reading lies in its
// real-time window.
func (k *checker) checkReading(op *loggedOp) {
	if op.At != 0 && (op.At < op.T0 || op.At > op.T1) {
		k.bad("%s: %s of token %d read the clock at %d, outside its call [%d, %d]", op.Job, op.Ev, op.Token, op.At, op.T0, op.T1)
	}
}

func (k *checker) count(call string, ok bool) {
	if ok {
		k.rep.accepted[call]++
	} else {
		k.rep.refused[call]++
	}
}

// buildGenerations lists each ID's generations in enqueue order — the
// producer's, the operator's logged enqueues, and one a killed operator's
// last intent may have made if something shows it did — and gives each
// logged claim to the generation it was made in.
func (k *checker) buildGenerations(jobs []leaseq.Job) {
	for _, j := range jobs {
		jl := k.job(j.ID)
		if len(jl.gens) > 0 {
			k.bad("%s: enqueued twice by the producer", j.ID)
			continue
		}
		jl.gens = append(jl.gens, &generation{job: j})
		k.order = append(k.order, j.ID)
	}
	for _, e := range k.enqueues {
		if !e.OK && e.Raced {
			continue
		}
		if !e.OK {
			k.bad("%s: enqueued again at %d and refused as %s, but List had shown it purged", e.Job, e.At, e.Err)
			continue
		}
		k.addGeneration(e.histEvent, &generation{enq: e, from: e.At})
	}
	for _, s := range k.spares {
		if s.kind == "enqueue" {
			k.addGeneration(s.ev, &generation{from: s.from, unsure: s})
		}
	}
	for _, id := range k.order {
		jl := k.jobs[id]
		slices.SortStableFunc(jl.gens, func(a, b *generation) int { return cmp.Compare(a.from, b.from) })
		for _, l := range jl.lives {
			l.gen = k.genOfClaim(jl, l)
		}
		for _, c := range jl.cancels {
			if lo, hi := c.bounds(); c.OK && jl.genAt(lo) != nil {
				g := jl.genAt(lo)
				g.cancels = append(g.cancels, c)
				g.endings = append(g.endings, &ending{what: "cancel", lo: lo, hi: hi, status: leaseq.StatusQuarantined, reason: c.Reason})
			}
		}
		jl.gens = slices.DeleteFunc(jl.gens, func(g *generation) bool { return g.unsure != nil && !k.evident(jl, g) })
		for _, l := range jl.lives {
			l.gen.lives = append(l.gen.lives, l)
		}
		for _, g := range jl.gens {
			slices.SortFunc(g.lives, func(a, b *life) int { return cmp.Compare(a.token, b.token) })
		}
	}
}

// genOfClaim is the generation the claim of l was made in. On SQLite a
// claim reads the clock under the lock, after every commit before it, so
// it is the last generation enqueued at or before the claim's instant. On
// PostgreSQL a claim reads the clock before its statement reaches the rows
// it takes, and a job enqueued claimable at once may be claimed at any
// instant (as after the clock stepped back: rules 1 and 15 in docs/rules.md), so a claim may take a generation enqueued after its
// instant. The audit's commit order tells: the claim is of the generation
// of the ID's last insert before it — if the audit has the claim as it
// was logged. Such claims are counted.
func (k *checker) genOfClaim(jl *jobLog, l *life) *generation {
	lo, _ := l.claim.bounds()
	byInstant := jl.genAt(lo)
	a, ok := k.auditClaim[opKey(jl.id, "", l.token)]
	if !ok || a.Owner != l.claim.Owner || a.At != l.claim.At || a.Attempts != l.claim.Attempt {
		return byInstant
	}
	var insert *auditRow
	for i, x := range k.auditOf[jl.id] {
		if x.OldStatus == "" && x.Seq < a.Seq {
			insert = &k.auditOf[jl.id][i]
		}
	}
	if insert == nil {
		return byInstant
	}
	g := jl.genAt(insert.At)
	if g != byInstant {
		k.rep.claimsBeforeEnqueue++
	}
	return g
}

func (k *checker) addGeneration(e histEvent, g *generation) {
	g.base = -1
	g.job = leaseq.Job{ID: e.Job, Qty: e.Qty, Payload: []byte(e.Payload), MaxAttempts: e.MaxAttempts}
	if e.Deadline != 0 {
		g.job.Deadline = time.UnixMilli(e.Deadline)
	}
	if e.RunAt != 0 {
		g.job.RunAt = time.UnixMilli(e.RunAt)
	}
	jl := k.jobs[e.Job]
	if jl == nil || len(jl.gens) == 0 {
		k.bad("%s: enqueued again, but the producer never enqueued it", e.Job)
		return
	}
	jl.gens = append(jl.gens, g)
}

// evident reports whether something shows that the unsure enqueue of g
// happened: a claim or cancel after it, or the row holding its payload.
func (k *checker) evident(jl *jobLog, g *generation) bool {
	seen := len(g.cancels) > 0 || jl.row() != nil && string(jl.row().Payload) == string(g.job.Payload)
	for _, l := range jl.lives {
		seen = seen || l.gen == g
	}
	return seen && k.use(g.unsure, "enqueue "+jl.id)
}

func (jl *jobLog) row() *leaseq.State { return jl.final }

// genAt is the generation a call at instant t was made in: the last one
// enqueued at or before t.
func (jl *jobLog) genAt(t int64) *generation {
	var at *generation
	for _, g := range jl.gens {
		if g.from <= t {
			at = g
		}
	}
	return at
}

// genAfter is the generation after g, or nil.
func (jl *jobLog) genAfter(g *generation) *generation {
	for i, x := range jl.gens {
		if x == g && i+1 < len(jl.gens) {
			return jl.gens[i+1]
		}
	}
	return nil
}

// nextClaim is the first logged claim of the ID after token, or nil.
func (jl *jobLog) nextClaim(token int64) *life {
	var next *life
	for tok, l := range jl.lives {
		if tok > token && (next == nil || tok < next.token) {
			next = l
		}
	}
	return next
}

// probePurged enqueues every ID that has no row at the end once more and
// claims it. Its first claim's token is one more than the purged job's
// last (rule 21 in docs/rules.md), which tells how far the ID's
// tokens went even where the last claims left no line — a job whose only
// claim a kill left unlogged, then quarantined by the sweep and purged,
// leaves no other trace. The claim must be its first attempt. It changes
// the queue, so it runs after the rows are read and the chaos is over.
func (k *checker) probePurged(q *leaseq.Queue) {
	ctx := context.Background()
	var probes []leaseq.Job
	for _, id := range k.order {
		if k.jobs[id].row() == nil {
			probes = append(probes, leaseq.Job{ID: id, Payload: []byte("probe")})
		}
	}
	for len(probes) > 0 {
		n := min(len(probes), leaseq.MaxListLimit)
		if err := q.EnqueueBatch(ctx, probes[:n]); err != nil {
			k.t.Fatalf("probing purged IDs: %v", err)
		}
		probes = probes[n:]
	}
	for {
		cs, err := q.ClaimBatch(ctx, "probe", time.Hour, leaseq.MaxListLimit)
		if err != nil {
			k.t.Fatalf("probing purged IDs: %v", err)
		}
		if len(cs) == 0 {
			return
		}
		for _, c := range cs {
			if c.Attempt != 1 {
				k.bad("%s: enqueued again after the run, its first claim is attempt %d", c.ID, c.Attempt)
			}
			k.jobs[c.ID].purgedLast = c.Token - 1
		}
	}
}

// checkJob checks one ID: its tokens, each claim's calls, the claims
// against each other, its cancels, how each generation ended, and its row.
func (k *checker) checkJob(jl *jobLog) {
	k.rep.jobs += len(jl.gens)
	k.rep.reenqueued += len(jl.gens) - 1
	k.checkTokens(jl)
	for _, g := range jl.gens {
		for _, l := range g.lives {
			k.replay(jl, l)
		}
	}
	for _, g := range jl.gens {
		k.checkClaims(jl, g)
	}
	k.checkCancels(jl)
	for i, g := range jl.gens {
		k.checkEnd(jl, g, i == len(jl.gens)-1)
	}
	k.checkRow(jl)
}

// checkTokens checks that each generation's attempts count from its own
// base and that the bases continue: no generation's tokens start at or
// below a token an earlier one handed out.
func (k *checker) checkTokens(jl *jobLog) {
	var before int64 // the highest token the earlier generations are known to have reached
	for i, g := range jl.gens {
		if i == 0 {
			g.base = 0
		}
		for _, l := range g.lives {
			switch b := l.token - int64(l.claim.Attempt); {
			case g.base < 0:
				g.base = b
			case b != g.base:
				k.bad("%s: claim token %d has attempt %d (the job's tokens before it: %d)", jl.id, l.token, l.claim.Attempt, g.base)
			}
		}
		if i > 0 && g.base < 0 && g == jl.gens[len(jl.gens)-1] && jl.row() != nil {
			g.base = jl.row().Token - int64(jl.row().Attempts)
		}
		if i > 0 && g.base >= 0 && g.base < before {
			k.bad("%s: enqueued again at %d after a purge, its tokens start after %d, but the purged job's had reached %d: tokens do not continue",
				jl.id, g.from, g.base, before)
		}
		for _, l := range g.lives {
			before = max(before, l.token)
		}
		before = max(before, g.base)
	}
	if jl.row() == nil && jl.purgedLast < before {
		k.bad("%s: enqueued again after the run, its first claim got token %d, but the purged job's tokens had reached %d: tokens do not continue",
			jl.id, jl.purgedLast+1, before)
	}
}

// replay runs through the calls one claim's holder made, in its order,
// keeping the lease end the accepted ones leave, and checks each against
// the fence.
func (k *checker) replay(jl *jobLog, l *life) {
	g, D := l.gen, l.gen.deadline()
	L := l.claim.LeaseUntil
	var refused *loggedOp
	var accepted []leaseChange
	for _, op := range l.calls {
		k.count(op.Ev, op.OK)
		lo, hi := op.bounds()
		if !op.OK {
			if why := k.fenceClosed(jl, l, hi, seenBy(accepted, lo, L), false); why == "" && !k.cancelledUnlogged(jl, g, hi) {
				k.bad("%s: %s of token %d refused at %s while its lease was live until %d (deadline %d): nothing closed the fence",
					jl.id, op.Ev, l.token, span(lo, hi), L, D)
			}
			refused = op
			continue
		}
		if refused != nil {
			k.bad("%s: %s of token %d accepted at %s after %s of the same claim was refused", jl.id, op.Ev, l.token, span(lo, hi), refused.Ev)
		}
		if why := k.fenceClosed(jl, l, lo, L, true); why != "" {
			k.bad("%s: %s of token %d by %s accepted at %s, but %s", jl.id, op.Ev, l.token, op.Owner, span(lo, hi), why)
		}
		accepted = append(accepted, leaseChange{committed: op.committed, before: L})
		switch op.Ev {
		case "extend":
			L = k.checkExtend(jl, l, op)
		case "release":
			l.release, L = op, lo
			k.releaseEnding(jl, l, op)
		case "finish":
			l.ending = &ending{what: "finish", lo: lo, hi: hi, status: leaseq.StatusDone, life: l}
		case "fail":
			l.ending = &ending{what: "fail", lo: lo, hi: hi, status: leaseq.StatusQuarantined, reason: op.Reason, life: l}
		}
		if l.ending != nil && !slices.Contains(g.endings, l.ending) {
			g.endings = append(g.endings, l.ending)
		}
	}
	l.leaseEnd = L
}

// leaseChange is an accepted call of a claim, as replay judges the calls
// after it: when it committed (0: not known, as for every call not taken
// from the audit) and the lease end before it.
type leaseChange struct {
	committed, before int64
}

// chaosVisibleSlack bounds how long after the audit's reading of the
// server's clock at COMMIT (auditRow.Committed) the change may still be
// unseen by other transactions: the commit record's flush (fsync is on)
// and a server process descheduled before it makes the change visible.
const chaosVisibleSlack = 100 * time.Millisecond

// seenBy is the lease end L that a call which judged no earlier than lo
// may have seen, given the accepted calls of its claim before it: the
// lease end before the first of them that may not yet have been visible
// then (PostgreSQL's pools: auditRow says why), else L.
func seenBy(accepted []leaseChange, lo, L int64) int64 {
	for _, c := range accepted {
		if c.committed != 0 && c.committed >= lo-chaosVisibleSlack.Milliseconds() {
			return c.before
		}
	}
	return L
}

func span(lo, hi int64) string {
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("[%d, %d]", lo, hi)
}

// fenceClosed says what had closed the fence of claim l by instant T, with
// lease end L, or "" if nothing known had. For an accepted call (T its
// earliest possible instant) only what certainly came before T counts; for
// a refused one (T its latest) whatever may have.
func (k *checker) fenceClosed(jl *jobLog, l *life, T, L int64, accepted bool) string {
	before := func(lo, hi int64) bool {
		if accepted {
			return hi < T
		}
		return lo <= T
	}
	if l.ending != nil {
		return fmt.Sprintf("its own %s at %s had ended the job", l.ending.what, span(l.ending.lo, l.ending.hi))
	}
	if n := jl.genAfter(l.gen); n != nil && before(n.from, n.from) {
		return fmt.Sprintf("the job was purged and enqueued again at %d", n.from)
	}
	for _, c := range l.gen.cancels {
		if lo, hi := c.bounds(); before(lo, hi) {
			return fmt.Sprintf("the job was cancelled at %s", span(lo, hi))
		}
	}
	if n := jl.nextClaim(l.token); n != nil {
		if lo, hi := n.claim.bounds(); before(lo, hi) {
			return fmt.Sprintf("token %d was claimed at %s", n.token, span(lo, hi))
		}
	}
	switch D := l.gen.deadline(); {
	case T >= L:
		return fmt.Sprintf("its lease ended at %d", L)
	case D != 0 && T >= D:
		return fmt.Sprintf("its deadline %d had passed", D)
	}
	return ""
}

// cancelledUnlogged reports whether a killed operator's last intent may
// have cancelled the job of g by T, and if so takes it to have.
func (k *checker) cancelledUnlogged(jl *jobLog, g *generation, T int64) bool {
	for _, s := range k.spares {
		if s.kind == "cancel" && s.ev.Job == jl.id && s.from <= T && jl.genAt(s.from) == g && k.use(s, "cancel "+jl.id) {
			k.unloggedEnding(g, &ending{what: "unlogged cancel", lo: s.from, hi: never, status: leaseq.StatusQuarantined, reason: s.ev.Reason})
			return true
		}
	}
	return false
}

// unloggedEnding records e as g's ending once.
func (k *checker) unloggedEnding(g *generation, e *ending) {
	for _, x := range g.endings {
		if x.what == e.what && x.reason == e.reason {
			return
		}
	}
	g.endings = append(g.endings, e)
}

// checkExtend checks an accepted extension and returns the lease end it
// set.
func (k *checker) checkExtend(jl *jobLog, l *life, op *loggedOp) int64 {
	D := l.gen.deadline()
	lo, hi := op.bounds()
	least, most := capAt(lo+op.Lease, D), capAt(hi+op.Lease, D)
	switch {
	case D != 0 && op.LeaseUntil > D:
		k.bad("%s: extend of token %d at %s set lease_until %d, past its deadline %d", jl.id, l.token, span(lo, hi), op.LeaseUntil, D)
	case op.LeaseUntil < least || op.LeaseUntil > most:
		k.bad("%s: extend of token %d by %dms at %s set lease_until %d, want min(at+lease, deadline) = %s",
			jl.id, l.token, op.Lease, span(lo, hi), op.LeaseUntil, span(least, most))
	}
	return op.LeaseUntil
}

// capAt is min(t, deadline), deadline 0 meaning none.
func capAt(t, deadline int64) int64 {
	if deadline != 0 && deadline < t {
		return deadline
	}
	return t
}

// releaseEnding records the quarantine an accepted release caused, if it
// did: its attempts were used up, or its delay reached the deadline.
func (k *checker) releaseEnding(jl *jobLog, l *life, op *loggedOp) {
	lo, hi := op.bounds()
	D, attempt := l.gen.deadline(), int64(l.claim.Attempt)
	e := &ending{what: "release", lo: lo, hi: hi, status: leaseq.StatusQuarantined, life: l}
	past := "released past the deadline: "
	if refunds(op) {
		past = "snoozed past the deadline: "
	}
	switch {
	case !refunds(op) && attempt >= l.gen.maxAttemptsBefore(l.token):
		e.reason = "max attempts reached, released: " + op.Reason
	case D != 0 && lo+op.Delay >= D:
		e.reason = past + op.Reason
	case D != 0 && hi+op.Delay >= D:
		e.reason, e.maybe = past+op.Reason, true
	default:
		return
	}
	l.ending = e
}

// freeFrom is the earliest instant the job of l may be claimed again after
// its logged calls, and what sets it.
func (l *life) freeFrom() (int64, string) {
	if l.release != nil {
		lo, _ := l.release.bounds()
		return lo + l.release.Delay, fmt.Sprintf("the release of token %d at %d delayed it by %dms, until %d",
			l.token, lo, l.release.Delay, lo+l.release.Delay)
	}
	return l.leaseEnd, fmt.Sprintf("token %d of %s was leased until %d", l.token, l.claim.Owner, l.leaseEnd)
}

// checkClaims checks each logged claim of g: its lease, attempt, run_at,
// and that it came after the previous claim's lease or release delay ended
// and not after the generation was cancelled or ended.
func (k *checker) checkClaims(jl *jobLog, g *generation) {
	D, runAt := g.deadline(), unixMS(g.job.RunAt)
	var prev *life
	for _, l := range g.lives {
		cl := l.claim
		lo, hi := cl.bounds()
		least, most := capAt(lo+chaosLease.Milliseconds(), D), capAt(hi+chaosLease.Milliseconds(), D)
		switch {
		case cl.Deadline != D:
			k.bad("%s: claim of token %d says deadline %d, the job has %d", jl.id, l.token, cl.Deadline, D)
		case cl.LeaseUntil < least || cl.LeaseUntil > most:
			k.bad("%s: token %d at %s has lease_until %d, want min(at+lease, deadline) = %s", jl.id, l.token, span(lo, hi), cl.LeaseUntil, span(least, most))
		case int64(cl.Attempt) > g.maxAttemptsBefore(l.token):
			k.bad("%s: token %d is attempt %d of %d", jl.id, l.token, cl.Attempt, g.maxAttemptsBefore(l.token))
		case runAt != 0 && hi < runAt:
			k.bad("%s: token %d claimed at %s, before its run_at %d", jl.id, l.token, span(lo, hi), runAt)
		}
		for _, c := range g.cancels {
			if clo, chi := c.bounds(); chi < lo {
				k.bad("%s: token %d claimed at %s, after the job was cancelled at %s", jl.id, l.token, span(lo, hi), span(clo, chi))
			}
		}
		for _, e := range g.endings {
			if e.life != nil && e.life.token < l.token && !e.maybe && e.hi <= lo {
				k.bad("%s: token %d claimed at %s, after the %s of token %d at %s had ended the job",
					jl.id, l.token, span(lo, hi), e.what, e.life.token, span(e.lo, e.hi))
			}
		}
		if prev != nil {
			k.checkHandover(jl, prev, l)
		}
		prev = l
	}
}

// checkHandover checks that the claim next came no earlier than the job
// was free again after the claim prev (an earlier token of the same
// generation). A killed holder of prev may have released the job without
// a line; that explains an earlier claim if it came after the deliver line
// plus the planned delay, and the release could have left the job pending.
func (k *checker) checkHandover(jl *jobLog, prev, next *life) {
	free, why := prev.freeFrom()
	lo, hi := next.claim.bounds()
	if hi >= free {
		return
	}
	if s := k.holderSpare(jl, prev, "release"); s != nil && hi >= s.from+s.ev.Delay &&
		int64(prev.claim.Attempt) < prev.gen.maxAttemptsBefore(prev.token) && k.use(s, "release") {
		return
	}
	k.bad("%s: token %d claimed by %s at %s, while %s: overlap", jl.id, next.token, next.claim.Owner, span(lo, hi), why)
}

// holderSpare is the unlogged call of kind the killed holder of l may have
// made with it, or nil.
func (k *checker) holderSpare(jl *jobLog, l *life, kind string) *spare {
	if l == nil || l.claim == nil {
		return nil
	}
	for _, s := range k.spares {
		if s.inc == l.claim.inc && s.kind == kind && s.ev.Job == jl.id && s.ev.Token == l.token {
			return s
		}
	}
	return nil
}

// checkCancels checks each logged cancel against the generation it was
// made in: accepted only while the job was pending or leased, refused only
// once it had ended.
func (k *checker) checkCancels(jl *jobLog) {
	for _, c := range jl.cancels {
		lo, hi := c.bounds()
		g := jl.genAt(lo)
		if c.OK {
			if g == nil {
				k.bad("%s: cancel accepted at %s before it was enqueued", jl.id, span(lo, hi))
				continue
			}
			for _, e := range g.endings {
				if (e.what != "cancel" && !e.maybe && e.hi <= lo) || (e.what == "cancel" && e.hi < lo) {
					k.bad("%s: cancel accepted at %s, but the %s at %s had ended the job", jl.id, span(lo, hi), e.what, span(e.lo, e.hi))
				}
			}
			continue
		}
		if g != nil && !k.endedBy(jl, g, hi) {
			k.bad("%s: cancel refused (%s) at %s while the job was pending or leased", jl.id, c.Err, span(lo, hi))
		}
	}
}

// endedBy reports whether g may have ended by T: an ending at or before T,
// a quarantine sweep due by then, or an unlogged call that would end it.
func (k *checker) endedBy(jl *jobLog, g *generation, T int64) bool {
	for _, e := range g.endings {
		if e.lo <= T {
			return true
		}
	}
	return k.sweepFrom(jl, g) <= T || k.endedUnlogged(jl, g, T)
}

// sweepFrom is the earliest instant a claim's quarantine sweep may have
// taken g: its deadline, or the end of its last lease once its attempts
// were used up.
func (k *checker) sweepFrom(jl *jobLog, g *generation) int64 {
	from := int64(never)
	if D := g.deadline(); D != 0 {
		from = D
	}
	last := g.lastToken(jl)
	if g.base < 0 {
		// Only unlogged claims, if any: when, and how many, is unknown.
		if last > jl.tokensBefore(g) {
			return min(from, g.from)
		}
		return from
	}
	if last-g.base < g.maxAttemptsBefore(last+1) {
		return from
	}
	if l := jl.lives[last]; l != nil && l.gen == g {
		if l.release == nil {
			from = min(from, l.leaseEnd)
		}
		return from
	}
	// The last claim is not logged: it came after every logged one ended.
	after := g.from
	if n := len(g.lives); n > 0 {
		after, _ = g.lives[n-1].freeFrom()
	}
	return min(from, after)
}

// lastToken is the last token g may have handed out: the next
// generation's base where that is known, else the first known base of a
// later one, else the ID's last token (the row's, or the probe's) — an
// upper bound where the claims in between left no line.
func (g *generation) lastToken(jl *jobLog) int64 {
	last := g.base
	for _, l := range g.lives {
		last = max(last, l.token)
	}
	for _, x := range jl.gens[slices.Index(jl.gens, g)+1:] {
		if x.base >= 0 {
			return max(last, x.base)
		}
	}
	if r := jl.row(); r != nil {
		return max(last, r.Token)
	}
	return max(last, jl.purgedLast)
}

// tokensBefore is the highest token a logged claim of a generation before
// g has.
func (jl *jobLog) tokensBefore(g *generation) int64 {
	var most int64
	for _, l := range jl.lives {
		if l.gen != g && l.gen.from < g.from {
			most = max(most, l.token)
		}
	}
	return most
}

// endedUnlogged reports whether an unlogged call of a killed incarnation
// may have ended g by T — the planned finish, fail or release of the
// holder of its last logged claim, or a cancel named by a killed
// operator's last intent — and if so records it as g's ending.
func (k *checker) endedUnlogged(jl *jobLog, g *generation, T int64) bool {
	if n := len(g.lives); n > 0 {
		l := g.lives[n-1]
		for _, kind := range []string{"finish", "fail", "release"} {
			if kind == "release" && int64(l.claim.Attempt) < g.maxAttemptsBefore(l.token) && g.deadline() == 0 {
				continue // such a release puts the job back pending
			}
			if s := k.holderSpare(jl, l, kind); s != nil && s.from <= T && k.use(s, kind) {
				k.unloggedEnding(g, &ending{what: "unlogged " + kind, lo: s.from, hi: never, life: l, status: statusAfter(kind)})
				return true
			}
		}
	}
	return k.cancelledUnlogged(jl, g, T)
}

// statusAfter is the status a call that ends a job leaves it in.
func statusAfter(call string) leaseq.Status {
	if call == "finish" {
		return leaseq.StatusDone
	}
	return leaseq.StatusQuarantined
}

// checkEnd checks that g ended once, and, unless the row shows how the
// last generation ended, that it ended at all before it was purged.
func (k *checker) checkEnd(jl *jobLog, g *generation, last bool) {
	var sure []string
	finishes := 0
	for _, e := range g.endings {
		if !e.maybe && !strings.HasPrefix(e.what, "unlogged") {
			sure = append(sure, fmt.Sprintf("%s at %s", e.what, span(e.lo, e.hi)))
		}
		if e.what == "finish" {
			finishes++
		}
	}
	switch {
	case finishes > 1:
		k.bad("%s: %d accepted finishes", jl.id, finishes)
	case len(sure) > 1:
		k.bad("%s: ended %d times: %s", jl.id, len(sure), strings.Join(sure, ", "))
	}
	if last && jl.row() != nil {
		return
	}
	endLo := k.earliestEnd(jl, g)
	if endLo == never {
		if last {
			k.bad("%s: no row, and nothing ended it (no finish, fail, release, cancel or quarantine) before a purge could: lost", jl.id)
		} else {
			k.bad("%s: enqueued again at %d, but nothing ended the job before (no finish, fail, release, cancel or quarantine): purged while open?",
				jl.id, jl.genAfter(g).from)
		}
		return
	}
	k.rep.purged++
	if !k.purgedAfter(jl, g, endLo) {
		k.bad("%s: gone, but no purge could have deleted it: none was of jobs older than %d, when it ended at the earliest", jl.id, endLo)
	}
}

// earliestEnd is the earliest instant g may have ended: its first ending,
// else the quarantine sweep's, else an unlogged call's; never if nothing
// may have ended it.
func (k *checker) earliestEnd(jl *jobLog, g *generation) int64 {
	if len(g.endings) == 0 {
		if from := k.sweepFrom(jl, g); from != never {
			return from
		}
		k.endedUnlogged(jl, g, never)
	}
	end := int64(never)
	for _, e := range g.endings {
		end = min(end, e.lo)
	}
	return end
}

// purgedAfter reports whether a purge could have deleted g, which ended at
// endLo at the earliest: one of jobs older than after endLo, started before
// the next generation was enqueued, logged or unlogged.
func (k *checker) purgedAfter(jl *jobLog, g *generation, endLo int64) bool {
	// The purge began before the next generation was written: before its
	// enqueue returned (T1). Not before the enqueue's clock reading (from):
	// an Enqueue may read its clock before it waits for the writer, and a
	// purge that began meanwhile still deletes the old row first.
	until := int64(never)
	if n := jl.genAfter(g); n != nil {
		until = n.from
		if n.enq != nil {
			until = max(until, n.enq.T1)
		}
	}
	for _, p := range k.purges {
		if p.Before > endLo && p.T0 <= until {
			return true
		}
	}
	for _, s := range k.spares {
		if s.kind == "purge" && s.ev.Before > endLo && s.from <= until && k.use(s, "purge") {
			return true
		}
	}
	return false
}

// checkRow checks the final row of the ID against its last generation.
func (k *checker) checkRow(jl *jobLog) {
	r := jl.row()
	if r == nil || len(jl.gens) == 0 {
		return
	}
	g := jl.gens[len(jl.gens)-1]
	if !bytes.Equal(r.Payload, g.job.Payload) {
		k.bad("%s: the row holds payload %q, but the ID's last enqueue was of %q", jl.id, r.Payload, g.job.Payload)
	}
	if r.Qty != g.job.Qty {
		k.bad("%s: qty %d, enqueued %d", jl.id, r.Qty, g.job.Qty)
	}
	switch r.Status {
	case leaseq.StatusDone:
		k.rep.done++
	case leaseq.StatusQuarantined:
		k.rep.quarantined++
		k.rep.quarantines = append(k.rep.quarantines, fmt.Sprintf("%s after %d/%d attempts: %s", jl.id, r.Attempts, r.MaxAttempts, r.Reason))
	default:
		k.bad("%s: %s at the end: stuck", jl.id, r.Status)
		return
	}
	if g.base >= 0 && r.Token-g.base != int64(r.Attempts) {
		k.bad("%s: token %d but attempts %d (the job's tokens before it: %d)", jl.id, r.Token, r.Attempts, g.base)
	}
	fin := jl.lives[r.Token]
	if fin != nil && fin.gen != g {
		fin = nil
	}
	if fin != nil {
		if r.Owner != fin.claim.Owner {
			k.bad("%s: the row's owner is %s, but token %d was claimed by %s", jl.id, r.Owner, r.Token, fin.claim.Owner)
		}
		k.checkRowLease(jl, fin, r)
	}
	for _, e := range g.endings {
		if e.what == "finish" && (e.life.token != r.Token || r.Status != leaseq.StatusDone) {
			k.bad("%s: accepted finish of token %d, but the row has token %d, status %s", jl.id, e.life.token, r.Token, r.Status)
		}
	}
	if r.Status == leaseq.StatusDone {
		k.checkDone(jl, g, fin, r)
	} else {
		k.checkQuarantined(jl, g, fin, r)
	}
}

// checkRowLease checks the row's lease_until against the calls of the
// final claim: the claim's or last accepted extension's lease end, or the
// release's instant. An unlogged extension or release of a killed holder
// may explain a later one.
func (k *checker) checkRowLease(jl *jobLog, fin *life, r *leaseq.State) {
	got, want := unixMS(r.LeaseUntil), fin.leaseEnd
	if fin.release != nil {
		if lo, hi := fin.release.bounds(); lo <= got && got <= hi {
			return
		}
	}
	switch s := k.holderSpare(jl, fin, "extend"); {
	case got == want:
		return
	case s != nil && got > want && got >= capAt(s.from+chaosLease.Milliseconds(), fin.gen.deadline()) && k.use(s, "extend"):
		return
	}
	if s := k.holderSpare(jl, fin, "release"); s != nil && got >= s.from && k.use(s, "release") {
		return
	}
	k.bad("%s: the row's lease_until is %d, but the accepted calls of token %d leave %d", jl.id, got, fin.token, want)
}

// checkDone checks a done row: a finish of its final token was accepted
// (or a killed holder made it unlogged), and its reason is the last
// accepted release's, as Finish keeps the reason.
func (k *checker) checkDone(jl *jobLog, g *generation, fin *life, r *leaseq.State) {
	finished := false
	for _, e := range g.endings {
		finished = finished || e.what == "finish" || e.what == "unlogged finish"
	}
	if !finished {
		if s := k.holderSpare(jl, fin, "finish"); s != nil && k.use(s, "finish") {
			k.unloggedEnding(g, &ending{what: "unlogged finish", lo: s.from, hi: never, life: fin, status: leaseq.StatusDone})
		} else {
			k.bad("%s: done, but no accepted finish is logged or can be accounted for", jl.id)
		}
	}
	want, after := "", int64(0)
	for _, l := range g.lives {
		if l.release != nil {
			want, after = l.release.Reason, l.token
		}
	}
	if r.Reason == want {
		return
	}
	for _, l := range g.lives {
		if s := k.holderSpare(jl, l, "release"); s != nil && l.token > after && r.Reason == chaosReleaseReason(jl.id, l.token) && k.use(s, "release") {
			return
		}
	}
	k.bad("%s: done with reason %q, but the last accepted release left %q", jl.id, r.Reason, want)
}

// checkQuarantined checks that a quarantined row's reason is that of the
// call that ended the job, or of the claim's quarantine sweep when no call
// did, or of an unlogged call a killed incarnation may have made.
func (k *checker) checkQuarantined(jl *jobLog, g *generation, fin *life, r *leaseq.State) {
	if r.Reason == "" {
		k.bad("%s: quarantined without a reason", jl.id)
	}
	var sure *ending
	for _, e := range g.endings {
		if e.reason == r.Reason {
			return
		}
		if !e.maybe && !strings.HasPrefix(e.what, "unlogged") && e.status == leaseq.StatusQuarantined {
			sure = e
		}
	}
	if sure != nil {
		k.bad("%s: quarantined with reason %q, but the %s at %s ended it with %q", jl.id, r.Reason, sure.what, span(sure.lo, sure.hi), sure.reason)
		return
	}
	if k.sweepReason(g, r) {
		return
	}
	candidates := map[string]string{"fail": chaosFailReason(jl.id, r.Token), "release": ""}
	if fin != nil {
		reason := chaosReleaseReason(jl.id, fin.token)
		if int64(fin.claim.Attempt) >= g.maxAttemptsBefore(fin.token) {
			candidates["release"] = "max attempts reached, released: " + reason
		} else {
			candidates["release"] = "released past the deadline: " + reason
		}
	}
	for kind, reason := range candidates {
		if s := k.holderSpare(jl, fin, kind); s != nil && r.Reason == reason && k.use(s, kind) {
			k.unloggedEnding(g, &ending{what: "unlogged " + kind, lo: s.from, hi: never, life: fin, status: r.Status, reason: reason})
			return
		}
	}
	for _, s := range k.spares {
		if s.kind == "cancel" && s.ev.Job == jl.id && s.ev.Reason == r.Reason && k.use(s, "cancel "+jl.id) {
			k.unloggedEnding(g, &ending{what: "unlogged cancel", lo: s.from, hi: never, status: r.Status, reason: r.Reason})
			return
		}
	}
	k.bad("%s: quarantined with reason %q, which no accepted call explains", jl.id, r.Reason)
}

// sweepReason reports whether the row's reason is one a claim's
// quarantine sweep writes, with the row's own figures.
func (k *checker) sweepReason(g *generation, r *leaseq.State) bool {
	if D := g.deadline(); D != 0 &&
		r.Reason == fmt.Sprintf("deadline passed at %d (unix ms), %d of %d attempts used", D, r.Attempts, r.MaxAttempts) {
		return true
	}
	return int64(r.Attempts) >= g.maxAttemptsBefore(never) &&
		r.Reason == fmt.Sprintf("max attempts reached: %d of %d, last lease ended at %d (unix ms)", r.Attempts, r.MaxAttempts, unixMS(r.LeaseUntil))
}

// accountForUnloggedClaims matches the tokens missing from the histories
// with killed workers whose last line is one after which a claim comes
// next: the final token of a row needs one with the row's owner name, any
// other token any one. The constrained ones are matched first.
func (k *checker) accountForUnloggedClaims() {
	unconstrained := 0
	for _, id := range k.order {
		jl := k.jobs[id]
		var n int64
		for tok := range jl.lives {
			n = max(n, tok)
		}
		for _, g := range jl.gens {
			n = max(n, g.base)
		}
		r := jl.row()
		if r != nil {
			n = max(n, r.Token)
		}
		n = max(n, jl.purgedLast)
		k.rep.claims += int(n)
		for tok := int64(1); tok <= n; tok++ {
			if jl.lives[tok] != nil {
				continue
			}
			k.rep.unloggedClaims++
			if r == nil || tok != r.Token {
				unconstrained++
			} else if !k.takeSpareClaim(r.Owner, id, tok) {
				k.bad("%s: final token %d (owner %s) has no logged claim and no killed %s incarnation to account for it", id, tok, r.Owner, r.Owner)
			}
		}
	}
	for ; unconstrained > 0 && k.takeSpareClaim("", "", 0); unconstrained-- {
	}
	if unconstrained > 0 {
		k.bad("%d tokens have no logged claim and no killed incarnation left to account for them", unconstrained)
	}
}

// takeSpareClaim uses up a killed worker that can account for an unlogged
// claim (of token of id, if known), named name if name is not empty.
func (k *checker) takeSpareClaim(name, id string, token int64) bool {
	for _, s := range k.spares {
		if s.kind == "claim" && s.used == "" && (name == "" || s.inc.name == name) {
			return k.use(s, fmt.Sprint("claim ", id, " ", token))
		}
	}
	return false
}

// checkPurges checks that each purge deleted at least the jobs List had
// just shown it must, and counts them.
func (k *checker) checkPurges() {
	for _, p := range k.purges {
		k.rep.purges++
		k.rep.deleted += p.Deleted
		if p.Deleted < p.Listed {
			k.bad("purge of %v before %d deleted %d jobs, fewer than the %d List showed as due for it", p.Statuses, p.Before, p.Deleted, p.Listed)
		}
	}
}

// checkReceiver checks what the receiver got against the histories and
// the generations.
func (k *checker) checkReceiver(rcv *receiver) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	received := map[string]string{}
	for _, d := range rcv.deliveries {
		if d.plan == "finish" {
			k.rep.deliveries++
		} else {
			k.rep.failed++
		}
		key := opKey(d.job, d.owner, d.token)
		received[key] = d.plan
		jl := k.jobs[d.job]
		var l *life
		if jl != nil {
			l = jl.lives[d.token]
		}
		switch {
		case l == nil || l.claim.Owner != d.owner:
			k.bad("receiver got %s token %d from %s, which has no logged claim", d.job, d.token, d.owner)
		case l.gen != nil && d.payload != string(l.gen.job.Payload):
			k.bad("receiver got %s token %d with payload %q, but that claim's job has %q", d.job, d.token, d.payload, l.gen.job.Payload)
		}
	}
	k.rep.repeats = k.rep.deliveries - len(rcv.qty)
	for key, plan := range k.delivered {
		if got, ok := received[key]; !ok {
			k.bad("logged delivery %s never reached the receiver", key)
		} else if got != plan {
			k.bad("logged delivery %s planned %s, the receiver got %s", key, plan, got)
		}
	}
	k.checkReceived(rcv)
}

// checkReceived checks the receiver's distinct jobs and total, and that
// every job that ended done was delivered.
func (k *checker) checkReceived(rcv *receiver) {
	sum := 0
	for key, qty := range rcv.qty {
		id, payload, _ := strings.Cut(key, "\x00")
		g := k.genOf(id, payload)
		if g == nil {
			k.bad("receiver got unknown job %s with payload %q", id, payload)
			continue
		}
		if qty != g.job.Qty {
			k.bad("%s: receiver recorded qty %d, the job has %d", id, qty, g.job.Qty)
		}
		sum += g.job.Qty
	}
	if sum != rcv.total {
		k.bad("receiver total %d, want %d, the sum of the qty of the %d distinct delivered jobs", rcv.total, sum, len(rcv.qty))
	}
	for _, id := range k.order {
		jl := k.jobs[id]
		for i, g := range jl.gens {
			done := i == len(jl.gens)-1 && jl.row() != nil && jl.row().Status == leaseq.StatusDone
			for _, e := range g.endings {
				done = done || e.what == "finish" || e.what == "unlogged finish"
			}
			if _, ok := rcv.qty[jobKey(id, string(g.job.Payload))]; done && !ok {
				k.bad("%s: done but never delivered", id)
			}
		}
	}
}

// genOf is the generation of id with payload, or nil.
func (k *checker) genOf(id, payload string) *generation {
	if jl := k.jobs[id]; jl != nil {
		for _, g := range jl.gens {
			if string(g.job.Payload) == payload {
				return g
			}
		}
	}
	return nil
}

// readHistory reads a history file. A last line that does not parse is a
// torn write of a killed process; any other bad line is an error.
func readHistory(path string) ([]histEvent, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var evs []histEvent
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	torn := false
	for sc.Scan() {
		if torn {
			return nil, false, fmt.Errorf("%s: unparsable line before the last", path)
		}
		var e histEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			torn = true
			continue
		}
		evs = append(evs, e)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		torn = true
	}
	return evs, torn, sc.Err()
}

// The records of Work the checker reads, by message.
const (
	workExtensionRefused = "leaseq: extension refused; the job is no longer this handler's"
	workLeaseEnded       = "leaseq: lease ended before the handler returned"
	workExtendFailed     = "leaseq: extending a lease failed"
	workResultRefused    = "leaseq: result refused; the lease was lost"
	workRecordFailed     = "leaseq: recording a result failed"
	workRecordRetry      = "leaseq: recording a result failed; retrying"
	workClaimFailed      = "leaseq: claiming failed; retrying"
	workRetentionFailed  = "leaseq: retention pass failed; retrying" // a database fault of the pool's retention (rule 55)
	workPanicked         = "leaseq: handler panicked"
	workRecorded         = "leaseq: job " // + the outcome, at Debug: the result was recorded
)

// poolLog is what a pool incarnation logged besides its handlers' lines.
type poolLog struct {
	inc         *incarnation
	gaps        []interval  // the observer's
	shutdown    int64       // when it began shutting down; 0: it did not
	delivers    []*loggedOp // indexed once the claims are
	claimFaults []int64     // when Work logged that a claim failed
	claims      []int64     // the instants of its audited claims
}

// workRun is one handler of a pool: its lines and Work's records about its
// claim.
type workRun struct {
	inc    *incarnation
	run    histEvent
	ctxEnd *histEvent // what its watcher saw
	ret    *histEvent
	ftx    *histEvent // its FinishTx's line
	logs   []histEvent
	life   *life // the audited claim it ran; nil if the queue made none
}

// loadPool indexes a pool incarnation's lines: runs first, as Work may log
// about a claim (a lease that ended, say) before its handler's first line
// when the process was stopped between the two.
func (k *checker) loadPool(inc *incarnation, evs []histEvent) {
	pl := &poolLog{inc: inc}
	k.pools[inc] = pl
	k.poolNames[inc.name] = true
	for _, e := range evs {
		if e.Ev != "run" {
			continue
		}
		key := opKey(e.Job, e.Owner, e.Token)
		if prev := k.runs[key]; prev != nil {
			k.bad("%s: token %d run twice, by %s.%d and %s.%d", e.Job, e.Token, prev.inc.name, prev.inc.n, inc.name, inc.n)
			continue
		}
		k.runs[key] = &workRun{inc: inc, run: e}
	}
	for _, e := range evs {
		r := k.runs[opKey(e.Job, e.Owner, e.Token)]
		switch {
		case e.Ev == "gap":
			pl.gaps = append(pl.gaps, interval{e.T0, e.T1})
		case e.Ev == "shutdown":
			pl.shutdown = e.At
		case e.Ev == "deliver":
			pl.delivers = append(pl.delivers, &loggedOp{e, inc})
		case e.Ev == "log" && e.Job == "":
			switch e.Msg {
			case workClaimFailed:
				k.rep.pool.claimFaults++
				pl.claimFaults = append(pl.claimFaults, e.T1)
			case workRetentionFailed:
			default:
				k.bad("%s.%d: Work logged %q (%s) about no job", inc.name, inc.n, e.Msg, e.Level)
			}
		case e.Ev != "ctxend" && e.Ev != "return" && e.Ev != "log" && e.Ev != "finishtx":
		case r == nil && inc.killed && beforeRun(e):
			// The kill came after Work's record and before the handler's
			// first line: a claim whose COMMIT returned after its lease
			// ended is told so at once, maybe before its handler runs.
		case r == nil || r.inc != inc:
			k.bad("%s: %s.%d logged %s of token %d without a run of it", e.Job, inc.name, inc.n, e.Ev, e.Token)
		case e.Ev == "log":
			r.logs = append(r.logs, e)
		case e.Ev == "ctxend" && r.ctxEnd == nil:
			r.ctxEnd = &e
		case e.Ev == "return" && r.ret == nil:
			r.ret = &e
		case e.Ev == "finishtx" && r.ftx == nil:
			r.ftx = &e
		default:
			k.bad("%s: %s.%d logged %s of token %d twice", e.Job, inc.name, inc.n, e.Ev, e.Token)
		}
	}
}

// beforeRun reports whether e is a record Work may write about a claim
// before its handler wrote its first line: of its lease, not its result.
func beforeRun(e histEvent) bool {
	return e.Ev == "log" && (e.Msg == workLeaseEnded || e.Msg == workExtensionRefused || e.Msg == workExtendFailed)
}

// synthesizePools turns the audit and Work's records into the lines a
// loop worker would have written for the pools' calls, so that every check
// of calls holds for them too: each audited claim, extension, finish,
// release and fail of a pool (exact: at the instant its transaction judged
// by), and each refusal Work logged (judged by the record's time). A claim
// goes to the incarnation whose handler ran it or, if none did, to the one
// of the owner's name that was running at its instant (a killed one first,
// where two were). Each claim's calls are indexed in the order they were
// made: by instant, extensions first at a tie — Work's keeper extends one
// call at a time and stops before the result is recorded.
func (k *checker) synthesizePools() {
	calls := map[*life][]*loggedOp{}
	for _, a := range k.audit {
		kind := a.call()
		if kind == "" || !k.poolNames[a.Owner] {
			continue
		}
		if kind == "claim" {
			k.rep.pool.claims++
			if inc := k.claimant(a); inc != nil {
				k.index(&loggedOp{a.event(kind), inc})
				if pl := k.pools[inc]; pl != nil {
					pl.claims = append(pl.claims, a.At)
				}
			} else {
				k.bad("%s: token %d claimed by %s at %d, when no incarnation of it was running", a.ID, a.Token, a.Owner, a.At)
			}
			continue
		}
		l := k.job(a.ID).lives[a.Token]
		if l == nil || l.claim.Owner != a.Owner {
			k.bad("%s: %s of token %d by %s at %d, with no claim of it", a.ID, kind, a.Token, a.Owner, a.At)
			continue
		}
		if kind == "extend" {
			k.rep.pool.extends++
		}
		op := &loggedOp{a.event(kind), l.claim.inc}
		if k.serverClock(a.Owner) {
			op.seq, op.committed = a.Seq, a.Committed
		}
		calls[l] = append(calls[l], op)
	}
	for _, r := range k.runs {
		l := k.job(r.run.Job).lives[r.run.Token]
		if l == nil || l.claim.inc != r.inc {
			continue // checkPools reports it
		}
		r.life, l.run = l, r
		for _, e := range r.logs {
			if op := r.refusal(e); op != nil {
				if op.Ev == "extend" {
					k.rep.pool.refusedExtends++
				}
				calls[l] = append(calls[l], &loggedOp{*op, r.inc})
			}
		}
	}
	for _, ops := range calls {
		slices.SortStableFunc(ops, func(a, b *loggedOp) int {
			return cmp.Or(cmp.Compare(a.madeAt(), b.madeAt()), cmp.Compare(a.order(), b.order()))
		})
		inCommitOrder(ops)
		for _, op := range ops {
			k.index(op)
		}
	}
	for _, pl := range k.pools {
		for _, op := range pl.delivers {
			k.index(op)
		}
	}
}

// inCommitOrder puts the audited calls among ops, which are in the order
// of their instants, in the order they committed (their seqs), in the
// places they take: on the server's clock the two orders may differ
// (auditRow says how). The refusals keep their places.
func inCommitOrder(ops []*loggedOp) {
	var at []int
	var audited []*loggedOp
	for i, op := range ops {
		if op.seq != 0 {
			at, audited = append(at, i), append(audited, op)
		}
	}
	slices.SortStableFunc(audited, func(a, b *loggedOp) int { return cmp.Compare(a.seq, b.seq) })
	for i, op := range audited {
		ops[at[i]] = op
	}
}

// madeAt is where a synthesized call goes in its claim's order: its
// instant if audited, the record's time if refused.
func (op *loggedOp) madeAt() int64 {
	if op.At != 0 {
		return op.At
	}
	return op.T1
}

// order puts extensions before results made at the same instant.
func (op *loggedOp) order() int {
	if op.Ev == "extend" {
		return 0
	}
	return 1
}

// call names the holder's call an audited change is: claim, extend,
// finish, release or fail; or "" for a change no holder makes — an
// operator's cancel, the claims' quarantine sweep — or an enqueue.
func (a auditRow) call() string {
	switch {
	case a.Token == a.OldToken+1 && a.Status == string(leaseq.StatusLeased):
		return "claim"
	case a.Token != a.OldToken || a.OldStatus != string(leaseq.StatusLeased):
		return ""
	case a.Status == string(leaseq.StatusLeased):
		return "extend"
	case a.Status == string(leaseq.StatusDone):
		return "finish"
	case a.Status == string(leaseq.StatusPending) || releaseReason(a.Reason) != "":
		return "release"
	case a.Reason == chaosFailReason(a.ID, a.Token):
		return "fail"
	}
	return ""
}

// releaseReason is the reason a Release was given, if reason is what it
// stores when it quarantines; else "".
func releaseReason(reason string) string {
	for _, prefix := range []string{"max attempts reached, released: ", "released past the deadline: ", "snoozed past the deadline: "} {
		if r, ok := strings.CutPrefix(reason, prefix); ok {
			return r
		}
	}
	return ""
}

// event is the line a loop worker would have written for the call kind.
func (a auditRow) event(kind string) histEvent {
	e := histEvent{Ev: kind, Job: a.ID, Owner: a.Owner, Token: a.Token, OK: kind != "claim",
		instant: instant{At: a.At, T0: a.At, T1: a.At}}
	switch kind {
	case "claim":
		e.Attempt, e.LeaseUntil, e.Deadline = a.Attempts, a.LeaseUntil, a.Deadline
	case "extend":
		e.Lease, e.LeaseUntil = chaosLease.Milliseconds(), a.LeaseUntil
	case "release":
		e.Delay, e.Reason = a.RunAt-a.At, a.Reason
		if a.Status != string(leaseq.StatusPending) {
			e.Reason = releaseReason(a.Reason)
		}
	case "fail":
		e.Reason = a.Reason
	}
	return e
}

// chaosServerLag bounds how long after a pool process last saw a
// statement (it died, or gave the statement up when its drain time was
// over, and then ended) the server may still begin it: the server's clock
// is read as the statement begins (rule 8 in docs/rules.md), once its
// backend, which may wait for a core, reads it.
const chaosServerLag = 100 * time.Millisecond

// serverClock reports whether the process named owner ran on the
// server's clock.
func (k *checker) serverClock(owner string) bool {
	return k.onServerClock != nil && k.onServerClock(owner)
}

// lag is chaosServerLag in milliseconds for a process on the server's
// clock, else 0: a process reads an injected clock before it sends the
// statement.
func (k *checker) lag(owner string) int64 {
	if !k.serverClock(owner) {
		return 0
	}
	return chaosServerLag.Milliseconds()
}

// claimant is the incarnation that made the audited claim a: on the
// server's clock, one may have made a claim whose instant is up to lag
// after its end.
func (k *checker) claimant(a auditRow) *incarnation {
	if r := k.runs[opKey(a.ID, a.Owner, a.Token)]; r != nil {
		return r.inc
	}
	var found *incarnation
	for _, inc := range k.all {
		if inc.name != a.Owner || inc.began > a.At || inc.ended != 0 && inc.ended+k.lag(a.Owner) < a.At {
			continue
		}
		if found == nil || inc.killed && !found.killed {
			found = inc
		}
	}
	return found
}

// workCall is the call a record's outcome names.
func workCall(outcome string) string {
	switch outcome {
	case "finished":
		return "finish"
	case "failed":
		return "fail"
	}
	return "release"
}

// refusal is the refused call Work's record e reports, or nil: an
// extension, or the result; the call ran between the handler's start (its
// return, for the result) and the record.
func (r *workRun) refusal(e histEvent) *histEvent {
	op := histEvent{Job: e.Job, Owner: e.Owner, Token: e.Token, Outcome: e.Outcome, instant: instant{T0: r.run.At, T1: e.T1}}
	switch e.Msg {
	case workExtensionRefused:
		op.Ev, op.Lease = "extend", chaosLease.Milliseconds()
	case workResultRefused:
		op.Ev = workCall(e.Outcome)
		if r.ret != nil {
			op.T0 = r.ret.At
		}
	default:
		return nil
	}
	return &op
}

// undone reports whether the claim of l was given back unrun by the queue
// itself because its caller had left: its next audited change is a
// release of the same token by the same owner with the queue's reason for
// that (pending again, or quarantined where its attempts were used up), and
// no handler ran it.
func (k *checker) undone(id string, l *life) bool {
	for _, a := range k.auditOf[id] {
		if a.OldToken == l.token && a.Token == l.token && a.OldStatus == string(leaseq.StatusLeased) {
			// A release of a job whose attempts are used up quarantines it.
			return a.Owner == l.claim.Owner && a.Status != string(leaseq.StatusDone) &&
				strings.Contains(a.Reason, "claim undone: ")
		}
	}
	return false
}

// claimFailed reports whether the pool's claim at instant at may have
// failed with an error after it committed, so that Work never got its
// jobs: Work logged a claim fault at or after at (or up to lag before it:
// checker.lag), and the pool made no other claim in between (Work logs the fault
// before it claims again).
func (pl *poolLog) claimFailed(at, lag int64) bool {
	for _, f := range pl.claimFaults {
		if f >= at-lag {
			return !slices.ContainsFunc(pl.claims, func(c int64) bool { return at < c && c < f })
		}
	}
	return false
}

// loggedBetween reports whether Work logged msg about the run's claim at a
// time in [lo, hi].
func (r *workRun) loggedBetween(msg string, lo, hi int64) bool {
	return slices.ContainsFunc(r.logs, func(e histEvent) bool { return e.Msg == msg && lo <= e.T1 && e.T1 <= hi })
}

// logged reports whether Work logged msg about the run's claim.
func (r *workRun) logged(msg string) bool {
	return slices.ContainsFunc(r.logs, func(e histEvent) bool { return e.Msg == msg })
}

// checkPools checks what the pools' lines tell beyond their calls, once
// every claim has been replayed.
func (k *checker) checkPools() {
	for _, id := range k.order {
		for _, l := range k.jobs[id].lives {
			inc := l.claim.inc
			switch {
			case inc.role != "chaos-pool" || l.run != nil || inc.killed:
			case k.pools[inc].claimFailed(l.claim.At, k.lag(inc.name)):
				k.rep.pool.claimedFaults++
			case k.undone(id, l):
				k.rep.pool.undone++
			default:
				k.bad("%s: token %d claimed by %s.%d at %d, which was not killed and never ran it", id, l.token, inc.name, inc.n, l.claim.At)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(k.runs)) {
		r := k.runs[key]
		k.rep.pool.runs++
		if r.life == nil {
			k.bad("%s: %s.%d ran token %d, which the queue never handed it", r.run.Job, r.inc.name, r.inc.n, r.run.Token)
			continue
		}
		cl := r.life.claim
		switch {
		case r.run.LeaseUntil != cl.LeaseUntil || r.run.Attempt != cl.Attempt || r.run.Deadline != cl.Deadline:
			k.bad("%s: the handler of token %d got lease_until %d, attempt %d, deadline %d; the queue's claim has %d, %d, %d",
				r.run.Job, r.run.Token, r.run.LeaseUntil, r.run.Attempt, r.run.Deadline, cl.LeaseUntil, cl.Attempt, cl.Deadline)
		case r.run.At < cl.At:
			k.bad("%s: the handler of token %d started at %d, before its claim at %d", r.run.Job, r.run.Token, r.run.At, cl.At)
		case r.ret == nil && !r.inc.killed:
			k.bad("%s: the handler of token %d on %s.%d never returned", r.run.Job, r.run.Token, r.inc.name, r.inc.n)
		}
		k.checkResult(r)
		k.checkRecords(r)
		k.checkCause(r)
		k.checkContext(r)
		k.checkNeighbourLease(r)
	}
}

// checkNeighbourLease: a handler that never stalled keeps its lease while
// another handler of its pool stalls inside FinishTx's function (rule 48:
// the heartbeat never waits for a FinishTx in flight). Its lease may end
// only for a reason of its own or the host's: its process stopped or not
// running, the server restarting, its deadline, a database fault in its
// extension, and on SQLite, where a function holds every writer of the
// file, a stall as long as a lease (nothing can commit meanwhile), another
// process's stall in a function, a read the parent held open, or another
// process stopped (it may have been stopped holding the write lock).
func (k *checker) checkNeighbourLease(r *workRun) {
	lost := slices.IndexFunc(r.logs, func(e histEvent) bool { return e.Msg == workLeaseEnded })
	if lost < 0 || r.run.Style == "stall" || r.run.Style == "stall in fn" || r.life == nil {
		return
	}
	E := r.life.leaseEnd
	from := E - chaosLease.Milliseconds()
	if r.run.At > E-chaosHeartbeat.Milliseconds() {
		return // it started too late for a heartbeat to renew its lease: a claim that committed late
	}
	s := k.stalledBeside(r, from, E)
	if s == nil {
		return
	}
	k.rep.pool.neighbourLost++
	if why := k.leaseLossExcuse(r, s, from, E); why != "" {
		k.rep.pool.neighbourExcused++
		return
	}
	lo, hi, _ := s.finishTxWindow()
	k.bad("%s: token %d's lease on %s.%d ended at %d, while %s's handler (token %d) stalled in FinishTx's function from %d to %d; "+
		"its own handler never stalled, and nothing else held up its heartbeat",
		r.run.Job, r.run.Token, r.inc.name, r.inc.n, E, s.run.Job, s.run.Token, lo, hi)
}

// stalledBeside finds a run of r's pool that stalled inside FinishTx's
// function for all of (from+Heartbeat, to), r's lease's last Heartbeat to
// its end, so that a heartbeat waiting behind it lost r's lease: one that
// began after the next heartbeat after from, or ended well before to,
// left the heartbeat time to renew it.
func (k *checker) stalledBeside(r *workRun, from, to int64) *workRun {
	slack := chaosCtxSlack.Milliseconds()
	for _, key := range slices.Sorted(maps.Keys(k.runs)) {
		s := k.runs[key]
		if s == r || s.inc != r.inc || s.run.Style != "stall in fn" {
			continue
		}
		if lo, hi, ok := s.finishTxWindow(); ok && lo <= from+chaosHeartbeat.Milliseconds()+slack && hi >= to-slack {
			return s
		}
	}
	return nil
}

// leaseLossExcuse says why r's lease, ending at E, could end beside s's
// stalled FinishTx without a fault of the pool's ("" if nothing excuses it).
func (k *checker) leaseLossExcuse(r, s *workRun, from, E int64) string {
	slack := chaosCtxSlack.Milliseconds()
	switch {
	case r.inc.killed && r.inc.killedAt <= E+slack:
		return "killed"
	case k.pools[r.inc].stopped(from, E) > 0:
		return "its process was not running"
	case overlaps(k.restarts, from-chaosFaultSlack.Milliseconds(), E+slack):
		return "the server restarted" // and the pools' connections with it
	case r.run.Deadline != 0 && r.run.Deadline <= E:
		return "its deadline"
	case r.ownFinishTxIn(from, E):
		return "its own FinishTx was in flight, which its fence decides (rule 46)"
	case slices.ContainsFunc(r.logs, func(e histEvent) bool { return e.Msg == workExtendFailed }):
		return "its extension failed"
	case k.sqlite:
		return k.fileExcuse(r, s, from, E)
	}
	return ""
}

// fileExcuse is leaseLossExcuse's part for SQLite, where one writer of the
// file holds up every other.
func (k *checker) fileExcuse(r, s *workRun, from, E int64) string {
	if lo, hi, _ := s.finishTxWindow(); hi-lo >= chaosLease.Milliseconds()-chaosCtxSlack.Milliseconds() {
		return "a stall as long as a lease holds the writer"
	}
	if overlaps(k.reads, from, E) {
		return "a read held open"
	}
	for _, inc := range k.all {
		if inc != r.inc && overlaps(inc.pauses, from, E) {
			return "another process stopped"
		}
	}
	for _, o := range k.runs {
		lo, hi, ok := o.finishTxWindow()
		if o.inc != r.inc && o.run.Style == "stall in fn" && ok && lo <= E && hi >= from {
			return "another process's stall in a function"
		}
	}
	return ""
}

// overlaps reports whether any of ivs overlaps [from, to].
func overlaps(ivs []interval, from, to int64) bool {
	return slices.ContainsFunc(ivs, func(iv interval) bool { return iv.from <= to && iv.to >= from })
}

// checkResult checks what became of a handler's result: recorded (by the
// audit) or refused (by Work's record), not both, or a database fault
// logged; after the handler returned; and as rule 30 asks. A finish the
// handler's own FinishTx made is not Work's: checkFinishTx checks it, and
// after it Work makes no call for a nil (rule 46).
func (k *checker) checkResult(r *workRun) {
	own := r.ownFinish()
	var accepted, refused *loggedOp
	for _, op := range r.life.calls {
		switch {
		case op.Ev == "extend" || op == own:
		case op.OK:
			accepted = op
		default:
			refused = op
		}
	}
	k.checkFinishTx(r, own)
	id, tok := r.run.Job, r.run.Token
	if r.logged(workRecordFailed) || r.logged(workRecordRetry) {
		k.rep.pool.recordFaults++
	}
	if accepted != nil && refused != nil && r.loggedBetween(workRecordRetry, accepted.At, refused.T1) {
		// The try that failed had committed; the next met the fence it
		// had closed.
		k.rep.pool.recordedFaults++
		refused = nil
	}
	switch {
	case accepted != nil && refused != nil:
		k.bad("%s: the result of token %d was accepted at %d and refused at %s", id, tok, accepted.At, span(refused.T0, refused.T1))
	case r.ret == nil:
		return
	case own != nil && r.ret.Plan == "finish" && (accepted != nil || refused != nil):
		k.bad("%s: the FinishTx of token %d finished its job at %d and its handler returned nil, but Work made a call of its own for it",
			id, tok, own.At)
	case accepted == nil && refused == nil && own == nil && !r.logged(workRecordFailed) && !r.inc.killed:
		k.bad("%s: the handler of token %d returned at %d, but Work neither recorded its result nor logged why", id, tok, r.ret.At)
	case accepted != nil && accepted.At < r.ret.At:
		k.bad("%s: the result of token %d was recorded at %d, before its handler returned at %d", id, tok, accepted.At, r.ret.At)
	}
	for _, op := range []*loggedOp{accepted, refused} {
		if op != nil {
			k.checkCall(r, op)
		}
	}
}

// ownFinish is the accepted finish of the run's claim if its handler is a
// FinishTx handler: then it is its FinishTx's, as such a handler returns
// nil only after its FinishTx finished the job.
func (r *workRun) ownFinish() *loggedOp {
	if r.run.Plan != "finishtx" || r.life == nil {
		return nil
	}
	for _, op := range r.life.calls {
		if op.OK && op.Ev == "finish" {
			return op
		}
	}
	return nil
}

// checkFinishTx checks a FinishTx handler's call against what committed
// (rule 46): its claim's finish, own, committed within the call exactly
// when FinishTx returned true; after an error, which must have come while
// the server restarted, it may have or not, as after a kill. A handler
// whose FinishTx did not finish the job must not return nil.
func (k *checker) checkFinishTx(r *workRun, own *loggedOp) {
	if r.run.Plan != "finishtx" {
		return
	}
	p, f := &k.rep.tx, r.ftx
	id, tok := r.run.Job, r.run.Token
	p.runs++
	if f == nil {
		if own != nil && r.ret != nil {
			k.bad("%s: token %d was finished at %d, but its handler returned at %d without a FinishTx", id, tok, own.At, r.ret.At)
		}
		return
	}
	switch {
	case f.Fault != "":
		p.faults++
		k.checkFaultTime(&loggedOp{*f, r.inc})
		if own != nil {
			p.committed++
		}
	case f.OK:
		p.accepted++
	case f.FnRuns == 0:
		p.refusedBefore++
	default:
		p.refusedAfter++
	}
	switch {
	case f.Fault != "" && own != nil && !outcomeUnknown(f.Fault):
		k.bad("%s: FinishTx of token %d answered %q at %s, but the finish of its claim committed at %d (rule 41)", id, tok, f.Fault, span(f.T0, f.T1), own.At)
	case f.OK && own == nil:
		k.bad("%s: FinishTx of token %d returned true at %s, but no finish of it committed", id, tok, span(f.T0, f.T1))
	case !f.OK && f.Fault == "" && own != nil:
		k.bad("%s: FinishTx of token %d was refused at %s, but the finish of its claim committed at %d", id, tok, span(f.T0, f.T1), own.At)
	case own != nil && (own.At < f.T0 || own.At > f.T1):
		k.bad("%s: the finish of token %d committed at %d, outside its handler's FinishTx at %s", id, tok, own.At, span(f.T0, f.T1))
	}
	if !f.OK && r.ret != nil && r.ret.Plan == "finish" {
		k.bad("%s: FinishTx of token %d returned false at %s, but its handler returned nil", id, tok, span(f.T0, f.T1))
	}
}

// ownFinishTxIn reports whether r's own FinishTx was in flight at some
// time in [from, to]: the heartbeat leaves its lease to it.
func (r *workRun) ownFinishTxIn(from, to int64) bool {
	lo, hi, ok := r.finishTxWindow()
	return ok && lo <= to && hi >= from
}

// finishTxWindow is when the run's FinishTx was in flight: from its call to
// its return or, where a kill cut it, from the delivery (right after which
// it is called) to the kill.
func (r *workRun) finishTxWindow() (lo, hi int64, ok bool) {
	switch {
	case r.ftx != nil:
		return r.ftx.T0, r.ftx.T1, true
	case r.run.Plan == "finishtx" && r.ret == nil && r.inc.killed && r.life.deliver != nil:
		return r.life.deliver.T1, r.inc.killedAt, true
	}
	return 0, 0, false
}

// checkEffects checks the effects table against the audit and the FinishTx
// handlers (see checkHistory): each effect is of a claim whose finish
// committed, by its owner, run by a FinishTx handler; no claim has two;
// every claim a FinishTx handler finished has one.
func (k *checker) checkEffects() {
	finished := map[effectRow]auditRow{} // by job and token
	for _, a := range k.audit {
		if a.call() == "finish" {
			finished[effectRow{Job: a.ID, Token: a.Token}] = a
		}
	}
	count := map[effectRow]int{} // by job and token
	for _, e := range k.effects {
		k.rep.tx.effects++
		key := effectRow{Job: e.Job, Token: e.Token}
		if count[key]++; count[key] > 1 {
			continue // reported once, below
		}
		fin, ok := finished[key]
		r := k.runs[opKey(e.Job, e.Owner, e.Token)]
		switch {
		case !ok:
			k.bad("%s: effect of token %d by %s, but that claim did not finish the job: %s", e.Job, e.Token, e.Owner, k.fate(e.Job, e.Token))
		case fin.Owner != e.Owner:
			k.bad("%s: effect of token %d by %s, but %s finished the job with that token at %d", e.Job, e.Token, e.Owner, fin.Owner, fin.At)
		case r == nil || r.run.Plan != "finishtx":
			k.bad("%s: effect of token %d by %s, whose claim no FinishTx handler ran", e.Job, e.Token, e.Owner)
		}
	}
	for key, n := range count {
		if n > 1 {
			k.bad("%s: %d effects of token %d", key.Job, n, key.Token)
		}
	}
	for _, r := range k.runs {
		if own := r.ownFinish(); own != nil && count[effectRow{Job: r.run.Job, Token: r.run.Token}] == 0 {
			k.bad("%s: the FinishTx of token %d by %s finished the job at %d, but no effect of it is in the table",
				r.run.Job, r.run.Token, r.run.Owner, own.At)
		}
	}
}

// fate says, for a report, what the audit shows became of the claim of
// token of id: the first change that took the job from it.
func (k *checker) fate(id string, token int64) string {
	if _, ok := k.auditClaim[opKey(id, "", token)]; !ok {
		return "the queue never handed out that token"
	}
	for _, a := range k.auditOf[id] {
		if a.OldToken != token || a.OldStatus != string(leaseq.StatusLeased) {
			continue
		}
		switch call := a.call(); call {
		case "extend":
		case "claim":
			return fmt.Sprintf("its lease ran out, and token %d was claimed by %s at %d", a.Token, a.Owner, a.At)
		case "":
			return fmt.Sprintf("it was made %s at %d: %s", a.Status, a.At, a.Reason)
		default:
			return fmt.Sprintf("its %s at %d made it %s", call, a.At, a.Status)
		}
	}
	return "the job was still leased to it at the end"
}

// checkCall checks the call Work made with a handler's result against rule
// 30: nil → Finish; Permanent → Fail with its text; RetryAfter(d) →
// Release after d; any other error (a panic's text is "panic: " and its
// value) → Release after Backoff(attempt) with its text — except that once
// the pool's drain time is over (the context's cause is ErrShutdown) any
// error is released at once, as "worker shut down: " and its text. A
// refused call is known only by the outcome Work logged.
func (k *checker) checkCall(r *workRun, op *loggedOp) {
	ret := r.ret
	want, delay, reason := "release", chaosBackoff(r.run.Attempt).Milliseconds(), ret.Reason
	switch ret.Plan {
	case "finish":
		want, delay, reason = "finish", 0, ""
	case "permanent":
		want, delay = "fail", 0
	case "retry":
		delay = ret.Delay
	}
	drained := k.pools[r.inc].shutdown + chaosDrainTimeout.Milliseconds()
	atShutdown := ret.Plan != "finish" && k.pools[r.inc].shutdown != 0 && op.madeAt() >= drained
	matches := func(want string, delay int64, reason string, outcome string) bool {
		if op.Ev != want {
			return false
		}
		if !op.OK {
			return (outcome == "released at shutdown") == (op.Outcome == "released at shutdown")
		}
		return (want != "release" || op.Delay == delay) && (want == "finish" || op.Reason == reason)
	}
	if matches(want, delay, reason, "") || atShutdown && matches("release", 0, "worker shut down: "+ret.Reason, "released at shutdown") {
		return
	}
	got := fmt.Sprintf("%s (delay %d, reason %q) accepted at %d", op.Ev, op.Delay, op.Reason, op.At)
	if !op.OK {
		got = fmt.Sprintf("%s (%s) refused at %s", op.Ev, op.Outcome, span(op.T0, op.T1))
	}
	k.bad("%s: the handler of token %d returned %s %q, but Work made %s; rule 30 asks for %s (delay %d, reason %q)",
		r.run.Job, r.run.Token, ret.Plan, ret.Reason, got, want, delay, reason)
}

// checkRecords checks Work's records about a claim against what happened:
// a "job <outcome>" at Debug only for a result recorded as that call, a
// panic at Error with its value and stack, nothing at Info (rule 34).
func (k *checker) checkRecords(r *workRun) {
	id, tok := r.run.Job, r.run.Token
	for _, e := range r.logs {
		switch {
		case e.Msg == workExtendFailed:
			k.rep.pool.failedExtends++
		case e.Level == slog.LevelInfo.String():
			k.bad("%s: Work logged %q at Info about token %d; per-job records belong at Debug", id, e.Msg, tok)
		case strings.HasPrefix(e.Msg, workRecorded):
			if !slices.ContainsFunc(r.life.calls, func(op *loggedOp) bool { return op.OK && op.Ev == workCall(e.Outcome) }) {
				k.bad("%s: Work logged %q about token %d at %d, but no %s of it was accepted", id, e.Msg, tok, e.T1, workCall(e.Outcome))
			}
		}
	}
	if r.ret == nil || r.ret.Plan != "panic" {
		return
	}
	k.rep.pool.panics++
	panicked := slices.ContainsFunc(r.logs, func(e histEvent) bool {
		return e.Msg == workPanicked && e.Level == slog.LevelError.String() && e.Stack && "panic: "+e.Reason == r.ret.Reason
	})
	if !panicked && !r.inc.killed {
		k.bad("%s: the handler of token %d panicked, but Work logged no Error with its value and stack", id, tok)
	}
}

// checkCause checks each end of a handler's context the pool saw: its
// cause is ErrLeaseLost, or ErrShutdown once the pool's drain time was
// over (rules 29 and 32).
func (k *checker) checkCause(r *workRun) {
	if r.ctxEnd != nil {
		switch r.ctxEnd.Cause {
		case leaseq.ErrLeaseLost.Error():
			k.rep.pool.lostSeen++
		case leaseq.ErrShutdown.Error():
			k.rep.pool.shutdownSeen++
		}
	}
	for _, e := range []*histEvent{r.ctxEnd, r.ret} {
		if e == nil || e.Cause == "" || e.Cause == leaseq.ErrLeaseLost.Error() {
			continue
		}
		shutdown := k.pools[r.inc].shutdown
		switch {
		case e.Cause != leaseq.ErrShutdown.Error():
			k.bad("%s: the context of token %d's handler had ended by %d with cause %q, neither ErrLeaseLost nor ErrShutdown",
				r.run.Job, r.run.Token, e.At, e.Cause)
		case shutdown == 0:
			k.bad("%s: the context of token %d's handler had ended by %d with ErrShutdown, but %s.%d never shut down",
				r.run.Job, r.run.Token, e.At, r.inc.name, r.inc.n)
		case e.At < shutdown+chaosDrainTimeout.Milliseconds():
			k.bad("%s: the context of token %d's handler had ended by %d with ErrShutdown, but %s.%d began shutting down at %d and drains for %v",
				r.run.Job, r.run.Token, e.At, r.inc.name, r.inc.n, shutdown, chaosDrainTimeout)
		}
	}
}

// checkContext checks that the handler did not go on after its lease
// ended without its context having ended (rule 29).
//
// The rule. Let E be the lease end the accepted calls leave the claim —
// lease_until after its last accepted extension, the claim's own if none —
// by the queue's clock. Once E has passed, another claim may take the job;
// a deadline comes at E at the latest, since no lease outlives it; an
// operator's Cancel closes the fence before E, but the holder can learn of
// it only at its next heartbeat, whose refusal ends the context, and the
// lease it knows of ends at E all the same. So E is when the context must
// have ended. If the handler had not returned by E (by its own reading),
// the first sign the pool gave of its context's end — the watcher's
// ctxend reading, or a return line whose context had ended — must come
// within chaosCtxSlack of running time after E, or after the handler's
// start if that was later; a return line with the context still live, or
// a SIGKILL with neither line, is a context still live at that instant.
// Likewise once Work has logged that the lease is lost (a refused
// heartbeat, or its lease-end timer), whatever E is: a refusal must end
// the context at once, not at E.
//
// Running time, not real time: a process that is not running cannot end a
// context or see it end. Stopped by SIGSTOP for a lease or three, a pool
// takes its heartbeats' deadlines and its lease-end timers with it, and
// sees the end only after SIGCONT, late by the pause and not by anything
// Work did; a GC pause or a host too busy to schedule it does the same.
// So the time between E and the reading does not count where the parent
// had the process stopped (its SIGSTOP to its SIGCONT) or where the pool's
// observer saw a gap (no reading for chaosGapMin or more, which also
// measures scheduling delays the parent cannot see). What is left is the
// time a running process takes to end the context and see it: the
// keeper's lease-end timer (or a refused heartbeat) firing, the watcher
// waking, each a goroutine wake-up well under a millisecond — plus stalls
// shorter than chaosGapMin that no gap shows. chaosCtxSlack, a sixth of a
// lease and half a heartbeat, bounds that with room for a loaded 2-core
// host and the race detector (the largest seen is reported; single
// milliseconds as a rule), and still fails a context left live until the
// next heartbeat or beyond: what a missing lease-end timer, a refusal that
// does not cancel, or a keeper held up in a heartbeat's COMMIT (which the
// parent's long reads bring about) does.
func (k *checker) checkContext(r *workRun) {
	k.checkCancelSeen(r)
	// Work's own word that the lease is lost — a refused heartbeat, or its
	// lease-end timer — must end the context at once, whatever E is.
	for _, e := range r.logs {
		if e.Msg == workExtensionRefused || e.Msg == workLeaseEnded {
			if at, how, late, ok := k.lateAfter(r, e.T1); ok && late > chaosCtxSlack.Milliseconds() {
				k.bad("%s: Work logged %q about token %d at %d while its handler on %s.%d ran, but "+how+
					": %dms of running time later, over the %v a running process may take",
					r.run.Job, e.Msg, r.run.Token, e.T1, r.inc.name, r.inc.n, at, late, chaosCtxSlack)
			}
			break
		}
	}
	if r.ownFinish() != nil {
		// Its FinishTx finished the job under the lease: from then on it
		// holds nothing, and Work ends no context for it (rule 46).
		return
	}
	E := r.life.leaseEnd
	p := &k.rep.pool
	if r.run.At >= E {
		p.startedLate++
	}
	at, how, late, ok := k.lateAfter(r, E)
	if !ok {
		return
	}
	p.outlived++
	p.lateMax, p.lateRealMax = max(p.lateMax, late), max(p.lateRealMax, at-max(E, r.run.At))
	if late > chaosCtxSlack.Milliseconds() {
		k.bad("%s: the lease of token %d ended at %d while its handler on %s.%d ran (from %d), but "+how+
			": %dms of running time later (%dms real), over the %v a running process may take",
			r.run.Job, r.run.Token, E, r.inc.name, r.inc.n, r.run.At, at, late, at-E, chaosCtxSlack)
	}
}

// lateAfter tells, for a handler still running at E, the first sign the
// pool gave of its context's end — or of its context still live — at or
// after E: its instant at, a phrase how for it, and late, the running time
// to it from E or, if the handler started later, from its start (a claim
// whose COMMIT waited, say for a stopped process's read lock, until after
// its lease ended; its handler can be told no earlier than it exists), or
// from the return of a FinishTx of it in flight then. ok is false if the
// handler had returned, or its context had ended, before E.
func (k *checker) lateAfter(r *workRun, E int64) (at int64, how string, late int64, ok bool) {
	if r.ret != nil && r.ret.At < E {
		return 0, "", 0, false
	}
	switch {
	case r.ctxEnd != nil && (r.ret == nil || r.ret.Cause == "" || r.ctxEnd.At <= r.ret.At):
		at, how = r.ctxEnd.At, "its context ended only at %d"
	case r.ret != nil && r.ret.Cause != "":
		at, how = r.ret.At, "its context had ended only by its return at %d"
	case r.ret != nil:
		at, how = r.ret.At, "it returned at %d with its context still live"
	case r.inc.killed:
		at, how = r.inc.killedAt, "it was killed at %d with no sign that its context had ended"
	default:
		return 0, "", 0, false
	}
	if at < E {
		return 0, "", 0, false
	}
	pl := k.pools[r.inc]
	from := max(E, r.run.At)
	if lo, hi, ok := r.finishTxWindow(); ok && hi >= from && lo-from-pl.stopped(from, lo) <= chaosCtxSlack.Milliseconds() {
		// A FinishTx called before the pool could be expected to end the
		// context (a process stopped over the lease end calls it as soon
		// as the pool acts) is waited for first, lest the pool call a
		// lease lost that the FinishTx finishes (rule 48).
		from = min(hi, at)
	}
	return at, how, at - from - pl.stopped(from, at), true
}

// checkCancelSeen measures how long a handler whose job an operator
// cancelled while it ran took to see its context end.
func (k *checker) checkCancelSeen(r *workRun) {
	if r.ctxEnd == nil {
		return
	}
	for _, c := range r.life.gen.cancels {
		if lo, _ := c.bounds(); lo >= r.run.At && lo <= r.ctxEnd.At && lo < r.life.leaseEnd {
			p := &k.rep.pool
			p.cancelled++
			p.cancelSeenMax = max(p.cancelSeenMax, r.ctxEnd.At-lo-k.pools[r.inc].stopped(lo, r.ctxEnd.At))
			return
		}
	}
}

// stopped is how much of [a, b] the pool's process was not running: the
// union of its pauses and its observer's gaps within it.
func (pl *poolLog) stopped(a, b int64) int64 {
	ivs := slices.Concat(pl.inc.pauses, pl.gaps)
	slices.SortFunc(ivs, func(x, y interval) int { return cmp.Compare(x.from, y.from) })
	var total int64
	reach := a
	for _, iv := range ivs {
		if from, to := max(iv.from, reach), min(iv.to, b); to > from {
			total, reach = total+to-from, to
		}
	}
	return total
}

// checkerCase is a small history, made by running the real queue on a
// manual clock and writing down what the chaos processes would have
// logged, for testing checkHistory itself: a checker that cannot fail
// proves nothing. Times are milliseconds after t0; every call's clock
// reading is recorded exactly, as the chaos processes record it.
type checkerCase struct {
	t    *testing.T
	f    *fixture
	jobs []leaseq.Job
	incs []*incarnation
	hist [][]histEvent
	rcv  *receiver
	seq  int
	// tamper, if set, edits the audit before the checker reads it.
	tamper func(audit []auditRow) []auditRow
	// effects are the effects its FinishTx handlers wrote.
	effects []effectRow
	// env is where it runs; restarts are the server restarts the checker
	// is told of.
	env      *checkerEnv
	restarts []interval
}

// checkerEnv is where the checker's cases of one engine run: on SQLite
// each in a fresh file; on PostgreSQL, where a fresh database costs a
// CREATE DATABASE, each in a queue of its own on one shared database (the
// audit says which queue each change is of).
type checkerEnv struct {
	engine chaosEngine
	where  string
	db     *sql.DB // the shared database; nil for a file per case
	queues atomic.Int64
}

func newCheckerEnv(t *testing.T, e chaosEngine) *checkerEnv {
	env := &checkerEnv{engine: e}
	if e.name == "sqlite" {
		return env
	}
	env.where = e.fresh(t, "")
	db, err := e.open(env.where)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := leaseq.New(context.Background(), db, leaseq.Options{}); err != nil { // the schema, for the trigger
		t.Fatal(err)
	}
	installChaosAudit(t, db, e)
	if problem := e.integrity(db); problem != "" { // and installs amcheck before the cases run at once
		t.Fatal(problem)
	}
	env.db = db
	return env
}

func newCase(t *testing.T, env *checkerEnv) *checkerCase {
	cc := &checkerCase{t: t, f: env.fixture(t), rcv: &receiver{qty: map[string]int{}}, env: env}
	if env.db == nil {
		installChaosAudit(t, cc.f.db, env.engine)
	}
	return cc
}

// fixture is a fixture with the chaos queues' options, in a fresh file or
// a queue of its own.
func (env *checkerEnv) fixture(t *testing.T) *fixture {
	t.Helper()
	opts := leaseq.Options{MaxAttempts: chaosMaxAttempts}
	if env.db == nil {
		return newFixture(t, sqliteEngine, opts)
	}
	f := &fixture{t: t, ctx: context.Background(), e: postgresEngine, path: env.where, db: env.db, clock: leaseq.NewManualClock(t0)}
	opts.Name, opts.Clock = fmt.Sprintf("case%d", env.queues.Add(1)), f.clock
	var err error
	if f.q, err = leaseq.New(f.ctx, env.db, opts); err != nil {
		t.Fatal(err)
	}
	return f
}

// unixAt is the Unix millisecond of t0 + n ms.
func unixAt(n int64) int64 { return ms(n).UnixMilli() }

// exactlyAt is a call at t0 + n ms whose clock reading was recorded.
func exactlyAt(n int64) instant { return instant{At: unixAt(n), T0: unixAt(n), T1: unixAt(n)} }

// proc is the index of the running incarnation of name, started (with its
// start line) if there is none.
func (cc *checkerCase) proc(name string) int {
	n := 0
	for i, inc := range cc.incs {
		if inc.name != name {
			continue
		}
		if h := cc.hist[i]; !inc.killed && h[len(h)-1].Ev != "exit" {
			return i
		}
		n++
	}
	role := "chaos-worker"
	switch {
	case name == chaosOperatorName:
		role = "chaos-operator"
	case strings.HasPrefix(name, "pool"):
		role = "chaos-pool"
	}
	cc.incs = append(cc.incs, &incarnation{name: name, role: role, n: n})
	cc.hist = append(cc.hist, []histEvent{{Ev: "start", Owner: name}})
	return len(cc.incs) - 1
}

func (cc *checkerCase) log(name string, e histEvent) {
	i := cc.proc(name)
	cc.hist[i] = append(cc.hist[i], e)
}

// append adds e to the history of the last incarnation of name, before
// its exit line if it has one: a line tampered in.
func (cc *checkerCase) append(name string, e histEvent) {
	for i := len(cc.incs) - 1; i >= 0; i-- {
		if cc.incs[i].name == name {
			h := cc.hist[i]
			if n := len(h); h[n-1].Ev == "exit" {
				cc.hist[i] = append(h[:n-1:n-1], e, h[n-1])
			} else {
				cc.hist[i] = append(h, e)
			}
			return
		}
	}
	panic("no incarnation of " + name)
}

func (cc *checkerCase) kill(name string) { cc.incs[cc.proc(name)].killed = true }

func (cc *checkerCase) exit(names ...string) {
	for _, name := range names {
		cc.log(name, histEvent{Ev: "exit", Owner: name})
	}
}

// enqueue is the producer's enqueue of j at t0 + at.
func (cc *checkerCase) enqueue(at int64, j leaseq.Job) {
	cc.f.at(at).enqueue(j)
	cc.jobs = append(cc.jobs, j)
}

func (cc *checkerCase) claim(at int64, name string) leaseq.Claim {
	c := cc.f.at(at).mustClaim(name, chaosLease)
	cc.log(name, histEvent{Ev: "claim", Job: c.ID, Owner: name, Token: c.Token, Attempt: c.Attempt,
		LeaseUntil: c.LeaseUntil.UnixMilli(), Deadline: unixMS(c.Deadline), instant: exactlyAt(at)})
	return c
}

// sweep is a Claim at t0 + at that finds nothing claimable (it may
// quarantine).
func (cc *checkerCase) sweep(at int64) {
	if c, ok := cc.f.at(at).claim("sweeper", chaosLease); ok {
		cc.t.Fatalf("sweep at %d claimed %+v", at, c)
	}
}

func (cc *checkerCase) extend(at int64, name string, c *leaseq.Claim) bool {
	ext, ok, err := cc.f.at(at).q.Extend(cc.f.ctx, *c, chaosLease)
	if err != nil {
		cc.t.Fatal(err)
	}
	e := histEvent{Ev: "extend", Job: c.ID, Owner: name, Token: c.Token, Lease: chaosLease.Milliseconds(), OK: ok, instant: exactlyAt(at)}
	if ok {
		*c, e.LeaseUntil = ext, ext.LeaseUntil.UnixMilli()
	}
	cc.log(name, e)
	return ok
}

// deliver is the delivery of c, answered at t0 + at, then planned to be
// settled with plan.
func (cc *checkerCase) deliver(at int64, name string, c leaseq.Claim, plan string, delay int64) {
	cc.rcv.record(delivery{job: c.ID, payload: string(c.Payload), owner: name, plan: plan, token: c.Token, qty: c.Qty})
	cc.log(name, histEvent{Ev: "deliver", Job: c.ID, Owner: name, Token: c.Token, Plan: plan, Delay: delay,
		instant: instant{T1: unixAt(at)}})
}

// settle is the call plan (finish, release or fail) on c at t0 + at.
func (cc *checkerCase) settle(at int64, name string, c leaseq.Claim, plan string, delay int64) bool {
	cc.f.at(at)
	e := histEvent{Ev: plan, Job: c.ID, Owner: name, Token: c.Token, instant: exactlyAt(at)}
	var err error
	switch plan {
	case "finish":
		e.OK, err = cc.f.q.Finish(cc.f.ctx, c)
	case "release":
		e.Delay, e.Reason = delay, chaosReleaseReason(c.ID, c.Token)
		e.OK, err = cc.f.q.Release(cc.f.ctx, c, time.Duration(delay)*time.Millisecond, e.Reason)
	case "fail":
		e.Reason = chaosFailReason(c.ID, c.Token)
		e.OK, err = cc.f.q.Fail(cc.f.ctx, c, e.Reason)
	}
	if err != nil {
		cc.t.Fatal(err)
	}
	cc.log(name, e)
	return e.OK
}

// operate is one operator call at t0 + at: its intent line, the call, its
// result line.
func (cc *checkerCase) operate(at int64, e histEvent, call func() error) {
	intent := e
	intent.Op, intent.Ev, intent.instant = e.Ev, "intent", instant{T0: unixAt(at)}
	cc.log(chaosOperatorName, intent)
	cc.f.at(at)
	switch err := call(); {
	case err == nil:
		e.OK = true
	case errors.Is(err, leaseq.ErrInvalid):
		e.Err = "invalid"
	case errors.Is(err, leaseq.ErrNotFound):
		e.Err = "not found"
	case errors.Is(err, leaseq.ErrDuplicate):
		e.Err = "duplicate"
	default:
		cc.t.Fatal(err)
	}
	e.Owner, e.instant = chaosOperatorName, exactlyAt(at)
	cc.log(chaosOperatorName, e)
}

func (cc *checkerCase) cancel(at int64, id string) {
	cc.seq++
	e := histEvent{Ev: "cancel", Job: id, Reason: fmt.Sprintf("cancelled by op #%d", cc.seq)}
	cc.operate(at, e, func() error { return cc.f.q.Cancel(cc.f.ctx, id, e.Reason) })
}

func (cc *checkerCase) purge(at, before int64, statuses ...leaseq.Status) {
	listed, err := listOlder(cc.f.ctx, cc.f.q, ms(before), statuses)
	if err != nil {
		cc.t.Fatal(err)
	}
	e := histEvent{Ev: "purge", Before: unixAt(before), Statuses: statuses, Listed: len(listed)}
	var n int
	cc.operate(at, e, func() (err error) {
		n, err = cc.f.q.Purge(cc.f.ctx, ms(before), statuses...)
		return err
	})
	cc.edit(chaosOperatorName, "purge", "", 0).Deleted = n
}

func (cc *checkerCase) reenqueue(at int64, j leaseq.Job) {
	cc.operate(at, enqueueEvent(j), func() error { return cc.f.q.Enqueue(cc.f.ctx, j) })
}

// check writes the histories and runs the checker.
func (cc *checkerCase) check(t *testing.T) chaosReport {
	dir := t.TempDir()
	for i, inc := range cc.incs {
		inc.hist = filepath.Join(dir, fmt.Sprintf("%s.%d.jsonl", inc.name, inc.n))
		var b []byte
		for _, e := range cc.hist[i] {
			line, _ := json.Marshal(e)
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(inc.hist, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	audit := readChaosAudit(t, cc.f.db, cc.f.q.Name())
	if cc.tamper != nil {
		audit = cc.tamper(audit)
	}
	c := &chaos{all: cc.incs, audit: audit, effects: cc.effects, engine: cc.env.engine, restarts: cc.restarts}
	return checkHistory(t, cc.f.q, c, cc.jobs, cc.rcv)
}

// edit finds the last line of an incarnation of name matching ev, job and
// token.
func (cc *checkerCase) edit(name, ev, job string, token int64) *histEvent {
	for i := len(cc.incs) - 1; i >= 0; i-- {
		if cc.incs[i].name != name {
			continue
		}
		for j := len(cc.hist[i]) - 1; j >= 0; j-- {
			if e := &cc.hist[i][j]; e.Ev == ev && e.Job == job && e.Token == token {
				return e
			}
		}
	}
	panic(fmt.Sprintf("no %s line %s/%d of %s", ev, job, token, name))
}

// drop deletes that line.
func (cc *checkerCase) drop(name, ev, job string, token int64) {
	e := cc.edit(name, ev, job, token)
	for i := range cc.incs {
		h := cc.hist[i]
		for j := range h {
			if &h[j] == e {
				cc.hist[i] = append(h[:j:j], h[j+1:]...)
				return
			}
		}
	}
}

// newCheckerCase is a clean history of every kind of call:
//
//	0ms   w1 claims j1 (token 1, lease_until 150); delivers; 10ms finishes: accepted
//	20ms  w2 claims j2 (token 1, lease_until 170); is killed while delivering
//	170ms w1 claims j2 (token 2, lease_until 320); delivers; 180ms finishes: accepted
//	200ms j3 arrives (deadline 420); w3 claims it (token 1, lease_until 350);
//	      300ms extends: lease_until min(450, deadline) = 420; delivery fails
//	      transiently; 310ms releases with delay 50: pending, claimable from 360
//	360ms w1 claims j3 (token 2, attempt 2, lease_until 420); delivery fails
//	      for good; 370ms fails it: quarantined
//	380ms j4 arrives; w3 claims it (token 1, lease_until 530)
//	390ms op cancels j4: accepted; 400ms w3's extend is refused; it delivers;
//	      410ms its finish is refused
//	420ms op purges quarantined jobs older than 375ms: j3 (j4 changed at 390)
//	430ms op enqueues j3 again; 440ms w1 claims it: token 3, attempt 1;
//	      delivers; 450ms finishes: accepted
//	460ms op cancels j1: refused, it is done
func newCheckerCase(t *testing.T, env *checkerEnv) *checkerCase {
	cc := newCase(t, env)
	cc.enqueue(0, leaseq.Job{ID: "j1", Qty: 2, Payload: []byte("p1")})
	cc.enqueue(0, leaseq.Job{ID: "j2", Qty: 3, Payload: []byte("p2")})
	c := cc.claim(0, "w1")
	cc.deliver(10, "w1", c, "finish", 0)
	cc.settle(10, "w1", c, "finish", 0)
	cc.claim(20, "w2")
	cc.kill("w2")
	c = cc.claim(170, "w1")
	cc.deliver(180, "w1", c, "finish", 0)
	cc.settle(180, "w1", c, "finish", 0)

	cc.enqueue(200, leaseq.Job{ID: "j3", Qty: 4, Payload: []byte("p3"), Deadline: ms(420)})
	c = cc.claim(200, "w3")
	cc.extend(300, "w3", &c)
	cc.deliver(310, "w3", c, "release", 50)
	cc.settle(310, "w3", c, "release", 50)
	c = cc.claim(360, "w1")
	cc.deliver(370, "w1", c, "fail", 0)
	cc.settle(370, "w1", c, "fail", 0)

	cc.enqueue(380, leaseq.Job{ID: "j4", Qty: 5, Payload: []byte("p4")})
	c = cc.claim(380, "w3")
	cc.cancel(390, "j4")
	cc.extend(400, "w3", &c)
	cc.deliver(410, "w3", c, "finish", 0)
	cc.settle(410, "w3", c, "finish", 0)

	cc.purge(420, 375, leaseq.StatusQuarantined)
	cc.reenqueue(430, leaseq.Job{ID: "j3", Qty: 6, Payload: []byte("p3 again")})
	c = cc.claim(440, "w1")
	cc.deliver(450, "w1", c, "finish", 0)
	cc.settle(450, "w1", c, "finish", 0)
	cc.cancel(460, "j1")
	cc.exit("w1", "w3", chaosOperatorName)
	return cc
}

// poolClaim is a pool's claim at t0 + at and its handler's run line.
func (cc *checkerCase) poolClaim(at int64, name, plan, style string) leaseq.Claim {
	c := cc.f.at(at).mustClaim(name, chaosLease)
	cc.log(name, histEvent{Ev: "run", Job: c.ID, Owner: name, Token: c.Token, Attempt: c.Attempt,
		LeaseUntil: c.LeaseUntil.UnixMilli(), Deadline: unixMS(c.Deadline), Plan: plan, Style: style,
		instant: instant{At: unixAt(at)}})
	return c
}

// heartbeat is Work's extension of c at t0 + at: in the audit, and in the
// history only if refused.
func (cc *checkerCase) heartbeat(at int64, name string, c *leaseq.Claim) {
	ext, ok, err := cc.f.at(at).q.Extend(cc.f.ctx, *c, chaosLease)
	if err != nil {
		cc.t.Fatal(err)
	}
	if ok {
		*c = ext
		return
	}
	cc.workLog(at, name, *c, slog.LevelWarn, workExtensionRefused, "lease lost")
}

// workLog is a record Work logged at t0 + at about c.
func (cc *checkerCase) workLog(at int64, name string, c leaseq.Claim, level slog.Level, msg, outcome string) {
	cc.log(name, histEvent{Ev: "log", Msg: msg, Level: level.String(), Job: c.ID, Owner: name, Token: c.Token,
		Outcome: outcome, instant: instant{T1: unixAt(at)}})
}

// ctxEnd is the handler's watcher seeing its context end at t0 + at.
func (cc *checkerCase) ctxEnd(at int64, name string, c leaseq.Claim, cause error) {
	cc.log(name, histEvent{Ev: "ctxend", Job: c.ID, Owner: name, Token: c.Token, Cause: cause.Error(),
		instant: instant{At: unixAt(at)}})
}

// handlerReturn is the handler's return line at t0 + at: what it returns
// and, if its context had ended, the cause.
func (cc *checkerCase) handlerReturn(at int64, name string, c leaseq.Claim, kind, text string, cause error) {
	e := histEvent{Ev: "return", Job: c.ID, Owner: name, Token: c.Token, Plan: kind, Reason: text,
		instant: instant{At: unixAt(at)}}
	if cause != nil {
		e.Cause = cause.Error()
	}
	cc.log(name, e)
}

// workRecord is Work recording a result at t0 + at: the call (finish,
// release with delay and reason, fail with reason) and its record, at
// Debug if accepted, at Warn if refused.
func (cc *checkerCase) workRecord(at int64, name string, c leaseq.Claim, call string, delay int64, reason, outcome string) {
	f := cc.f.at(at)
	var ok bool
	var err error
	switch call {
	case "finish":
		ok, err = f.q.Finish(f.ctx, c)
	case "release":
		ok, err = f.q.Release(f.ctx, c, time.Duration(delay)*time.Millisecond, reason)
	case "fail":
		ok, err = f.q.Fail(f.ctx, c, reason)
	}
	if err != nil {
		cc.t.Fatal(err)
	}
	if ok {
		cc.workLog(at, name, c, slog.LevelDebug, workRecorded+outcome, outcome)
	} else {
		cc.workLog(at, name, c, slog.LevelWarn, workResultRefused, outcome)
	}
}

// pause records that the parent stopped the last incarnation of name from
// t0 + from to t0 + to.
func (cc *checkerCase) pause(name string, from, to int64) {
	inc := cc.last(name)
	inc.pauses = append(inc.pauses, interval{unixAt(from), unixAt(to)})
}

// last is the last incarnation of name.
func (cc *checkerCase) last(name string) *incarnation {
	for i := len(cc.incs) - 1; i >= 0; i-- {
		if cc.incs[i].name == name {
			return cc.incs[i]
		}
	}
	panic("no incarnation of " + name)
}

// newPoolCase is a clean history of two pools and the operator:
//
//	0ms   pool1 claims m1 (token 1, lease_until 150); heartbeats at 50 and
//	      100 (lease_until 250); it delivers; returns nil at 120; 125ms
//	      Work finishes it
//	130ms pool1 claims m2 (lease_until 280) and stalls in its delivery;
//	      heartbeat at 180 (lease_until 330); the parent stops pool1 from
//	      190 to 400, so the lease ends at 330 unextended
//	340ms pool2 claims m2 (token 2); delivers; 360ms finished
//	402ms pool1 runs again: its handler's context has ended (ErrLeaseLost,
//	      2ms of running time after the lease); the stalled delivery
//	      answers; it returns nil at 404; 405ms Work's finish is refused
//	410ms pool2 claims m3 (lease_until 560) and works slowly; heartbeat
//	      at 460 (lease_until 610); 470ms op cancels m3; 510ms the
//	      heartbeat is refused; 511ms the context ends; the handler gives
//	      up; 513ms Work's release is refused
//	520ms pool1 claims m4; delivers; panics at 531; 532ms Work releases
//	      it with Backoff(1) = 40ms; 580ms pool2 claims it (token 2,
//	      attempt 2); it fails for good at 590; 591ms Work fails it
//	600ms pool1 claims m5 (lease_until 750) and works slowly; heartbeat
//	      at 650; 660ms pool1 begins shutting down; heartbeat at 700;
//	      760ms the drain is over: the context ends with ErrShutdown;
//	      the handler gives up; 762ms Work releases it at once
//	770ms pool2 claims m5 (token 2); delivers; 777ms finished
func newPoolCase(t *testing.T, env *checkerEnv) *checkerCase {
	cc := newCase(t, env)
	lost, shut := leaseq.ErrLeaseLost, leaseq.ErrShutdown
	cc.enqueue(0, leaseq.Job{ID: "m1", Qty: 1, Payload: []byte("q1")})
	c := cc.poolClaim(0, "pool1", "finish", "quick")
	cc.heartbeat(50, "pool1", &c)
	cc.heartbeat(100, "pool1", &c)
	cc.deliver(110, "pool1", c, "finish", 0)
	cc.handlerReturn(120, "pool1", c, "finish", "", nil)
	cc.workRecord(125, "pool1", c, "finish", 0, "", "finished")

	cc.enqueue(130, leaseq.Job{ID: "m2", Qty: 2, Payload: []byte("q2")})
	stalled := cc.poolClaim(130, "pool1", "finish", "stall")
	cc.heartbeat(180, "pool1", &stalled)
	cc.pause("pool1", 190, 400)
	c = cc.poolClaim(340, "pool2", "finish", "quick")
	cc.deliver(350, "pool2", c, "finish", 0)
	cc.handlerReturn(355, "pool2", c, "finish", "", nil)
	cc.workRecord(360, "pool2", c, "finish", 0, "", "finished")
	cc.ctxEnd(402, "pool1", stalled, lost)
	cc.deliver(403, "pool1", stalled, "finish", 0)
	cc.handlerReturn(404, "pool1", stalled, "finish", "", lost)
	cc.workRecord(405, "pool1", stalled, "finish", 0, "", "finished")

	cc.enqueue(410, leaseq.Job{ID: "m3", Qty: 3, Payload: []byte("q3")})
	c = cc.poolClaim(410, "pool2", "finish", "slow")
	cc.heartbeat(460, "pool2", &c)
	cc.cancel(470, "m3")
	cc.heartbeat(510, "pool2", &c)
	cc.ctxEnd(511, "pool2", c, lost)
	gaveUp := "gave up m3 token 1: " + lost.Error()
	cc.handlerReturn(512, "pool2", c, "gave up", gaveUp, lost)
	cc.workRecord(513, "pool2", c, "release", 40, gaveUp, "released")

	cc.enqueue(520, leaseq.Job{ID: "m4", Qty: 4, Payload: []byte("q4")})
	c = cc.poolClaim(520, "pool1", "panic", "quick")
	cc.deliver(530, "pool1", c, "release", 0)
	cc.handlerReturn(531, "pool1", c, "panic", "panic: chaos panic in m4 token 1", nil)
	cc.log("pool1", histEvent{Ev: "log", Msg: workPanicked, Level: slog.LevelError.String(), Job: "m4", Owner: "pool1",
		Token: 1, Outcome: "panic", Reason: "chaos panic in m4 token 1", Stack: true, instant: instant{T1: unixAt(531)}})
	cc.workRecord(532, "pool1", c, "release", chaosBackoff(1).Milliseconds(), "panic: chaos panic in m4 token 1", "released")
	c = cc.poolClaim(580, "pool2", "permanent", "quick")
	cc.deliver(585, "pool2", c, "fail", 0)
	cc.handlerReturn(590, "pool2", c, "permanent", chaosFailReason("m4", 2), nil)
	cc.workRecord(591, "pool2", c, "fail", 0, chaosFailReason("m4", 2), "failed")

	cc.enqueue(600, leaseq.Job{ID: "m5", Qty: 5, Payload: []byte("q5")})
	c = cc.poolClaim(600, "pool1", "finish", "slow")
	cc.heartbeat(650, "pool1", &c)
	cc.log("pool1", histEvent{Ev: "shutdown", Owner: "pool1", instant: instant{At: unixAt(660)}})
	cc.heartbeat(700, "pool1", &c)
	cc.ctxEnd(760, "pool1", c, shut)
	gaveUp = "gave up m5 token 1: " + shut.Error()
	cc.handlerReturn(761, "pool1", c, "gave up", gaveUp, shut)
	cc.workRecord(762, "pool1", c, "release", 0, "worker shut down: "+gaveUp, "released at shutdown")
	c = cc.poolClaim(770, "pool2", "finish", "quick")
	cc.deliver(775, "pool2", c, "finish", 0)
	cc.handlerReturn(776, "pool2", c, "finish", "", nil)
	cc.workRecord(777, "pool2", c, "finish", 0, "", "finished")
	cc.exit("pool1", "pool2", chaosOperatorName)
	return cc
}

// newOutlivedCase is a pool whose handler is still running when its lease
// ends (150, after the heartbeat at 50 … lease_until 200) and which is
// killed at 290 with no sign that its context ended; pool2 takes the job at
// 300. Whether that is a violation depends on whether pool1 was running
// between 200 and 290.
func newOutlivedCase(t *testing.T, env *checkerEnv) *checkerCase {
	cc := newCase(t, env)
	cc.enqueue(0, leaseq.Job{ID: "n1", Qty: 1, Payload: []byte("n1")})
	c := cc.poolClaim(0, "pool1", "finish", "stall")
	cc.heartbeat(50, "pool1", &c)
	cc.kill("pool1")
	cc.last("pool1").killedAt = unixAt(290)
	c = cc.poolClaim(300, "pool2", "finish", "quick")
	cc.deliver(310, "pool2", c, "finish", 0)
	cc.handlerReturn(315, "pool2", c, "finish", "", nil)
	cc.workRecord(320, "pool2", c, "finish", 0, "", "finished")
	cc.exit("pool2")
	return cc
}

// poolFinishTx is a FinishTx handler's call on c at t0 + at, whose
// function stalls until t0 + fnEnd, if later, by moving the clock there:
// its line, and its effect if it finished the job. The effect is kept
// here, not in a table: the checker reads the effects as rows.
func (cc *checkerCase) poolFinishTx(at, fnEnd int64, name string, c leaseq.Claim) {
	end := max(at, fnEnd)
	e := histEvent{Ev: "finishtx", Job: c.ID, Owner: name, Token: c.Token, instant: instant{T0: unixAt(at), T1: unixAt(end)}}
	ok, err := cc.f.at(at).q.FinishTx(cc.f.ctx, c, func(context.Context, leaseq.Tx) error {
		e.FnRuns++
		cc.f.at(end)
		return nil
	})
	if err != nil {
		cc.t.Fatal(err)
	}
	cc.f.at(end)
	e.OK = ok
	cc.log(name, e)
	if ok {
		cc.effects = append(cc.effects, effectRow{Job: c.ID, Owner: name, Token: c.Token})
	}
}

// newFinishTxCase is a clean history of pools whose handlers record their
// delivery with FinishTx, each finish with its effect (rule 46):
//
//	0ms   pool1 claims x1 (token 1, lease_until 150); delivers at 15;
//	      FinishTx at 20 finishes it; returns nil at 21
//	30ms  pool1 claims x2 (token 1, lease_until 180); delivers at 35;
//	      FinishTx at 40 stalls in its function until 260, past the
//	      lease: refused after fn; Work, having waited for it, logs the
//	      lease end at 260 and ends the context at 261; the handler
//	      returns ErrLeaseLost at 262; 263ms Work's release is refused
//	270ms pool2 claims x2 (token 2); delivers at 275; FinishTx at 280
//	      finishes it; returns nil at 281
//	300ms pool1 claims x3 (token 1, lease_until 450); delivers at 305;
//	      the parent stops pool1 from 306 to 500
//	460ms pool2 claims x3 (token 2); delivers at 465; FinishTx at 470
//	      finishes it; returns nil at 471
//	500ms pool1 runs again: Work logs the lease end; 501ms the context
//	      ends; its FinishTx at 501 is refused before fn; it returns
//	      ErrLeaseLost at 502; 503ms Work's release is refused
func newFinishTxCase(t *testing.T, env *checkerEnv) *checkerCase {
	cc := newCase(t, env)
	lost := leaseq.ErrLeaseLost
	finished := func(at int64, name string, c leaseq.Claim) {
		cc.deliver(at, name, c, "finish", 0)
		cc.poolFinishTx(at+5, at+5, name, c)
		cc.handlerReturn(at+6, name, c, "finish", "", nil)
		cc.workLog(at+6, name, c, slog.LevelDebug, workRecorded+"finished", "finished")
	}
	lostLease := func(at int64, name string, c leaseq.Claim) {
		cc.workLog(at, name, c, slog.LevelWarn, workLeaseEnded, "lease lost")
		cc.ctxEnd(at+1, name, c, lost)
	}
	gaveBack := func(at int64, name string, c leaseq.Claim) {
		cc.handlerReturn(at, name, c, "lost", lost.Error(), lost)
		cc.workRecord(at+1, name, c, "release", chaosBackoff(c.Attempt).Milliseconds(), lost.Error(), "released")
	}
	cc.enqueue(0, leaseq.Job{ID: "x1", Qty: 1, Payload: []byte("x1")})
	finished(15, "pool1", cc.poolClaim(0, "pool1", "finishtx", "quick"))

	cc.enqueue(30, leaseq.Job{ID: "x2", Qty: 2, Payload: []byte("x2")})
	c := cc.poolClaim(30, "pool1", "finishtx", "stall in fn")
	cc.deliver(35, "pool1", c, "finish", 0)
	cc.poolFinishTx(40, 260, "pool1", c)
	lostLease(260, "pool1", c)
	gaveBack(262, "pool1", c)
	finished(275, "pool2", cc.poolClaim(270, "pool2", "finishtx", "quick"))

	cc.enqueue(300, leaseq.Job{ID: "x3", Qty: 3, Payload: []byte("x3")})
	c = cc.poolClaim(300, "pool1", "finishtx", "stall")
	cc.deliver(305, "pool1", c, "finish", 0)
	cc.pause("pool1", 306, 500)
	finished(465, "pool2", cc.poolClaim(460, "pool2", "finishtx", "quick"))
	lostLease(500, "pool1", c)
	cc.poolFinishTx(501, 501, "pool1", c)
	gaveBack(502, "pool1", c)
	cc.exit("pool1", "pool2")
	return cc
}

// newNeighbourCase is pool1 running n1, a slow handler, beside s1, whose
// handler stalls inside FinishTx's function from 60 to 140 — within its
// lease — and finishes. With beat, Work's heartbeat at 50 extends n1's
// lease to 200 and n1's handler finishes at 160; without, n1's lease ends
// at 150 with its handler running, which no stop, restart or fault
// explains:
//
//	0ms   pool1 claims n1 and s1 (token 1 each, lease_until 150)
//	5ms   s1 delivered; 50ms n1's heartbeat (with beat)
//	60ms  s1's FinishTx; its fn stalls until 140, then it finishes s1
//	150ms (without beat) Work logs n1's lease end; the context ends at
//	      151; the handler gives up at 152 and Work's release at 153 is
//	      refused; pool2 claims n1 at 200 (token 2) and finishes it at 207
//	160ms (with beat) n1 delivered; its handler returns nil at 161 and
//	      Work finishes n1 at 162
func newNeighbourCase(t *testing.T, env *checkerEnv, beat bool) *checkerCase {
	cc := newCase(t, env)
	cc.enqueue(0, leaseq.Job{ID: "n1", Qty: 1, Payload: []byte("n1")})
	cc.enqueue(0, leaseq.Job{ID: "s1", Qty: 1, Payload: []byte("s1")})
	n := cc.poolClaim(0, "pool1", "finish", "slow")
	s := cc.poolClaim(0, "pool1", "finishtx", "stall in fn")
	cc.deliver(5, "pool1", s, "finish", 0)
	if beat {
		cc.heartbeat(50, "pool1", &n)
	}
	cc.poolFinishTx(60, 140, "pool1", s)
	cc.handlerReturn(141, "pool1", s, "finish", "", nil)
	if beat {
		cc.deliver(160, "pool1", n, "finish", 0)
		cc.handlerReturn(161, "pool1", n, "finish", "", nil)
		cc.workRecord(162, "pool1", n, "finish", 0, "", "finished")
	} else {
		lost := leaseq.ErrLeaseLost
		cc.workLog(150, "pool1", n, slog.LevelWarn, workLeaseEnded, "lease lost")
		cc.ctxEnd(151, "pool1", n, lost)
		gaveUp := "gave up n1 token 1: " + lost.Error()
		cc.handlerReturn(152, "pool1", n, "gave up", gaveUp, lost)
		cc.workRecord(153, "pool1", n, "release", chaosBackoff(1).Milliseconds(), gaveUp, "released")
		n = cc.poolClaim(200, "pool2", "finish", "quick")
		cc.deliver(205, "pool2", n, "finish", 0)
		cc.handlerReturn(206, "pool2", n, "finish", "", nil)
		cc.workRecord(207, "pool2", n, "finish", 0, "", "finished")
	}
	cc.exit("pool1", "pool2")
	return cc
}

// finishTxViolations are tamperings of newFinishTxCase, each a kind of
// violation checkHistory must report with a message containing want.
var finishTxViolations = []struct {
	name, want string
	tamper     func(cc *checkerCase)
}{
	{"an effect of a claim that lost its job", "x2: effect of token 1 by pool1, but that claim did not finish the job: " +
		"its lease ran out, and token 2 was claimed by pool2 at 1767225600270", func(cc *checkerCase) {
		cc.effects = append(cc.effects, effectRow{Job: "x2", Owner: "pool1", Token: 1})
	}},
	{"two effects of one claim", "x1: 2 effects of token 1", func(cc *checkerCase) {
		cc.effects = append(cc.effects, cc.effects[0])
	}},
	{"a finish without its effect", "x3: the FinishTx of token 2 by pool2 finished the job at 1767225600470, but no effect of it is in the table",
		func(cc *checkerCase) { cc.effects = cc.effects[:2] }},
	{"an effect by another owner", "x1: effect of token 1 by pool2, but pool1 finished the job with that token", func(cc *checkerCase) {
		cc.effects[0].Owner = "pool2"
	}},
	{"an effect of a claim no FinishTx handler ran", "x1: effect of token 1 by pool1, whose claim no FinishTx handler ran", func(cc *checkerCase) {
		cc.edit("pool1", "run", "x1", 1).Plan = "finish"
	}},
	{"a refused FinishTx whose finish committed", "x1: FinishTx of token 1 was refused at 1767225600020, but the finish of its claim committed",
		func(cc *checkerCase) { cc.edit("pool1", "finishtx", "x1", 1).OK = false }},
	{"an accepted FinishTx with no finish", "x2: FinishTx of token 1 returned true at [1767225600040, 1767225600260], but no finish of it committed",
		func(cc *checkerCase) { cc.edit("pool1", "finishtx", "x2", 1).OK = true }},
	{"nil after a refused FinishTx", "x2: FinishTx of token 1 returned false at [1767225600040, 1767225600260], but its handler returned nil",
		func(cc *checkerCase) { cc.edit("pool1", "return", "x2", 1).Plan = "finish" }},
	{"a finish outside its FinishTx", "x1: the finish of token 1 committed at 1767225600020, outside its handler's FinishTx", func(cc *checkerCase) {
		cc.edit("pool1", "finishtx", "x1", 1).T0 = unixAt(21)
	}},
	{"a call of Work after a FinishTx finished", "x1: the FinishTx of token 1 finished its job at 1767225600020 and its handler returned nil, but Work made a call",
		func(cc *checkerCase) {
			cc.append("pool1", histEvent{Ev: "log", Msg: workResultRefused, Level: "WARN", Job: "x1", Owner: "pool1", Token: 1,
				Outcome: "finished", instant: instant{T1: unixAt(22)}})
		}},
	{"a context left live after the FinishTx returned", "its context ended only at 1767225600300: 40ms of running time later", func(cc *checkerCase) {
		cc.edit("pool1", "ctxend", "x2", 1).At = unixAt(300)
		cc.edit("pool1", "return", "x2", 1).At = unixAt(301)
	}},
	{"a late context with no FinishTx in flight", "its context ended only at 1767225600261: 81ms of running time later", func(cc *checkerCase) {
		cc.drop("pool1", "finishtx", "x2", 1)
	}},
	{"a FinishTx that failed while the server was up", "x2: pool1.0's finishtx of token 1 failed at [1767225600040, 1767225600260], while the server was up",
		func(cc *checkerCase) { cc.edit("pool1", "finishtx", "x2", 1).Fault = "connection reset" }},
}

// poolViolations are tamperings of newPoolCase, each a kind of violation
// checkHistory must report with a message containing want.
var poolViolations = []struct {
	name, want string
	tamper     func(cc *checkerCase)
}{
	{"a context that ended long after the lease in a running process", "its context ended only at 1767225600402: 72ms of running time later",
		func(cc *checkerCase) { cc.last("pool1").pauses = nil }},
	{"a handler that worked on after its lease with its context live", "it returned at 1767225600404 with its context still live", func(cc *checkerCase) {
		cc.last("pool1").pauses = nil
		cc.drop("pool1", "ctxend", "m2", 1)
		cc.edit("pool1", "return", "m2", 1).Cause = ""
	}},
	{"a refused heartbeat that did not end the context", `Work logged "leaseq: extension refused; the job is no longer this handler's" about token 1 at 1767225600480 while its handler on pool2.0 ran, but its context ended only at 1767225600511: 31ms`,
		func(cc *checkerCase) { cc.record("pool2", workExtensionRefused, "m3").T1 = unixAt(480) }},
	{"an accepted result from a lapsed lease", "finish of token 1 by pool1 accepted at 1767225600260, but its lease ended at 1767225600250",
		func(cc *checkerCase) { cc.tamperAudit("m1", "done", func(a *auditRow) { a.At = unixAt(260) }) }},
	{"a result recorded before its handler returned", "recorded at 1767225600125, before its handler returned at 1767225600130",
		func(cc *checkerCase) { cc.edit("pool1", "return", "m1", 1).At = unixAt(130) }},
	{"a release Backoff did not ask for", "rule 30 asks for release (delay 40", func(cc *checkerCase) {
		cc.tamperAudit("m4", "pending", func(a *auditRow) { a.RunAt = a.At + 10 })
	}},
	{"a fail for a handler that returned nil", "rule 30 asks for finish", func(cc *checkerCase) {
		e := cc.edit("pool2", "return", "m4", 2)
		e.Plan, e.Reason = "finish", ""
	}},
	{"ErrShutdown in a pool that never shut down", "with ErrShutdown, but pool2.0 never shut down", func(cc *checkerCase) {
		cc.edit("pool2", "ctxend", "m3", 1).Cause = leaseq.ErrShutdown.Error()
	}},
	{"ErrShutdown before the drain was over", "began shutting down at 1767225600660 and drains for 100ms", func(cc *checkerCase) {
		cc.edit("pool1", "ctxend", "m5", 1).At = unixAt(700)
	}},
	{"a context ended with another cause", "neither ErrLeaseLost nor ErrShutdown", func(cc *checkerCase) {
		cc.edit("pool2", "ctxend", "m3", 1).Cause = context.Canceled.Error()
	}},
	{"a handler of a claim the queue never made", "ran token 7, which the queue never handed it", func(cc *checkerCase) {
		cc.append("pool2", histEvent{Ev: "run", Job: "m1", Owner: "pool2", Token: 7, Attempt: 1, instant: exactlyAt(600)})
	}},
	{"a claim no handler ran", "which was not killed and never ran it", func(cc *checkerCase) {
		cc.drop("pool2", "run", "m5", 2)
	}},
	{"a handler that got another lease than the claim's", "the queue's claim has", func(cc *checkerCase) {
		cc.edit("pool2", "run", "m2", 2).LeaseUntil++
	}},
	{"a result neither recorded nor refused", "neither recorded its result nor logged why", func(cc *checkerCase) {
		cc.drop("pool2", "log", "m3", 1) // the refused release's record (the extension's comes before it)
	}},
	{"a result accepted and refused", "was accepted at 1767225600125 and refused", func(cc *checkerCase) {
		cc.append("pool1", histEvent{Ev: "log", Msg: workResultRefused, Level: "WARN", Job: "m1", Owner: "pool1", Token: 1,
			Outcome: "finished", instant: instant{T1: unixAt(126)}})
	}},
	{"a recorded result that was not accepted", "but no finish of it was accepted", func(cc *checkerCase) {
		cc.append("pool2", histEvent{Ev: "log", Msg: workRecorded + "finished", Level: "DEBUG", Job: "m3", Owner: "pool2", Token: 1,
			Outcome: "finished", instant: instant{T1: unixAt(514)}})
	}},
	{"a panic not logged at Error", "panicked, but Work logged no Error", func(cc *checkerCase) {
		cc.drop("pool1", "log", "m4", 1) // the release's record; the panic's is next
		cc.drop("pool1", "log", "m4", 1)
	}},
	{"a per-job record at Info", "at Info about token 1", func(cc *checkerCase) {
		cc.append("pool1", histEvent{Ev: "log", Msg: "leaseq: job claimed", Level: "INFO", Job: "m1", Owner: "pool1", Token: 1,
			instant: instant{T1: unixAt(1)}})
	}},
	{"an extension refused while the lease was live", "extend of token 1 refused", func(cc *checkerCase) {
		cc.append("pool1", histEvent{Ev: "log", Msg: workExtensionRefused, Level: "WARN", Job: "m1", Owner: "pool1", Token: 1,
			Outcome: "lease lost", instant: instant{T1: unixAt(60)}})
	}},
}

// record finds the last record of Work with msg about job that name logged.
func (cc *checkerCase) record(name, msg, job string) *histEvent {
	for i := len(cc.incs) - 1; i >= 0; i-- {
		for j := len(cc.hist[i]) - 1; j >= 0; j-- {
			if e := &cc.hist[i][j]; cc.incs[i].name == name && e.Msg == msg && e.Job == job {
				return e
			}
		}
	}
	panic(fmt.Sprintf("no record %q about %s by %s", msg, job, name))
}

// tamperAudit edits the last audited change of id to status.
func (cc *checkerCase) tamperAudit(id, status string, edit func(a *auditRow)) {
	cc.tamper = func(audit []auditRow) []auditRow {
		for i := len(audit) - 1; i >= 0; i-- {
			if audit[i].ID == id && audit[i].Status == status {
				edit(&audit[i])
				return audit
			}
		}
		panic("no audited change of " + id + " to " + status)
	}
}

// lostLineCase is a history in which a killed process may have made one
// call without a line, for the cases where that call explains what
// followed. lose builds it; with kill false the process is not killed, and
// the same history is a violation.
type lostLineCase struct {
	name string
	lose func(cc *checkerCase, kill bool)
	// unlogged is the kind of call the checker must count as unlogged;
	// want the violation it must report without the kill.
	unlogged, want string
}

// loseLine drops the last line name wrote and kills it, or, with kill
// false, lets it exit normally.
func (cc *checkerCase) loseLine(name, ev, job string, token int64, kill bool) {
	cc.drop(name, ev, job, token)
	if kill {
		cc.kill(name)
	} else {
		cc.exit(name)
	}
}

var lostLineCases = []lostLineCase{
	{"release line lost by a killed worker", func(cc *checkerCase, kill bool) {
		// w1 releases k1 at 10 without a line; w2's claim at 20, inside
		// the lease w1's claim logged, needs that release.
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "release", 0)
		cc.settle(10, "w1", c, "release", 0)
		cc.loseLine("w1", "release", "k1", 1, kill)
		c = cc.claim(20, "w2")
		cc.deliver(30, "w2", c, "finish", 0)
		cc.settle(30, "w2", c, "finish", 0)
		cc.exit("w2")
	}, "release", "overlap"},
	{"extend line lost by a killed worker", func(cc *checkerCase, kill bool) {
		// k1 has one attempt; w1 extends it at 100 without a line, and
		// the sweep at 260 quarantines it with the lease end 250 that
		// only the extension explains.
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1"), MaxAttempts: 1})
		c := cc.claim(0, "w1")
		cc.extend(100, "w1", &c)
		cc.loseLine("w1", "extend", "k1", 1, kill)
		cc.sweep(260)
	}, "extend", "lease_until is"},
	{"cancel line lost by a killed operator", func(cc *checkerCase, kill bool) {
		// op cancels k1 at 10 without a line; w1's refused extension at
		// 20, inside its lease, and the row's reason need that cancel.
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1")})
		c := cc.claim(0, "w1")
		cc.cancel(10, "k1")
		cc.loseLine(chaosOperatorName, "cancel", "k1", 0, kill)
		cc.extend(20, "w1", &c)
		cc.exit("w1")
	}, "cancel", "while its lease was live"},
	{"claim line lost, then swept and purged", func(cc *checkerCase, kill bool) {
		// k1 has one attempt; w1's claim at 0 has no line, the sweep at
		// 150 quarantines k1 and the purge at 200 deletes it: only the
		// probe after the run shows that token 1 was handed out.
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1"), MaxAttempts: 1})
		cc.claim(0, "w1")
		cc.loseLine("w1", "claim", "k1", 1, kill)
		cc.sweep(150)
		cc.purge(200, 160, leaseq.StatusQuarantined)
		cc.exit(chaosOperatorName)
	}, "claim", "no killed incarnation left"},
	{"enqueue line lost by a killed operator", func(cc *checkerCase, kill bool) {
		// op enqueues k1 again at 30 without a line; the claim at 40 and
		// the row need that enqueue.
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.purge(20, 15, leaseq.StatusDone)
		cc.reenqueue(30, leaseq.Job{ID: "k1", Qty: 2, Payload: []byte("k1 again")})
		cc.loseLine(chaosOperatorName, "enqueue", "k1", 0, kill)
		c = cc.claim(40, "w1")
		cc.deliver(50, "w1", c, "finish", 0)
		cc.settle(50, "w1", c, "finish", 0)
		cc.exit("w1")
	}, "", "the row holds payload"},
}

// unknownFault is the error of a call cut short whose outcome its look-up
// could not find (rule 41): the one error a call that committed may answer.
const unknownFault = "unexpected EOF, and the read that finds out what the call did failed; whether the call was written is not known (the server restarted)"

// fail turns the last line of name matching ev, job and token, a call the
// queue made, into the line of a call that failed with an error (the
// connection was cut after the commit) during a server restart: no result,
// no clock reading, a window around the instant, and the error that its
// outcome is not known. A claim's failed line names no job.
func (cc *checkerCase) fail(name, ev, job string, token int64) {
	e := cc.edit(name, ev, job, token)
	lo, hi := e.bounds()
	*e = histEvent{Ev: e.Ev, Job: e.Job, Owner: e.Owner, Token: e.Token, Lease: e.Lease, Delay: e.Delay, Reason: e.Reason,
		Before: e.Before, Statuses: e.Statuses, Listed: e.Listed, Qty: e.Qty, Payload: e.Payload, MaxAttempts: e.MaxAttempts,
		Deadline: e.Deadline, RunAt: e.RunAt, Fault: unknownFault, instant: instant{T0: lo - 1, T1: hi + 1}}
	if ev == "claim" {
		e.Job, e.Token, e.Deadline = "", 0, 0
	}
	cc.restarts = append(cc.restarts, interval{lo - 1, hi + 1})
}

// failed is the line of a call at t0 + at that failed with an error
// during a server restart and did nothing: the call was never made.
func (cc *checkerCase) failed(at int64, name string, e histEvent) {
	e.Owner, e.Fault, e.instant = name, "connection refused", instant{T0: unixAt(at), T1: unixAt(at) + 1}
	cc.log(name, e)
	cc.restarts = append(cc.restarts, interval{unixAt(at), unixAt(at) + 1})
}

// faultCase is a history in which a call of a loop worker or of the
// operator failed with an error during a server restart, for each way the
// checker must learn from the audit (or, for a purge, from what followed)
// what the call did. Without the restart the same history
// is a violation: no call fails while the server is up.
type faultCase struct {
	name  string
	build func(cc *checkerCase)
	// committed is the kind of call the checker must find took effect; ""
	// for none.
	committed string
}

var faultCases = []faultCase{
	{"a claim that committed", func(cc *checkerCase) {
		// w1's claim at 0 is lost to it; w2 takes the job once that
		// lease has ended.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		cc.claim(0, "w1")
		cc.fail("w1", "claim", "f1", 1)
		c := cc.claim(160, "w2")
		cc.deliver(170, "w2", c, "finish", 0)
		cc.settle(170, "w2", c, "finish", 0)
		cc.exit("w1", "w2")
	}, "claim"},
	{"a claim that did not commit", func(cc *checkerCase) {
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		cc.failed(0, "w1", histEvent{Ev: "claim"})
		c := cc.claim(10, "w1")
		cc.deliver(20, "w1", c, "finish", 0)
		cc.settle(20, "w1", c, "finish", 0)
		cc.exit("w1")
	}, ""},
	{"an extension that committed", func(cc *checkerCase) {
		// The finish at 200 needs the extension to 250 of the failed
		// call at 100.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		ext := c
		cc.extend(100, "w1", &ext)
		cc.fail("w1", "extend", "f1", 1)
		cc.deliver(190, "w1", c, "finish", 0)
		cc.settle(200, "w1", c, "finish", 0)
		cc.exit("w1")
	}, "extend"},
	{"a finish that committed, made again and refused", func(cc *checkerCase) {
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.fail("w1", "finish", "f1", 1)
		cc.settle(30, "w1", c, "finish", 0)
		cc.exit("w1")
	}, "finish"},
	{"a finish that did not commit, made again and accepted", func(cc *checkerCase) {
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.failed(10, "w1", histEvent{Ev: "finish", Job: "f1", Token: 1})
		cc.settle(30, "w1", c, "finish", 0)
		cc.exit("w1")
	}, ""},
	{"a release that committed, made again and refused", func(cc *checkerCase) {
		// w2's claim at 40, inside w1's lease, needs the release.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "release", 0)
		cc.settle(10, "w1", c, "release", 0)
		cc.fail("w1", "release", "f1", 1)
		cc.settle(30, "w1", c, "release", 0)
		c = cc.claim(40, "w2")
		cc.deliver(50, "w2", c, "finish", 0)
		cc.settle(50, "w2", c, "finish", 0)
		cc.exit("w1", "w2")
	}, "release"},
	{"a cancel that committed", func(cc *checkerCase) {
		// w1's refused extension at 20, inside its lease, and the row's
		// reason need the cancel.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.cancel(10, "f1")
		cc.fail(chaosOperatorName, "cancel", "f1", 0)
		cc.extend(20, "w1", &c)
		cc.exit("w1", chaosOperatorName)
	}, "cancel"},
	{"an enqueue that took effect", func(cc *checkerCase) {
		// The audit has the insert of the enqueue at 30, which the claim
		// at 40 and the row need.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.purge(20, 15, leaseq.StatusDone)
		cc.reenqueue(30, leaseq.Job{ID: "f1", Qty: 2, Payload: []byte("f1 again")})
		cc.fail(chaosOperatorName, "enqueue", "f1", 0)
		c = cc.claim(40, "w1")
		cc.deliver(50, "w1", c, "finish", 0)
		cc.settle(50, "w1", c, "finish", 0)
		cc.exit("w1", chaosOperatorName)
	}, "enqueue"},
	{"a purge that took effect", func(cc *checkerCase) {
		// f1 is gone: only the failed purge at 20 can have deleted it.
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.purge(20, 15, leaseq.StatusDone)
		cc.fail(chaosOperatorName, "purge", "", 0)
		cc.exit("w1", chaosOperatorName)
	}, "purge"},
}

// faultViolations are tamperings of fault cases, each a kind of violation
// checkHistory must report with a message containing want.
var faultViolations = []struct {
	name, want string
	of         string // the fault case tampered
	tamper     func(cc *checkerCase)
}{
	{"a finish accepted again after a failed one committed", "finish of token 1 by w1 accepted at 1767225600030, but its own finish",
		"a finish that committed, made again and refused", func(cc *checkerCase) { cc.edit("w1", "finish", "f1", 1).OK = true }},
	{"a failed claim that committed by the audit of no one", "tokens have no logged claim",
		"a claim that committed", func(cc *checkerCase) {
			cc.tamper = func(audit []auditRow) []auditRow {
				return slices.DeleteFunc(audit, func(a auditRow) bool { return a.Owner == "w1" && a.call() == "claim" })
			}
		}},
	{"a failed release taken to have done nothing", "overlap",
		"a release that committed, made again and refused", func(cc *checkerCase) {
			cc.tamper = func(audit []auditRow) []auditRow {
				return slices.DeleteFunc(audit, func(a auditRow) bool { return a.Owner == "w1" && a.call() == "release" })
			}
		}},
}

// faultCase is the fault case called name.
func faultCaseNamed(name string) faultCase {
	i := slices.IndexFunc(faultCases, func(c faultCase) bool { return c.name == name })
	return faultCases[i]
}

// newPoolFaultCase is a pool whose claim at 0 failed with an error after
// it committed (pool2 takes the job when that lease is over), and whose
// finish at 175 did too: Work's next try at 190 is refused. With
// claimBetween, pool1 claims p2 at 3, before its claim fault is logged at
// 5, which then cannot be the claim's at 0.
func newPoolFaultCase(t *testing.T, env *checkerEnv, claimBetween bool) *checkerCase {
	cc := newCase(t, env)
	cc.enqueue(0, leaseq.Job{ID: "p1", Qty: 1, Payload: []byte("p1")})
	cc.f.at(0).mustClaim("pool1", chaosLease)
	if claimBetween {
		cc.enqueue(1, leaseq.Job{ID: "p2", Qty: 1, Payload: []byte("p2")})
		c := cc.poolClaim(3, "pool1", "finish", "quick")
		cc.deliver(4, "pool1", c, "finish", 0)
		cc.handlerReturn(4, "pool1", c, "finish", "", nil)
		cc.workRecord(4, "pool1", c, "finish", 0, "", "finished")
	}
	cc.log("pool1", histEvent{Ev: "log", Msg: workClaimFailed, Level: slog.LevelError.String(), Owner: "pool1",
		instant: instant{T1: unixAt(5)}})
	c := cc.poolClaim(160, "pool2", "finish", "quick")
	cc.deliver(165, "pool2", c, "finish", 0)
	cc.handlerReturn(170, "pool2", c, "finish", "", nil)
	if ok, err := cc.f.at(175).q.Finish(cc.f.ctx, c); err != nil || !ok {
		t.Fatalf("Finish: %v, %v", ok, err)
	}
	cc.workLog(176, "pool2", c, slog.LevelError, workRecordRetry, "finished")
	cc.workRecord(190, "pool2", c, "finish", 0, "", "finished")
	cc.exit("pool1", "pool2")
	return cc
}

// checkerViolations are tamperings of newCheckerCase, each a kind of
// violation checkHistory must report with a message containing want.
var checkerViolations = []struct {
	name, want string
	tamper     func(cc *checkerCase)
}{
	{"claim line lost without a kill", "no killed incarnation left", func(cc *checkerCase) {
		cc.drop("w2", "claim", "j2", 1)
		cc.incs[1].killed = false
		cc.exit("w2")
	}},
	{"finish line lost without a kill", "no accepted finish", func(cc *checkerCase) {
		cc.drop("w1", "finish", "j2", 2)
	}},
	{"overlapping claims", "overlap", func(cc *checkerCase) {
		e := cc.edit("w1", "claim", "j2", 2)
		e.At, e.T0, e.T1, e.LeaseUntil = e.At-10, e.T0-10, e.T1-10, e.LeaseUntil-10
	}},
	{"lease_until not min(at+lease, deadline)", "want min(at+lease, deadline)", func(cc *checkerCase) {
		cc.edit("w1", "claim", "j1", 1).LeaseUntil++
	}},
	{"finish accepted at lease end", "but its lease ended at", func(cc *checkerCase) {
		e := cc.edit("w1", "finish", "j1", 1)
		e.At, e.T0, e.T1 = unixAt(150), unixAt(150), unixAt(150)
	}},
	{"finish refused while the lease was live", "while its lease was live", func(cc *checkerCase) {
		cc.edit("w1", "finish", "j1", 1).OK = false
	}},
	{"a stale finish accepted", "accepted finish of token 1", func(cc *checkerCase) {
		cc.append("w2", histEvent{Ev: "finish", Job: "j2", Owner: "w2", Token: 1, OK: true, instant: exactlyAt(25)})
	}},
	{"a token handed out twice", "handed out twice", func(cc *checkerCase) {
		e := *cc.edit("w2", "claim", "j2", 1)
		e.Job = "j1"
		cc.append("w2", e)
	}},
	{"attempt not counting claims", "has attempt", func(cc *checkerCase) {
		cc.edit("w1", "claim", "j1", 1).Attempt = 2
	}},
	{"a job stuck", "stuck", func(cc *checkerCase) {
		cc.enqueue(470, leaseq.Job{ID: "j9", Qty: 1})
	}},
	{"a job lost", "lost", func(cc *checkerCase) {
		cc.jobs = append(cc.jobs, leaseq.Job{ID: "j8", Qty: 1})
	}},
	{"done but never delivered", "never delivered", func(cc *checkerCase) {
		cc.rcv.deliveries = cc.rcv.deliveries[1:]
		delete(cc.rcv.qty, jobKey("j1", "p1"))
		cc.rcv.total -= 2
	}},
	{"a delivery without a claim", "has no logged claim", func(cc *checkerCase) {
		cc.rcv.deliveries = append(cc.rcv.deliveries, delivery{job: "j1", payload: "p1", owner: "w3", plan: "finish", token: 1, qty: 2})
	}},
	{"receiver total off", "receiver total", func(cc *checkerCase) {
		cc.rcv.total++
	}},
	{"an extend with a stale token accepted", "extend of token 1 by w2 accepted at", func(cc *checkerCase) {
		cc.append("w2", histEvent{Ev: "extend", Job: "j2", Owner: "w2", Token: 1, Lease: chaosLease.Milliseconds(), OK: true,
			LeaseUntil: unixAt(350), instant: exactlyAt(200)})
	}},
	{"an extend past the deadline", "past its deadline", func(cc *checkerCase) {
		cc.edit("w3", "extend", "j3", 1).LeaseUntil = unixAt(450)
	}},
	{"an extend accepted after Cancel", "the job was cancelled at", func(cc *checkerCase) {
		e := cc.edit("w3", "extend", "j4", 1)
		e.OK, e.LeaseUntil = true, unixAt(550)
	}},
	{"a finish accepted after Cancel", "finish of token 1 by w3 accepted at 1767225600410, but the job was cancelled", func(cc *checkerCase) {
		cc.edit("w3", "finish", "j4", 1).OK = true
	}},
	{"a release refused while the lease was live", "release of token 1 refused", func(cc *checkerCase) {
		cc.edit("w3", "release", "j3", 1).OK = false
	}},
	{"a claim before the release delay ended", "delayed it by 50ms", func(cc *checkerCase) {
		e := cc.edit("w1", "claim", "j3", 2)
		e.At, e.T0, e.T1 = unixAt(340), unixAt(340), unixAt(340)
	}},
	{"a call accepted after a refusal of the same claim", "after extend of the same claim was refused", func(cc *checkerCase) {
		cc.edit("w3", "finish", "j4", 1).OK = true
	}},
	{"a claim from before a purge accepted after the re-enqueue", "the job was purged and enqueued again at", func(cc *checkerCase) {
		cc.append("w3", histEvent{Ev: "fail", Job: "j3", Owner: "w3", Token: 1, OK: true, Reason: chaosFailReason("j3", 1), instant: exactlyAt(435)})
	}},
	{"a re-enqueued job whose tokens restart", "tokens do not continue", func(cc *checkerCase) {
		e := cc.edit("w1", "claim", "j3", 3)
		e.Token, e.Attempt = 1, 1
	}},
	{"a cancel accepted after the job ended", "cancel accepted at", func(cc *checkerCase) {
		e := cc.edit(chaosOperatorName, "cancel", "j1", 0)
		e.OK, e.Err = true, ""
	}},
	{"a cancel refused while the job was leased", "cancel refused (invalid)", func(cc *checkerCase) {
		cc.append(chaosOperatorName, histEvent{Ev: "cancel", Job: "j4", Owner: chaosOperatorName, Reason: "late", Err: "invalid", instant: exactlyAt(385)})
	}},
	{"a refused cancel that changed the row", "which no accepted call explains", func(cc *checkerCase) {
		e := cc.edit(chaosOperatorName, "cancel", "j4", 0)
		e.OK, e.Err = false, "invalid"
	}},
	{"a purge of a job not ended before its instant", "no purge could have deleted it", func(cc *checkerCase) {
		cc.drop("w1", "fail", "j3", 2)
	}},
	{"a purge deleting fewer than listed", "fewer than", func(cc *checkerCase) {
		cc.edit(chaosOperatorName, "purge", "", 0).Deleted = 0
	}},
	{"a purged ID refused as a duplicate", "refused as duplicate", func(cc *checkerCase) {
		e := cc.edit(chaosOperatorName, "enqueue", "j3", 0)
		e.OK, e.Err = false, "duplicate"
	}},
	{"a row that is not the last enqueue", "the row holds payload", func(cc *checkerCase) {
		cc.edit(chaosOperatorName, "enqueue", "j3", 0).Payload = "p3 once more"
	}},
	{"a reading outside its call", "outside its call", func(cc *checkerCase) {
		cc.edit("w1", "finish", "j1", 1).T1 = unixAt(5)
	}},
	{"accepted when its whole window was past the lease", "accepted at [1767225600150, 1767225600160]", func(cc *checkerCase) {
		e := cc.edit("w1", "finish", "j1", 1)
		e.At, e.T0, e.T1 = 0, unixAt(150), unixAt(160)
	}},
	{"refused when its whole window was before the cancel", "refused at [1767225600381, 1767225600389]", func(cc *checkerCase) {
		e := cc.edit("w3", "extend", "j4", 1)
		e.At, e.T0, e.T1 = 0, unixAt(381), unixAt(389)
	}},
}

// TestChaosCheckerCatches feeds checkHistory a clean history, histories
// with the loss a kill may cause (which it must accept) and the same
// losses without a kill (which it must not), calls judged by their
// real-time window only, and histories with each kind of violation; and
// the same for pools: a clean history of two pools, handlers that outlived
// their lease in a stopped process (which it must accept) or in a running
// one (which it must not), and each kind of violation of a pool; a clean
// history of FinishTx handlers and their effects (one stalled in its
// function past the lease, one stopped over it), one whose FinishTx failed
// in a restart but committed, and each kind of violation of an effect or
// a FinishTx; and calls that failed with an error during a server
// restart, which it must judge by what the audit shows they did, and not
// at all while the server was up. It runs on each engine, with that
// engine's audit triggers.
func TestChaosCheckerCatches(t *testing.T) {
	for _, e := range chaosEngines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			checkerCatches(t, newCheckerEnv(t, e))
		})
	}
}

// checkerCatches is TestChaosCheckerCatches on one engine: the audit's
// triggers are the engine's.
func checkerCatches(t *testing.T, env *checkerEnv) {
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		rep := newCheckerCase(t, env).check(t)
		if len(rep.violations) != 0 || rep.jobs != 5 || rep.reenqueued != 1 || rep.done != 3 || rep.quarantined != 1 ||
			rep.purged != 1 || rep.claims != 7 || rep.accepted["finish"] != 3 || rep.refused["finish"] != 1 ||
			rep.accepted["extend"] != 1 || rep.refused["extend"] != 1 || rep.accepted["release"] != 1 ||
			rep.accepted["fail"] != 1 || rep.accepted["cancel"] != 1 || rep.refused["cancel"] != 1 || rep.purges != 1 ||
			rep.deleted != 1 || rep.deliveries != 4 || rep.failed != 2 {
			t.Fatalf("got %+v, want no violations and the figures of the case", rep)
		}
	})
	t.Run("claim line lost by a killed worker", func(t *testing.T) {
		t.Parallel()
		cc := newCheckerCase(t, env)
		cc.drop("w2", "claim", "j2", 1)
		rep := cc.check(t)
		if len(rep.violations) != 0 || rep.unloggedClaims != 1 {
			t.Fatalf("got %+v, want no violations and 1 unlogged claim", rep)
		}
	})
	t.Run("finish line lost by a killed worker", func(t *testing.T) {
		t.Parallel()
		cc := newCheckerCase(t, env)
		cc.drop("w1", "exit", "", 0)
		cc.loseLine("w1", "finish", "j3", 3, true)
		rep := cc.check(t)
		if len(rep.violations) != 0 || rep.unlogged["finish"] != 1 {
			t.Fatalf("got %+v, want no violations and 1 unlogged finish", rep)
		}
	})
	t.Run("a window straddling the lease end", func(t *testing.T) {
		t.Parallel()
		cc := newCheckerCase(t, env)
		e := cc.edit("w1", "finish", "j1", 1)
		e.At, e.T0, e.T1 = 0, unixAt(5), unixAt(160)
		e = cc.edit("w3", "extend", "j4", 1)
		e.At, e.T0, e.T1 = 0, unixAt(385), unixAt(395)
		if rep := cc.check(t); len(rep.violations) != 0 {
			t.Fatalf("violations: %q; want none: each call may have run where its answer was right", rep.violations)
		}
	})
	t.Run("a purged ID whose tokens do not continue after the run", func(t *testing.T) {
		t.Parallel()
		cc := newCase(t, env)
		cc.enqueue(0, leaseq.Job{ID: "k1", Qty: 1, Payload: []byte("k1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.purge(20, 15, leaseq.StatusDone)
		cc.exit("w1", chaosOperatorName)
		cc.edit("w1", "claim", "k1", 1).Token = 2
		wantViolation(t, cc.check(t), "after the run, its first claim got token 2, but the purged job's tokens had reached 2")
	})
	t.Run("pools", func(t *testing.T) {
		t.Parallel()
		rep := newPoolCase(t, env).check(t)
		want := poolReport{runs: 8, claims: 8, extends: 6, refusedExtends: 1, lostSeen: 2, shutdownSeen: 1, panics: 1,
			outlived: 1, lateMax: 2, lateRealMax: 72, cancelled: 1, cancelSeenMax: 41}
		if len(rep.violations) != 0 || rep.pool != want || rep.done != 3 || rep.quarantined != 2 || rep.accepted["finish"] != 3 ||
			rep.refused["finish"] != 1 || rep.accepted["release"] != 2 || rep.refused["release"] != 1 || rep.accepted["fail"] != 1 {
			t.Fatalf("got %+v, want no violations and the figures of the case (pools %+v)", rep, want)
		}
	})
	t.Run("a pause only the observer saw", func(t *testing.T) {
		t.Parallel()
		cc := newPoolCase(t, env)
		cc.last("pool1").pauses = nil
		cc.append("pool1", histEvent{Ev: "gap", Owner: "pool1", instant: instant{T0: unixAt(189), T1: unixAt(401)}})
		if rep := cc.check(t); len(rep.violations) != 0 || rep.pool.lateMax != 1 {
			t.Fatalf("got %+v, want no violations and 1ms of running time from the lease end to the context's", rep)
		}
	})
	t.Run("a handler that starts after its lease ended", func(t *testing.T) {
		// pool1's claim at 0 (lease_until 150) commits late; its handler
		// starts at 200 and is told at once.
		t.Parallel()
		cc := newCase(t, env)
		cc.enqueue(0, leaseq.Job{ID: "n1", Qty: 1, Payload: []byte("n1")})
		c := cc.poolClaim(0, "pool1", "finish", "quick")
		cc.edit("pool1", "run", "n1", 1).At = unixAt(200)
		cc.ctxEnd(203, "pool1", c, leaseq.ErrLeaseLost)
		gaveUp := "gave up n1 token 1: " + leaseq.ErrLeaseLost.Error()
		cc.handlerReturn(204, "pool1", c, "gave up", gaveUp, leaseq.ErrLeaseLost)
		cc.workRecord(205, "pool1", c, "release", chaosBackoff(1).Milliseconds(), gaveUp, "released")
		c = cc.poolClaim(210, "pool2", "finish", "quick")
		cc.deliver(215, "pool2", c, "finish", 0)
		cc.handlerReturn(216, "pool2", c, "finish", "", nil)
		cc.workRecord(217, "pool2", c, "finish", 0, "", "finished")
		cc.exit("pool1", "pool2")
		if rep := cc.check(t); len(rep.violations) != 0 || rep.pool.startedLate != 1 || rep.pool.lateMax != 3 {
			t.Fatalf("got %+v, want no violations and a context that ended 3ms after its handler started", rep)
		}
	})
	t.Run("a pool killed while stopped past its lease", func(t *testing.T) {
		t.Parallel()
		cc := newOutlivedCase(t, env)
		cc.pause("pool1", 60, 290)
		if rep := cc.check(t); len(rep.violations) != 0 || rep.pool.outlived != 1 || rep.pool.lateMax != 0 {
			t.Fatalf("got %+v, want no violations: it never ran after its lease ended", rep)
		}
	})
	t.Run("a pool killed after Work logged a lease end, before the handler's first line", func(t *testing.T) {
		t.Parallel()
		cc := newOutlivedCase(t, env)
		cc.drop("pool1", "run", "n1", 1)
		cc.append("pool1", histEvent{Ev: "log", Msg: workLeaseEnded, Level: "WARN", Job: "n1", Owner: "pool1", Token: 1,
			Outcome: "lease lost", instant: instant{T1: unixAt(201)}})
		if rep := cc.check(t); len(rep.violations) != 0 {
			t.Fatalf("violations: %q; want none: the kill came before the handler's first line", rep.violations)
		}
		cc.last("pool1").killed = false
		cc.exit("pool1")
		wantViolation(t, cc.check(t), "n1: pool1.0 logged log of token 1 without a run of it")
	})
	t.Run("a pool killed running long past its lease", func(t *testing.T) {
		t.Parallel()
		wantViolation(t, newOutlivedCase(t, env).check(t),
			"it was killed at 1767225600290 with no sign that its context had ended: 90ms of running time later")
	})
	for _, v := range poolViolations {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cc := newPoolCase(t, env)
			v.tamper(cc)
			wantViolation(t, cc.check(t), v.want)
		})
	}
	t.Run("FinishTx", func(t *testing.T) {
		t.Parallel()
		rep := newFinishTxCase(t, env).check(t)
		want := txReport{runs: 5, accepted: 3, refusedBefore: 1, refusedAfter: 1, effects: 3}
		if len(rep.violations) != 0 || rep.tx != want || rep.done != 3 || rep.accepted["finish"] != 3 || rep.refused["release"] != 2 {
			t.Fatalf("got %+v, want no violations and the figures of the case (FinishTx %+v)", rep, want)
		}
	})
	t.Run("a neighbour of a stall in FinishTx's function", func(t *testing.T) {
		t.Parallel()
		if rep := newNeighbourCase(t, env, true).check(t); len(rep.violations) != 0 {
			t.Fatalf("violations: %q; want none: its heartbeat kept its lease", rep.violations)
		}
		cc := newNeighbourCase(t, env, false)
		cc.pause("pool1", 20, 40)
		if rep := cc.check(t); len(rep.violations) != 0 || rep.pool.neighbourLost != 1 || rep.pool.neighbourExcused != 1 {
			t.Fatalf("got %+v, want no violations: pool1 was stopped in the lease's last span", rep)
		}
		wantViolation(t, newNeighbourCase(t, env, false).check(t),
			"n1: token 1's lease on pool1.0 ended at 1767225600150, while s1's handler (token 1) stalled in FinishTx's function from 1767225600060 to 1767225600140")
	})
	t.Run("a FinishTx that failed in a restart but committed", func(t *testing.T) {
		// The server restarts while pool1's FinishTx commits: the finish
		// and its effect are in, the call returned an error, the handler
		// returns it, and Work's release is refused.
		t.Parallel()
		cc := committedFinishTx(t, env, unknownFault)
		if rep := cc.check(t); len(rep.violations) != 0 || rep.tx.faults != 1 || rep.tx.committed != 1 || rep.tx.effects != 1 {
			t.Fatalf("got %+v, want no violations and a FinishTx that failed but committed, with its effect", rep)
		}
	})
	t.Run("a FinishTx that committed but answered an error", func(t *testing.T) {
		t.Parallel()
		wantViolation(t, committedFinishTx(t, env, "unexpected EOF").check(t), "the finish of its claim committed")
	})
	for _, v := range finishTxViolations {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cc := newFinishTxCase(t, env)
			v.tamper(cc)
			wantViolation(t, cc.check(t), v.want)
		})
	}
	for _, c := range lostLineCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			c.lose(cc, true)
			if rep := cc.check(t); len(rep.violations) != 0 || c.unlogged != "" && rep.unlogged[c.unlogged] != 1 {
				t.Fatalf("got %+v, want no violations and 1 unlogged %s", rep, c.unlogged)
			}
		})
		t.Run(c.name+" without a kill", func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			c.lose(cc, false)
			wantViolation(t, cc.check(t), c.want)
		})
	}
	for _, v := range checkerViolations {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cc := newCheckerCase(t, env)
			v.tamper(cc)
			wantViolation(t, cc.check(t), v.want)
		})
	}
	for _, c := range faultCases {
		t.Run("failed: "+c.name, func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			c.build(cc)
			rep := cc.check(t)
			if len(rep.violations) != 0 || c.committed != "" && rep.committed[c.committed] != 1 || c.committed == "" && len(rep.committed) != 0 {
				t.Fatalf("got %+v, want no violations and %q taking effect", rep, c.committed)
			}
		})
		t.Run("failed: "+c.name+" while the server was up", func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			c.build(cc)
			cc.restarts = nil
			wantViolation(t, cc.check(t), "while the server was up")
		})
	}
	for _, c := range faultCases {
		if c.committed == "" || c.committed == "claim" {
			continue
		}
		t.Run("failed: "+c.name+", answered as failed", func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			c.build(cc)
			for i := range cc.hist {
				for j := range cc.hist[i] {
					if e := &cc.hist[i][j]; e.Fault == unknownFault {
						e.Fault = "unexpected EOF"
					}
				}
			}
			wantViolation(t, cc.check(t), "but it committed")
		})
	}
	for _, v := range faultViolations {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			cc := newCase(t, env)
			faultCaseNamed(v.of).build(cc)
			v.tamper(cc)
			wantViolation(t, cc.check(t), v.want)
		})
	}
	t.Run("a claim at an instant before the enqueue it took", func(t *testing.T) {
		// w1 reads the clock at 25 and claims only after op has enqueued
		// f1 again at 30: the job, claimable at once, is taken at 25.
		t.Parallel()
		cc := newCase(t, env)
		cc.enqueue(0, leaseq.Job{ID: "f1", Qty: 1, Payload: []byte("f1")})
		c := cc.claim(0, "w1")
		cc.deliver(10, "w1", c, "finish", 0)
		cc.settle(10, "w1", c, "finish", 0)
		cc.purge(20, 15, leaseq.StatusDone)
		cc.reenqueue(30, leaseq.Job{ID: "f1", Qty: 2, Payload: []byte("f1 again")})
		c = cc.claim(25, "w1")
		cc.deliver(40, "w1", c, "finish", 0)
		cc.settle(40, "w1", c, "finish", 0)
		cc.exit("w1", chaosOperatorName)
		if rep := cc.check(t); len(rep.violations) != 0 || rep.claimsBeforeEnqueue != 1 {
			t.Fatalf("got %+v, want no violations and 1 claim before its enqueue", rep)
		}
	})
	t.Run("a pool's claim and result that failed but committed", func(t *testing.T) {
		t.Parallel()
		if rep := newPoolFaultCase(t, env, false).check(t); len(rep.violations) != 0 || rep.pool.claimedFaults != 1 || rep.pool.recordedFaults != 1 {
			t.Fatalf("got %+v, want no violations, a claim and a result that failed but committed", rep)
		}
	})
	t.Run("a pool's claim no handler ran, with no fault", func(t *testing.T) {
		t.Parallel()
		cc := newPoolFaultCase(t, env, false)
		cc.drop("pool1", "log", "", 0)
		wantViolation(t, cc.check(t), "p1: token 1 claimed by pool1.0 at 1767225600000, which was not killed and never ran it")
	})
	t.Run("a pool's claim no handler ran, its fault after the next claim", func(t *testing.T) {
		t.Parallel()
		wantViolation(t, newPoolFaultCase(t, env, true).check(t), "p1: token 1 claimed by pool1.0 at 1767225600000, which was not killed and never ran it")
	})
	t.Run("a pool's result accepted and refused, with no fault", func(t *testing.T) {
		t.Parallel()
		cc := newPoolFaultCase(t, env, false)
		cc.record("pool2", workRecordRetry, "p1").Msg = "leaseq: something else"
		wantViolation(t, cc.check(t), "p1: the result of token 2 was accepted at 1767225600175 and refused")
	})
}

// committedFinishTx is a history in which pool1's FinishTx of y1 committed
// during a server restart and answered fault; the handler returns that
// error, and Work's release is refused.
func committedFinishTx(t *testing.T, env *checkerEnv, fault string) *checkerCase {
	cc := newCase(t, env)
	cc.enqueue(0, leaseq.Job{ID: "y1", Qty: 1, Payload: []byte("y1")})
	c := cc.poolClaim(0, "pool1", "finishtx", "quick")
	cc.deliver(5, "pool1", c, "finish", 0)
	cc.poolFinishTx(10, 10, "pool1", c)
	f := cc.edit("pool1", "finishtx", "y1", 1)
	f.OK, f.Fault, f.T1 = false, fault, unixAt(20)
	cc.restarts = []interval{{unixAt(12), unixAt(30)}}
	text := "recording y1 token 1 failed: " + fault
	cc.handlerReturn(21, "pool1", c, "error", text, nil)
	cc.workRecord(22, "pool1", c, "release", chaosBackoff(1).Milliseconds(), text, "released")
	cc.exit("pool1")
	return cc
}

func wantViolation(t *testing.T, rep chaosReport, want string) {
	t.Helper()
	for _, got := range rep.violations {
		if strings.Contains(got, want) {
			return
		}
	}
	t.Fatalf("violations: %q; want one containing %q", rep.violations, want)
}

// TestChaosServerClockOrder: the two allowances the checker makes for the
// pools on the server's clock (auditRow says why), which the chaos meets
// only now and then. inCommitOrder puts the audited calls of a claim in
// their seq order in the places the instants gave them, and leaves the
// refusals where they were; seenBy judges a refusal by the lease end
// before the first accepted call that may not have been visible to it,
// and by the last lease end when every one was, or when the calls carry
// no commit time (the injected clocks).
func TestChaosServerClockOrder(t *testing.T) {
	op := func(ev string, seq int64) *loggedOp { return &loggedOp{histEvent: histEvent{Ev: ev, seq: seq}} }
	finish, extend, refused := op("finish", 9), op("extend", 8), op("release", 0)
	ops := []*loggedOp{finish, refused, extend} // by instant: the step's finish began first
	inCommitOrder(ops)
	if ops[0] != extend || ops[1] != refused || ops[2] != finish {
		t.Errorf("inCommitOrder: got %s, %s, %s; want extend, release, finish", ops[0].Ev, ops[1].Ev, ops[2].Ev)
	}

	slack := chaosVisibleSlack.Milliseconds()
	// An extension from 244 to 356, read at 206 and committed at 250: a
	// refusal judged from 245 may not have seen it.
	accepted := []leaseChange{{committed: 250, before: 244}}
	for _, c := range []struct {
		name      string
		accepted  []leaseChange
		lo, wantL int64
	}{
		{"committed after the refusal began", accepted, 245, 244},
		{"committed exactly the slack before it", accepted, 250 + slack, 244},
		{"committed more than the slack before it", accepted, 250 + slack + 1, 356},
		{"no commit time", []leaseChange{{before: 244}}, 245, 356},
		{"none accepted", nil, 245, 356},
	} {
		if got := seenBy(c.accepted, c.lo, 356); got != c.wantL {
			t.Errorf("%s: seenBy = %d, want %d", c.name, got, c.wantL)
		}
	}
}
