package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// fuzzTarget is where a fuzz target runs its inputs on one engine: one
// Queue for each of its options, all on one database and clock, made once
// per process. skip says why the engine cannot run here (no PostgreSQL
// server), if it cannot.
type fuzzTarget struct {
	engine string
	skip   string
	qs     []*leaseq.Queue
	db     *sql.DB
	clock  *leaseq.ManualClock
}

// fuzzTargets makes a fuzzTarget on each engine under test.
func fuzzTargets(f *testing.F, opts ...leaseq.Options) []fuzzTarget {
	engines, err := testEngines()
	if err != nil {
		f.Fatal(err)
	}
	var targets []fuzzTarget
	for _, e := range engines {
		ft := fuzzTarget{engine: e.name}
		if e.name == postgresEngine.name {
			ft.skip = pgtest.SkipReason()
		}
		if ft.skip == "" {
			ft.db = fuzzDB(f, e)
			ft.qs, ft.clock = fuzzQueues(f, ft.db, opts...)
		}
		targets = append(targets, ft)
	}
	return targets
}

// forFuzzTargets runs one input on every target, as subtests named after
// their engines: every go test runs the seed corpus on each engine. To fuzz
// one engine alone, name it in LEASEQ_TEST_ENGINES.
func forFuzzTargets(t *testing.T, targets []fuzzTarget, run func(t *testing.T, qs []*leaseq.Queue, db *sql.DB, clock *leaseq.ManualClock)) {
	for _, ft := range targets {
		t.Run(ft.engine, func(t *testing.T) {
			engineRuns[ft.engine].count(t)
			if ft.skip != "" {
				t.Skip(ft.skip)
			}
			run(t, ft.qs, ft.db, ft.clock)
		})
	}
}

// fuzzDB is the database a fuzz target reuses for every input: it is
// emptied before each one. On SQLite, creating a file and its schema costs
// several fsyncs, emptying a table costs one transaction. synchronous=OFF
// only skips fsync, which no rule under test depends on, and
// journal_mode=PERSIST (a rollback journal New accepts) keeps the journal
// file instead of creating and deleting it in every transaction: together
// about three times the execs. On PostgreSQL it is a fresh database like
// any test's: a commit there costs little next to one on a file.
func fuzzDB(f *testing.F, e testEngine) *sql.DB {
	if e.name != sqliteEngine.name {
		return e.open(f, e.fresh(f))
	}
	path := filepath.Join(f.TempDir(), "fuzz.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(PERSIST)&_pragma=synchronous(OFF)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	return db
}

// fuzzQueues makes one Queue for each of opts on db, all on one clock.
func fuzzQueues(f *testing.F, db *sql.DB, opts ...leaseq.Options) ([]*leaseq.Queue, *leaseq.ManualClock) {
	clock := leaseq.NewManualClock(t0)
	var qs []*leaseq.Queue
	for _, o := range opts {
		o.Clock = clock
		q, err := leaseq.New(context.Background(), db, o)
		if err != nil {
			f.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs, clock
}

// resetQueue empties every queue on db, and forgets the tokens of purged
// jobs, for the next input. It and tableRows are the fuzz targets' only
// SQL on the queue's tables.
func resetQueue(t *testing.T, db *sql.DB) {
	if _, err := db.Exec("DELETE FROM leaseq_jobs; DELETE FROM leaseq_purged"); err != nil {
		t.Fatal(err)
	}
}

// tableRows counts the rows of every queue on db, so that checkAll sees a
// row no queue's model holds.
func tableRows(t *testing.T, db *sql.DB) int {
	var n int
	if err := db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// errClass names the sentinel an error wraps, for comparison with the
// model; any other error is a failure of the test.
func errClass(err error) string {
	for _, e := range []error{leaseq.ErrInvalid, leaseq.ErrDuplicate, leaseq.ErrNotFound} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	if err != nil {
		return "unexpected: " + err.Error()
	}
	return "nil"
}

// Names the fuzz operations pick from: a few plain ones, so that duplicates
// and contention happen, and hostile ones — quotes, SQL, unicode, LIKE
// wildcards, exactly 255 bytes — plus the invalid ones the queue must refuse
// (256 bytes, empty, invalid UTF-8, NUL).
var (
	fuzzIDs = []string{"j0", "j1", "j2", "j3", `o'; DROP TABLE leaseq_jobs; --`, "日本語-ü-🙂", "%_*",
		strings.Repeat("x", 255), strings.Repeat("x", 256), "", "\xff\xfe", "a\x00b"}
	fuzzOwners = []string{"A", "B", "C", `B" OR 1=1 --`, "ówner", strings.Repeat("o", 255),
		strings.Repeat("o", 256), "", "\xc3", "n\x00"}
	fuzzLeases = []time.Duration{0, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond,
		10 * time.Millisecond, 100 * time.Millisecond, time.Second, time.Hour}
	// fuzzReasons are rule 22's cases: empty, plain, SQL, exactly 1 KiB,
	// over it (cut inside a character: a 2-byte é, a 3-byte 日, a U+FFFD
	// that replaced an invalid byte), invalid bytes, NUL bytes, a NUL-only
	// reason, and NULs that bring an over-long reason down to 1 KiB. No
	// entry has two invalid bytes in a row or a NUL beside one (see
	// cleanReasonModel).
	fuzzReasons = []string{"", "timeout", `'); DROP TABLE leaseq_jobs; --`, strings.Repeat("r", 1024),
		strings.Repeat("r", 1025), "a" + strings.Repeat("é", 512), strings.Repeat("日", 400),
		strings.Repeat("ab\xff", 300), "bad \xff byte", "nul\x00byte", "\x00", strings.Repeat("\x00", 9) + strings.Repeat("r", 1024),
		"日本語の理由"}
	// fuzzPriorities are rule 16's range, its ends, and one past each.
	fuzzPriorities = []int{-101, leaseq.MinPriority, -1, 0, 1, 5, leaseq.MaxPriority, 101}
	// fuzzPurges are Purge's status arguments: none (done), each, both, a
	// repeat, and the ones it must refuse.
	fuzzPurges = [][]leaseq.Status{nil, {leaseq.StatusDone}, {leaseq.StatusQuarantined},
		{leaseq.StatusDone, leaseq.StatusQuarantined}, {leaseq.StatusQuarantined, leaseq.StatusDone, leaseq.StatusQuarantined},
		{leaseq.StatusPending}, {leaseq.StatusDone, leaseq.StatusLeased}, {"bogus"}}
	fuzzStatuses   = []leaseq.Status{"", leaseq.StatusPending, leaseq.StatusLeased, leaseq.StatusDone, leaseq.StatusQuarantined, "bogus"}
	fuzzListLimits = []int{0, 1, 2, 3, -1, leaseq.MaxListLimit, leaseq.MaxListLimit + 1}
)

// fuzzMaxPayload is the fuzz queue's payload limit: small, so that payloads
// at and just over it are common.
const fuzzMaxPayload = 16

// fuzzOptions are the queues FuzzQueueModel runs on one database: the
// default name with a limit of two attempts, and a name with a quote in it
// with the default limit (3). The same IDs are used in both.
var fuzzOptions = []leaseq.Options{
	{MaxAttempts: 2, MaxPayload: fuzzMaxPayload},
	{Name: `other'queue`, MaxPayload: fuzzMaxPayload},
}

// Operation codes of FuzzQueueModel: one input byte, taken modulo opSlots,
// picks the operation, and the bytes after it are its arguments. The
// numbering is fixed so that the checked-in corpus keeps its meaning: new
// operations are added at the end (a seed's codes are all below opSlots, so
// growing it keeps them).
//
// Enqueue, Claim, Get, Requeue, Cancel, Purge, Stats, List and the clock
// moves to a job's instants act on the current queue (opUseQueue; the first
// at the start). Calls on a claim — Finish, Extend, Release, Fail — act on
// the queue that issued it, unless forged onto the other one (Snooze too); FinishBatch
// and ExtendBatch act on the current queue whichever issued their claims.
const (
	opEnqueue          = iota // ID, qty, max attempts, deadline, payload
	opClaim                   // owner, lease
	opFinishLast              // the most recent claim, unchanged
	opFinishAny               // any earlier claim (current or stale), then a forgery
	opGet                     // ID
	opAdvance                 // clock -8ms .. +247ms
	opAdvanceLong             // clock + n × 100 ms
	opAdvanceMicro            // clock + n × 37 µs: instants between milliseconds
	opToLeaseEnd              // clock to a claim's lease_until -1, 0 or +1 ms
	opToDeadline              // clock to a job's deadline -1, 0 or +1 ms
	opCheckAll                // compare every row, Stats and List now, not only at the end
	opEnqueueBatch            // count 0..5, then each job as opEnqueue reads it
	opClaimBatch              // owner, lease, max -1..6
	opFinishBatch             // count 0..4, then each claim as opFinishAny reads it
	opRequeue                 // ID
	opUseQueue                // which queue the next operations act on
	opEnqueueFull             // as opEnqueue, then run_at and priority
	opEnqueueBatchFull        // count 0..5, then each job as opEnqueueFull reads it
	opEnqueueTx               // commit or roll back, then two EnqueueTx calls in one transaction: count 0..3, jobs as opEnqueueFull reads them, count 0..2, jobs
	opExtend                  // claim, forgery, lease
	opRelease                 // claim, forgery, delay, reason
	opFail                    // claim, forgery, reason
	opCancel                  // ID, reason
	opPurge                   // statuses, then when: now ±1ms, a job's updated_at ±1ms, now+1h, the zero time
	opStats                   //
	opList                    // status, after ID, limit
	opToRunAt                 // clock to a job's run_at -1, 0 or +1 ms
	opInTx                    // fn fails or not, then two tx.Enqueue calls in one InTx, read as opEnqueueTx reads them (fuzz_intx_test.go)
	opFinishTx                // claim, forgery, fn fails or not, the job fn enqueues as opEnqueueFull reads it
	opSnooze                  // claim, forgery, delay, reason
	opExtendBatch             // lease, count 0..7, then each claim as opFinishAny reads it (fuzz_extendbatch_test.go)
	opSlots
)

// opReader hands out the input's bytes; past the end it reads zeros.
type opReader struct {
	b []byte
	i int
}

func (r *opReader) more() bool { return r.i < len(r.b) }

func (r *opReader) next() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *opReader) pick(n int) int { return int(r.next()) % n }

// heldClaim is a claim the queue handed out, and which queue did.
type heldClaim struct {
	c     leaseq.Claim
	queue int
}

// fuzzRun is one input's run: the real queues, the model, and every claim
// the queues handed out (the calls on a claim replay them, current or
// stale).
type fuzzRun struct {
	t      *testing.T
	ctx    context.Context
	qs     []*leaseq.Queue
	db     *sql.DB
	clock  *leaseq.ManualClock
	m      *model
	cur    int // the current queue (see the op constants)
	claims []heldClaim
	log    []string // the operations so far, for failure messages
}

func (r *fuzzRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nafter operations:\n  %s", fmt.Sprintf(format, args...), strings.Join(r.log, "\n  "))
}

func (r *fuzzRun) step(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%s  now=%s", fmt.Sprintf(format, args...), relMS(r.clock.Now())))
}

// apply decodes and runs one operation on both the queues and the model,
// then, if it may have written, compares every row of every queue with the
// model.
func (r *fuzzRun) apply(in *opReader) {
	r.t.Helper()
	op := in.pick(opSlots)
	switch op {
	case opEnqueue:
		r.enqueue(r.decodeJob(in, false))
	case opClaim:
		r.claim(fuzzOwners[in.pick(len(fuzzOwners))], fuzzLeases[in.pick(len(fuzzLeases))])
	case opFinishLast:
		if len(r.claims) > 0 {
			h := r.claims[len(r.claims)-1]
			r.finish(h.queue, h.c, "last")
		}
	case opFinishAny:
		if h, ok := r.pickClaim(in); ok {
			qi, c, how := r.forge(h, in.next())
			r.finish(qi, c, how)
		}
	case opGet:
		r.get(fuzzIDs[in.pick(len(fuzzIDs))])
	case opAdvance:
		r.move(time.Duration(int(in.next())-8) * time.Millisecond)
	case opAdvanceLong:
		r.move(time.Duration(in.next()) * 100 * time.Millisecond)
	case opAdvanceMicro:
		r.move(time.Duration(in.next()) * 37 * time.Microsecond)
	case opToLeaseEnd:
		if len(r.claims) > 0 {
			c := r.claims[in.pick(len(r.claims))].c
			r.set(c.LeaseUntil.Add(time.Duration(in.pick(3)-1)*time.Millisecond), "lease end of "+c.ID)
		}
	case opToDeadline:
		if s := r.m.queues[r.cur].jobs[fuzzIDs[in.pick(len(fuzzIDs))]]; s != nil && !s.Deadline.IsZero() {
			r.set(s.Deadline.Add(time.Duration(in.pick(3)-1)*time.Millisecond), "deadline of "+s.ID)
		}
	case opCheckAll:
		r.checkAll()
	case opEnqueueBatch, opEnqueueBatchFull:
		jobs := make([]leaseq.Job, in.pick(6))
		for i := range jobs {
			jobs[i] = r.decodeJob(in, op == opEnqueueBatchFull)
		}
		r.enqueueBatch(jobs)
	case opClaimBatch:
		owner, lease := fuzzOwners[in.pick(len(fuzzOwners))], fuzzLeases[in.pick(len(fuzzLeases))]
		r.claimBatch(owner, lease, in.pick(8)-1)
	case opFinishBatch:
		r.finishBatch(in)
	case opRequeue:
		r.requeue(fuzzIDs[in.pick(len(fuzzIDs))])
	case opUseQueue:
		r.cur = in.pick(len(r.qs))
		r.step("use queue %d (%q)", r.cur, r.qs[r.cur].Name())
	case opEnqueueFull:
		r.enqueue(r.decodeJob(in, true))
	case opEnqueueTx:
		r.enqueueTx(in)
	case opExtend:
		if h, ok := r.pickClaim(in); ok {
			qi, c, how := r.forge(h, in.next())
			r.extend(qi, c, how, fuzzLeases[in.pick(len(fuzzLeases))])
		}
	case opRelease:
		if h, ok := r.pickClaim(in); ok {
			qi, c, how := r.forge(h, in.next())
			delay := r.decodeDelay(in.next(), qi, h.c)
			r.release(qi, c, how, delay, fuzzReasons[in.pick(len(fuzzReasons))])
		}
	case opSnooze:
		if h, ok := r.pickClaim(in); ok {
			qi, c, how := r.forge(h, in.next())
			delay := r.decodeDelay(in.next(), qi, h.c)
			r.snooze(qi, c, how, delay, fuzzReasons[in.pick(len(fuzzReasons))])
		}
	case opFail:
		if h, ok := r.pickClaim(in); ok {
			qi, c, how := r.forge(h, in.next())
			r.failCall(qi, c, how, fuzzReasons[in.pick(len(fuzzReasons))])
		}
	case opCancel:
		r.cancel(fuzzIDs[in.pick(len(fuzzIDs))], fuzzReasons[in.pick(len(fuzzReasons))])
	case opPurge:
		statuses := fuzzPurges[in.pick(len(fuzzPurges))]
		before, why := r.decodePurgeBefore(in)
		r.purge(statuses, before, why)
	case opStats:
		r.step("q%d Stats", r.cur)
		r.stats(r.cur)
	case opList:
		f := leaseq.Filter{Status: fuzzStatuses[in.pick(len(fuzzStatuses))]}
		if i := in.pick(len(fuzzIDs) + 1); i > 0 {
			f.AfterID = fuzzIDs[i-1]
		}
		f.Limit = fuzzListLimits[in.pick(len(fuzzListLimits))]
		r.step("q%d List(%+v)", r.cur, f)
		r.list(r.cur, f)
	case opToRunAt:
		if s := r.m.queues[r.cur].jobs[fuzzIDs[in.pick(len(fuzzIDs))]]; s != nil && !s.RunAt.IsZero() {
			r.set(s.RunAt.Add(time.Duration(in.pick(3)-1)*time.Millisecond), "run_at of "+s.ID)
		}
	case opInTx:
		r.inTx(in)
	case opFinishTx:
		r.finishTx(in)
	case opExtendBatch:
		r.extendBatch(in)
	}
	if !readOnly[op] {
		r.checkRows()
	}
}

// readOnly are the operations that write nothing: reads and clock moves.
// Comparing every row after them would only repeat the last comparison.
var readOnly = map[int]bool{opGet: true, opAdvance: true, opAdvanceLong: true, opAdvanceMicro: true,
	opToLeaseEnd: true, opToDeadline: true, opToRunAt: true, opCheckAll: true, opUseQueue: true,
	opStats: true, opList: true}

// pickClaim reads which earlier claim an operation uses: a byte of 128 or
// more is the most recent one, a smaller one indexes them all. With no
// claims handed out yet it reads nothing.
func (r *fuzzRun) pickClaim(in *opReader) (heldClaim, bool) {
	if len(r.claims) == 0 {
		return heldClaim{}, false
	}
	if b := in.next(); b < 128 {
		return r.claims[int(b)%len(r.claims)], true
	}
	return r.claims[len(r.claims)-1], true
}

func (r *fuzzRun) enqueue(j leaseq.Job) {
	now := r.clock.Now()
	err := r.qs[r.cur].Enqueue(r.ctx, j)
	want := r.m.enqueue(r.cur, now, j)
	r.step("q%d Enqueue(%s) = %v", r.cur, fmtJob(j), err)
	if errClass(err) != errClass(want) {
		r.fail("Enqueue: got error %v, want %v", err, want)
	}
	r.wantRow(r.cur, j.ID) // the new row; or nothing written: still absent, or the earlier row untouched
}

func fmtJob(j leaseq.Job) string {
	return fmt.Sprintf("{id=%q qty=%d max=%d deadline=%s run_at=%s priority=%d payload=%q}",
		j.ID, j.Qty, j.MaxAttempts, relMS(j.Deadline), relMS(j.RunAt), j.Priority, j.Payload)
}

// decodeJob reads a job's fields: ID, qty, max attempts, deadline relative
// to now, payload length and bytes; and, when full, its run_at and
// priority.
func (r *fuzzRun) decodeJob(in *opReader, full bool) leaseq.Job {
	j := leaseq.Job{ID: fuzzIDs[in.pick(len(fuzzIDs))]}
	if b := in.next(); b == 255 {
		j.Qty = -1
	} else {
		j.Qty = int(b)
	}
	j.MaxAttempts = in.pick(6) // 0: the queue's default
	if j.MaxAttempts == 5 {
		j.MaxAttempts = -1
	}
	if d := in.next(); d >= 128 {
		j.Deadline = r.clock.Now().Add(time.Duration(int(d)-130) * 10 * time.Millisecond)
	}
	if n := in.pick(fuzzMaxPayload + 3); n > 0 {
		j.Payload = make([]byte, n)
		for i := range j.Payload {
			j.Payload[i] = in.next()
		}
	}
	if full {
		j.RunAt = r.decodeRunAt(in.pick(runAtCodes), j.Deadline)
		j.Priority = fuzzPriorities[in.pick(len(fuzzPriorities))]
	}
	return j
}

// runAtCodes is how many run_at choices decodeRunAt knows.
const runAtCodes = 10

// decodeRunAt is a job's run_at (rule 15): none, in the past, now, just
// after, later, just before or at its deadline (now+50ms or +2ms without
// one), or between two milliseconds.
func (r *fuzzRun) decodeRunAt(code int, deadline time.Time) time.Time {
	now := r.clock.Now()
	switch code {
	case 1:
		return now.Add(-10 * time.Millisecond)
	case 2:
		return now
	case 3:
		return now.Add(time.Millisecond)
	case 4:
		return now.Add(10 * time.Millisecond)
	case 5:
		return now.Add(100 * time.Millisecond)
	case 6:
		return now.Add(time.Second)
	case 7:
		if deadline.IsZero() {
			return now.Add(50 * time.Millisecond)
		}
		return deadline.Add(-time.Millisecond)
	case 8:
		if deadline.IsZero() {
			return now.Add(2 * time.Millisecond)
		}
		return deadline
	case 9:
		return now.Add(3500 * time.Microsecond)
	}
	return time.Time{}
}

// decodeDelay is a Release's delay: none, under a millisecond (none once
// truncated), a range of lengths, negative, or landing 1 ms before, exactly
// on, or 1 ms after the job's deadline (rule 18; 1.5 ms without one).
func (r *fuzzRun) decodeDelay(code byte, qi int, c leaseq.Claim) time.Duration {
	deadline := c.Deadline
	if s := r.m.queues[qi].jobs[c.ID]; s != nil {
		deadline = s.Deadline
	}
	switch code % 12 {
	case 1:
		return 999 * time.Microsecond
	case 2:
		return time.Millisecond
	case 3:
		return 10 * time.Millisecond
	case 4:
		return 100 * time.Millisecond
	case 5:
		return time.Second
	case 6:
		return time.Hour
	case 7:
		return -time.Nanosecond
	case 8, 9, 10:
		if deadline.IsZero() {
			return 1500 * time.Microsecond
		}
		// From the truncated now, which is what the queue adds the delay to.
		return time.Duration(msOf(deadline)-msOf(r.clock.Now())+int64(code%12)-9) * time.Millisecond
	case 11:
		return 1500 * time.Microsecond
	}
	return 0
}

// decodePurgeBefore reads Purge's instant: now ±1ms, a job's last change
// ±1ms (rule 21's "strictly before"), far ahead, or the zero time.
func (r *fuzzRun) decodePurgeBefore(in *opReader) (time.Time, string) {
	now := r.clock.Now()
	switch in.pick(4) {
	case 0:
		d := in.pick(3) - 1
		return now.Add(time.Duration(d) * time.Millisecond), fmt.Sprintf("now%+dms", d)
	case 1:
		id, d := fuzzIDs[in.pick(len(fuzzIDs))], in.pick(3)-1
		if s := r.m.queues[r.cur].jobs[id]; s != nil {
			return s.UpdatedAt.Add(time.Duration(d) * time.Millisecond), fmt.Sprintf("updated_at of %q %+dms", id, d)
		}
		return now, "now"
	case 2:
		return now.Add(time.Hour), "now+1h"
	}
	return time.Time{}, "zero time"
}

func (r *fuzzRun) claim(owner string, lease time.Duration) {
	now, qi := r.clock.Now(), r.cur
	c, ok, err := r.qs[qi].Claim(r.ctx, owner, lease)
	r.step("q%d Claim(%q, %v) = %q token=%d ok=%v err=%v", qi, owner, lease, c.ID, c.Token, ok, err)
	claimable, want := r.m.beginClaim(qi, now, owner, lease)
	allowed := r.m.highest(qi, claimable)
	if errClass(err) != errClass(want) {
		r.fail("Claim: got error %v, want %v", err, want)
	}
	switch {
	case err != nil:
		return
	case !ok && len(allowed) > 0:
		r.fail("Claim: got nothing, want one of %q", allowed)
	case ok && !slices.Contains(allowed, c.ID):
		r.fail("Claim: got %q (token %d), want one of %q (the claimable jobs of the highest priority)", c.ID, c.Token, allowed)
	case !ok:
		return
	}
	exp := r.m.grant(qi, c.ID, now, owner, lease)
	if g, w, same := sameClaim(c, exp); !same {
		r.fail("Claim:\n got  %s\n want %s", g, w)
	}
	r.claims = append(r.claims, heldClaim{c, qi})
}

// forge turns a real claim into the claim a confused or lying worker might
// send: unchanged, a neighbouring token, another owner or ID, malformed,
// sent to the other queue, or without its queue (taken as the queue it is
// sent to). It returns the queue the call goes to.
func (r *fuzzRun) forge(h heldClaim, how byte) (int, leaseq.Claim, string) {
	c, qi := h.c, h.queue
	switch how % 16 {
	case 1:
		c.Token++
		return qi, c, "token+1"
	case 2:
		c.Token--
		return qi, c, "token-1"
	case 3:
		c.Owner += "x"
		return qi, c, "other owner"
	case 4:
		c.ID = c.ID + "'"
		return qi, c, "other ID"
	case 5:
		c.Token = 0
		return qi, c, "token 0"
	case 6:
		c.Owner = ""
		return qi, c, "empty owner"
	case 7:
		c.ID = ""
		return qi, c, "empty ID"
	case 8:
		return qi, leaseq.Claim{}, "zero claim"
	case 9:
		c.LeaseUntil, c.Deadline, c.Priority = c.LeaseUntil.Add(time.Hour), time.Time{}, c.Priority+1
		return qi, c, "lease_until, deadline, priority changed (ignored by the fence)"
	case 10:
		return (qi + 1) % len(r.qs), c, fmt.Sprintf("issued by queue %d", qi)
	case 11:
		c.Queue = ""
		return qi, c, "no queue (built by hand)"
	case 12:
		c.Queue = ""
		return (qi + 1) % len(r.qs), c, fmt.Sprintf("no queue, issued by queue %d", qi)
	}
	return qi, c, "as issued"
}

func fmtClaim(qi int, c leaseq.Claim, how string) string {
	return fmt.Sprintf("q%d %s: id=%q owner=%q token=%d", qi, how, c.ID, c.Owner, c.Token)
}

func (r *fuzzRun) finish(qi int, c leaseq.Claim, how string) {
	now := r.clock.Now()
	ok, err := r.qs[qi].Finish(r.ctx, c)
	r.step("Finish(%s) = %v, %v", fmtClaim(qi, c, how), ok, err)
	want, wantErr := r.m.finish(qi, now, c)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Finish: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	r.wantRow(qi, c.ID)
}

func (r *fuzzRun) extend(qi int, c leaseq.Claim, how string, lease time.Duration) {
	now := r.clock.Now()
	got, ok, err := r.qs[qi].Extend(r.ctx, c, lease)
	r.step("Extend(%s, %v) = lease_until=%s %v, %v", fmtClaim(qi, c, how), lease, relMS(got.LeaseUntil), ok, err)
	until, want, wantErr := r.m.extend(qi, now, c, lease)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Extend: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	// The claim comes back with its new lease end, or unchanged.
	exp := c
	if ok {
		exp.LeaseUntil = until
	}
	if err == nil {
		if g, w, same := sameClaim(got, exp); !same {
			r.fail("Extend returned:\n got  %s\n want %s", g, w)
		}
	}
	if ok {
		r.claims = append(r.claims, heldClaim{got, qi})
	}
	r.wantRow(qi, c.ID)
}

func (r *fuzzRun) release(qi int, c leaseq.Claim, how string, delay time.Duration, reason string) {
	now := r.clock.Now()
	ok, err := r.qs[qi].Release(r.ctx, c, delay, reason)
	r.step("Release(%s, %v, %q) = %v, %v", fmtClaim(qi, c, how), delay, shorten(reason), ok, err)
	want, wantErr := r.m.release(qi, now, c, delay, reason)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Release: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	r.wantRow(qi, c.ID)
}

func (r *fuzzRun) snooze(qi int, c leaseq.Claim, how string, delay time.Duration, reason string) {
	now := r.clock.Now()
	ok, err := r.qs[qi].Snooze(r.ctx, c, delay, reason)
	r.step("Snooze(%s, %v, %q) = %v, %v", fmtClaim(qi, c, how), delay, shorten(reason), ok, err)
	want, wantErr := r.m.snooze(qi, now, c, delay, reason)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Snooze: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	r.wantRow(qi, c.ID)
}

func (r *fuzzRun) failCall(qi int, c leaseq.Claim, how, reason string) {
	now := r.clock.Now()
	ok, err := r.qs[qi].Fail(r.ctx, c, reason)
	r.step("Fail(%s, %q) = %v, %v", fmtClaim(qi, c, how), shorten(reason), ok, err)
	want, wantErr := r.m.fail(qi, now, c, reason)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Fail: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	r.wantRow(qi, c.ID)
}

// shorten keeps a long reason readable in the operation log.
func shorten(s string) string {
	if len(s) <= 24 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:16], len(s))
}

func (r *fuzzRun) cancel(id, reason string) {
	now, qi := r.clock.Now(), r.cur
	err := r.qs[qi].Cancel(r.ctx, id, reason)
	want := r.m.cancel(qi, now, id, reason)
	r.step("q%d Cancel(%q, %q) = %v", qi, id, shorten(reason), err)
	if errClass(err) != errClass(want) {
		r.fail("Cancel(%q): got error %v, want %v", id, err, want)
	}
	r.wantRow(qi, id)
}

func (r *fuzzRun) purge(statuses []leaseq.Status, before time.Time, why string) {
	qi := r.cur
	n, err := r.qs[qi].Purge(r.ctx, before, statuses...)
	want, wantErr := r.m.purge(qi, before, statuses)
	r.step("q%d Purge(%s, %q) = %d, %v", qi, why, statuses, n, err)
	if errClass(err) != errClass(wantErr) || n != want {
		r.fail("Purge: got %d, %v; want %d, %v", n, err, want, wantErr)
	}
}

func (r *fuzzRun) enqueueBatch(jobs []leaseq.Job) {
	now, qi := r.clock.Now(), r.cur
	err := r.qs[qi].EnqueueBatch(r.ctx, jobs)
	problems := r.m.enqueueBatch(qi, now, jobs)
	r.step("q%d EnqueueBatch(%s) = %v", qi, fmtJobs(jobs), err)
	r.wantBatchError("EnqueueBatch", err, problems)
	for _, j := range jobs {
		r.wantRow(qi, j.ID) // all written, or nothing: absent, or the earlier row untouched
	}
}

func fmtJobs(jobs []leaseq.Job) string {
	descs := make([]string, len(jobs))
	for i, j := range jobs {
		descs[i] = fmtJob(j)
	}
	return strings.Join(descs, " ")
}

// wantBatchError checks a batch enqueue's error against the model's
// problems: nil for none, else one of them naming its index.
func (r *fuzzRun) wantBatchError(call string, err error, problems map[error][]int) {
	r.t.Helper()
	switch {
	case len(problems) == 0 && err != nil:
		r.fail("%s: got error %v, want nil", call, err)
	case len(problems) > 0 && err == nil:
		r.fail("%s: got nil, want one of %v", call, problems)
	case err != nil && !namesOneOf(err, "jobs", problems):
		r.fail("%s: got error %v, want one of %v (sentinel: indexes), naming its index", call, err, problems)
	}
}

// enqueueTx runs two EnqueueTx calls in one transaction of the caller's,
// then commits or rolls it back: a failed call writes none of its jobs and
// leaves the transaction usable for the next; nothing is written unless the
// caller commits.
func (r *fuzzRun) enqueueTx(in *opReader) {
	commit := in.next()%2 == 0
	batches := [2][]leaseq.Job{make([]leaseq.Job, in.pick(4)), nil}
	for i := range batches[0] {
		batches[0][i] = r.decodeJob(in, true)
	}
	batches[1] = make([]leaseq.Job, in.pick(3))
	for i := range batches[1] {
		batches[1][i] = r.decodeJob(in, true)
	}
	now, qi := r.clock.Now(), r.cur
	jobs0, seq0 := r.m.queues[qi].jobs, r.m.nextSeq
	r.m.queues[qi].jobs = maps.Clone(jobs0)
	tx, err := r.db.BeginTx(r.ctx, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	defer tx.Rollback()
	for i, jobs := range batches {
		err := r.qs[qi].EnqueueTx(r.ctx, tx, jobs...)
		r.step("q%d EnqueueTx #%d (%s) = %v", qi, i+1, fmtJobs(jobs), err)
		r.wantBatchError("EnqueueTx", err, r.m.enqueueBatch(qi, now, jobs))
	}
	if commit {
		err = tx.Commit()
	} else {
		err = tx.Rollback()
		r.m.queues[qi].jobs, r.m.nextSeq = jobs0, seq0
	}
	r.step("q%d commit=%v: %v", qi, commit, err)
	if err != nil {
		r.fail("ending the transaction: %v", err)
	}
	for _, jobs := range batches {
		for _, j := range jobs {
			r.wantRow(qi, j.ID)
		}
	}
}

// namesOneOf reports whether err wraps one of the sentinels in problems and
// names, as list[i], one of the indexes refused with it.
func namesOneOf(err error, list string, problems map[error][]int) bool {
	for sentinel, idx := range problems {
		if !errors.Is(err, sentinel) {
			continue
		}
		for _, i := range idx {
			if strings.Contains(err.Error(), fmt.Sprintf("%s[%d]", list, i)) {
				return true
			}
		}
	}
	return false
}

// claimBatch checks rule 16 for a batch: the claims are distinct claimable
// jobs, as many as max allows, none of lower priority than a claimable job
// left behind, and in the order ClaimBatch promises (priority, then enqueue
// order).
func (r *fuzzRun) claimBatch(owner string, lease time.Duration, max int) {
	now, qi := r.clock.Now(), r.cur
	cs, err := r.qs[qi].ClaimBatch(r.ctx, owner, lease, max)
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = fmt.Sprintf("%q token=%d", c.ID, c.Token)
	}
	r.step("q%d ClaimBatch(%q, %v, max=%d) = [%s] err=%v", qi, owner, lease, max, strings.Join(ids, ", "), err)
	var claimable []string
	want := leaseq.ErrInvalid
	if max >= 1 {
		claimable, want = r.m.beginClaim(qi, now, owner, lease)
	}
	if errClass(err) != errClass(want) {
		r.fail("ClaimBatch: got error %v, want %v", err, want)
	}
	if err != nil {
		return
	}
	if n := min(max, len(claimable)); len(cs) != n {
		r.fail("ClaimBatch: got %d claims, want %d of %q", len(cs), n, claimable)
	}
	jobs := r.m.queues[qi].jobs
	seen := map[string]bool{}
	for i, c := range cs {
		switch {
		case seen[c.ID] || !slices.Contains(claimable, c.ID):
			r.fail("ClaimBatch: claim %d is %q, want a distinct one of %q", i, c.ID, claimable)
		case i > 0 && jobs[c.ID].Priority > jobs[cs[i-1].ID].Priority:
			r.fail("ClaimBatch: claim %d (%q) has a higher priority than claim %d (%q)", i, c.ID, i-1, cs[i-1].ID)
		case i > 0 && jobs[c.ID].Priority == jobs[cs[i-1].ID].Priority && jobs[c.ID].seq < jobs[cs[i-1].ID].seq:
			r.fail("ClaimBatch: claim %d (%q) was enqueued before claim %d (%q) of the same priority, want enqueue order", i, c.ID, i-1, cs[i-1].ID)
		}
		seen[c.ID] = true
	}
	for _, id := range claimable {
		if len(cs) > 0 && !seen[id] && jobs[id].Priority > jobs[cs[len(cs)-1].ID].Priority {
			r.fail("ClaimBatch: took %q (priority %d) and left %q (priority %d)", cs[len(cs)-1].ID,
				jobs[cs[len(cs)-1].ID].Priority, id, jobs[id].Priority)
		}
	}
	for i, c := range cs {
		exp := r.m.grant(qi, c.ID, now, owner, lease)
		if g, w, same := sameClaim(c, exp); !same {
			r.fail("ClaimBatch claim %d:\n got  %s\n want %s", i, g, w)
		}
		r.claims = append(r.claims, heldClaim{c, qi})
	}
}

// pickBatch reads a count below limit and that many claims, each picked and
// forged as opFinishAny does, with a description of each for the log. With
// no claims handed out yet the batch is empty.
func (r *fuzzRun) pickBatch(in *opReader, limit int) ([]leaseq.Claim, []string) {
	n := in.pick(limit)
	if len(r.claims) == 0 {
		n = 0
	}
	cs, descs := make([]leaseq.Claim, n), make([]string, n)
	for i := range cs {
		h, _ := r.pickClaim(in)
		var how string
		_, cs[i], how = r.forge(h, in.next())
		descs[i] = fmt.Sprintf("{%s}", fmtClaim(h.queue, cs[i], how))
	}
	return cs, descs
}

// finishBatch reads a count and that many claims, each picked and forged as
// opFinishAny does, and finishes them in one call on the current queue. With
// no claims handed out yet the batch is empty.
func (r *fuzzRun) finishBatch(in *opReader) {
	qi := r.cur
	cs, descs := r.pickBatch(in, 5)
	now := r.clock.Now()
	oks, err := r.qs[qi].FinishBatch(r.ctx, cs)
	r.step("q%d FinishBatch(%s) = %v, %v", qi, strings.Join(descs, " "), oks, err)
	want, bad, wantErr := r.m.finishBatch(qi, now, cs)
	switch {
	case errClass(err) != errClass(wantErr):
		r.fail("FinishBatch: got %v, %v; want %v, %v", oks, err, want, wantErr)
	case err != nil && !namesOneOf(err, "claims", map[error][]int{leaseq.ErrInvalid: bad}):
		r.fail("FinishBatch: got error %v, want one naming claims[i] for i in %v", err, bad)
	case err == nil && !slices.Equal(oks, want):
		r.fail("FinishBatch: got %v, want %v", oks, want)
	}
	for _, c := range cs {
		r.wantRow(qi, c.ID)
	}
}

func (r *fuzzRun) requeue(id string) {
	now, qi := r.clock.Now(), r.cur
	err := r.qs[qi].Requeue(r.ctx, id)
	want := r.m.requeue(qi, now, id)
	r.step("q%d Requeue(%q) = %v", qi, id, err)
	if errClass(err) != errClass(want) {
		r.fail("Requeue(%q): got error %v, want %v", id, err, want)
	}
	r.wantRow(qi, id)
}

func (r *fuzzRun) get(id string) {
	r.step("q%d Get(%q)", r.cur, id)
	for qi := range r.qs {
		r.wantRow(qi, id)
	}
}

// wantRow compares one row (or its absence) of queue qi with the model.
func (r *fuzzRun) wantRow(qi int, id string) {
	r.t.Helper()
	got, err := r.qs[qi].Get(r.ctx, id)
	want, wantErr := r.m.get(qi, id)
	if errClass(err) != errClass(wantErr) {
		r.fail("q%d Get(%q): got error %v, want %v", qi, id, err, wantErr)
	}
	if err != nil {
		return
	}
	if g, w, same := sameState(got, want); !same {
		r.fail("q%d row %q:\n got  %s\n want %s", qi, id, g, w)
	}
}

// stats compares queue qi's Stats with the model's count at now.
func (r *fuzzRun) stats(qi int) {
	r.t.Helper()
	got, err := r.qs[qi].Stats(r.ctx)
	if err != nil {
		r.fail("q%d Stats: %v", qi, err)
	}
	if want := r.m.stats(qi, r.clock.Now()); got != want {
		r.fail("q%d Stats:\n got  %s\n want %s", qi, fmtStats(got), fmtStats(want))
	}
}

// list compares one List page of queue qi with the model's: the error, or
// every row of the page in order.
func (r *fuzzRun) list(qi int, f leaseq.Filter) {
	r.t.Helper()
	got, err := r.qs[qi].List(r.ctx, f)
	want, wantErrs := r.m.list(qi, f)
	if len(wantErrs) > 0 {
		if !slices.ContainsFunc(wantErrs, func(e error) bool { return errors.Is(err, e) }) {
			r.fail("q%d List(%+v): got %d rows, error %v; want one of %v", qi, f, len(got), err, wantErrs)
		}
		return
	}
	if err != nil {
		r.fail("q%d List(%+v): %v", qi, f, err)
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			r.fail("q%d List(%+v): got %d rows, want %d; missing %s", qi, f, len(got), len(want), fmtFullState(want[i].State))
		case i >= len(want):
			r.fail("q%d List(%+v): got %d rows, want %d; extra %s", qi, f, len(got), len(want), fmtFullState(got[i]))
		}
		if g, w, same := sameState(got[i], want[i]); !same {
			r.fail("q%d List(%+v) row %d:\n got  %s\n want %s", qi, f, i, g, w)
		}
	}
}

func (r *fuzzRun) move(d time.Duration) {
	r.clock.Advance(d)
	r.step("clock %+v", d)
}

func (r *fuzzRun) set(t time.Time, why string) {
	r.clock.Set(t)
	r.step("clock to %s", why)
}

// checkRows compares every row of every queue with the model, in one List
// each: after every operation, so a call that changed a row it should not
// have is caught at once.
func (r *fuzzRun) checkRows() {
	r.t.Helper()
	for qi := range r.qs {
		r.list(qi, leaseq.Filter{Limit: leaseq.MaxListLimit})
	}
}

// checkAll compares every row of every queue by Get, each queue's Stats and
// List, and that the table holds no row the model does not.
func (r *fuzzRun) checkAll() {
	r.t.Helper()
	total := 0
	for qi, q := range r.m.queues {
		total += len(q.jobs)
		for id := range q.jobs {
			for qj := range r.qs {
				r.wantRow(qj, id) // and absent from the other queue unless there too
			}
		}
		r.stats(qi)
	}
	if n := tableRows(r.t, r.db); n != total {
		r.fail("table has %d rows, want %d", n, total)
	}
	r.checkRows()
}

// maxFuzzOps bounds one input's length, so that a run stays a few
// milliseconds long.
const maxFuzzOps = 200

// FuzzQueueModel decodes its input into a sequence of queue operations on
// two named queues sharing one database — enqueue (delayed, prioritized, in
// batches, inside the caller's transaction), claim, Finish, Extend, Release
// and Fail with the current, a stale or a forged claim (and FinishBatch and
// ExtendBatch with several, the same one twice among them), Cancel, Requeue,
// Purge and enqueueing a purged ID again, Get, Stats, List, clock moves onto
// and around lease ends, run_at and deadlines — and runs each on the real
// queues and on the model of the rules of docs/rules.md, comparing every answer and,
// after every operation, every row. The checked-in corpus
// (testdata/fuzz/FuzzQueueModel, generated from fuzzSeeds) walks each rule.
func FuzzQueueModel(f *testing.F) {
	targets := fuzzTargets(f, fuzzOptions...)
	// The seeds are the files of testdata/fuzz/FuzzQueueModel, which go
	// test runs on its own; TestFuzzCorpusUpToDate keeps them current.
	f.Fuzz(func(t *testing.T, input []byte) {
		forFuzzTargets(t, targets, func(t *testing.T, qs []*leaseq.Queue, db *sql.DB, clock *leaseq.ManualClock) {
			resetQueue(t, db)
			in := &opReader{b: input}
			// The first byte sets where within a millisecond the clock starts.
			clock.Set(t0.Add(time.Duration(in.next()) * 3 * time.Microsecond))
			r := &fuzzRun{t: t, ctx: context.Background(), qs: qs, db: db, clock: clock, m: newModel(fuzzMaxPayload, fuzzOptions...)}
			for n := 0; in.more() && n < maxFuzzOps; n++ {
				r.apply(in)
			}
			r.checkAll()
		})
	})
}

// FuzzNames enqueues, claims and finishes one job with an arbitrary ID,
// owner and payload. Each is either refused with ErrInvalid and nothing
// written, or stored and handed back byte for byte.
func FuzzNames(f *testing.F) {
	targets := fuzzTargets(f, leaseq.Options{MaxPayload: fuzzMaxPayload})
	f.Add("order-7", "worker-1", []byte("payload"))
	f.Add(`'); DELETE FROM leaseq_jobs; --`, `" OR ""="`, []byte("\x00\x00\xff"))
	f.Add("日本語", "ówner", bytes.Repeat([]byte{0}, fuzzMaxPayload))
	f.Add(strings.Repeat("é", 127)+"x", strings.Repeat("o", 255), bytes.Repeat([]byte{1}, fuzzMaxPayload+1))
	f.Add("a\x00b", "\xff", []byte{})
	f.Fuzz(func(t *testing.T, id, owner string, payload []byte) {
		forFuzzTargets(t, targets, func(t *testing.T, qs []*leaseq.Queue, db *sql.DB, clock *leaseq.ManualClock) {
			q := qs[0]
			resetQueue(t, db)
			clock.Set(t0)
			ctx := context.Background()
			err := q.Enqueue(ctx, leaseq.Job{ID: id, Payload: payload})
			if wantOK := validName(id) && len(payload) <= fuzzMaxPayload; wantOK != (err == nil) || err != nil && !errors.Is(err, leaseq.ErrInvalid) {
				t.Fatalf("Enqueue(%q, %d-byte payload): got %v, want ok=%v or ErrInvalid", id, len(payload), err, wantOK)
			}
			if err != nil {
				if n := tableRows(t, db); n != 0 {
					t.Fatalf("refused Enqueue(%q) left %d rows, want 0", id, n)
				}
				return
			}
			s, err := q.Get(ctx, id)
			if err != nil || s.ID != id || !bytes.Equal(s.Payload, payload) {
				t.Fatalf("Get(%q): got id=%q payload=%q err=%v, want id=%q payload=%q", id, s.ID, s.Payload, err, id, payload)
			}
			c, ok, err := q.Claim(ctx, owner, time.Second)
			if !validName(owner) {
				if !errors.Is(err, leaseq.ErrInvalid) || ok {
					t.Fatalf("Claim(%q): got ok=%v err=%v, want ErrInvalid", owner, ok, err)
				}
				if s, _ := q.Get(ctx, id); s.Status != leaseq.StatusPending || s.Token != 0 {
					t.Fatalf("refused Claim(%q) changed the row: got %s, want pending token=0", owner, fmtState(s))
				}
				return
			}
			if err != nil || !ok || c.ID != id || c.Owner != owner || !bytes.Equal(c.Payload, payload) {
				t.Fatalf("Claim(%q): got %+v ok=%v err=%v, want id=%q owner=%q payload=%q", owner, c, ok, err, id, owner, payload)
			}
			if ok, err := q.Finish(ctx, c); !ok || err != nil {
				t.Fatalf("Finish(%+v): got %v, %v, want true", c, ok, err)
			}
			s, err = q.Get(ctx, id)
			if err != nil || s.Status != leaseq.StatusDone || s.Owner != owner || s.ID != id || !bytes.Equal(s.Payload, payload) {
				t.Fatalf("Get(%q) after Finish: got %s err=%v, want done, owner=%q, payload=%q", id, fmtState(s), err, owner, payload)
			}
		})
	})
}

// TestFuzzCorpusUpToDate keeps testdata/fuzz/FuzzQueueModel equal to
// fuzzSeeds, so the checked-in corpus is the documented one. Run with
// LEASEQ_WRITE_CORPUS=1 to rewrite it after changing the seeds.
func TestFuzzCorpusUpToDate(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzQueueModel")
	if os.Getenv("LEASEQ_WRITE_CORPUS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range fuzzSeeds() {
		path := filepath.Join(dir, "seed-"+s.name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s.input)
		if os.Getenv("LEASEQ_WRITE_CORPUS") == "1" {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q (%v), want %q; rerun with LEASEQ_WRITE_CORPUS=1", path, got, err, want)
		}
	}
}
