package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The fuzz targets reuse one database file per fuzzing process and empty it
// before every input: creating a file and its schema costs several fsyncs,
// emptying a table costs one transaction. synchronous=OFF only skips fsync,
// which no rule under test depends on, and journal_mode=PERSIST (a rollback
// journal New accepts) keeps the journal file instead of creating and
// deleting it in every transaction: together about three times the execs.
func fuzzQueue(f *testing.F, opts leaseq.Options) (*leaseq.Queue, *sql.DB, *leaseq.ManualClock) {
	path := filepath.Join(f.TempDir(), "fuzz.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(PERSIST)&_pragma=synchronous(OFF)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	clock := leaseq.NewManualClock(t0)
	opts.Clock = clock
	q, err := leaseq.New(context.Background(), db, opts)
	if err != nil {
		f.Fatal(err)
	}
	return q, db, clock
}

// resetQueue empties the queue for the next input.
func resetQueue(t *testing.T, db *sql.DB) {
	if _, err := db.Exec("DELETE FROM leaseq_jobs"); err != nil {
		t.Fatal(err)
	}
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
)

// fuzzMaxPayload is the fuzz queue's payload limit: small, so that payloads
// at and just over it are common.
const fuzzMaxPayload = 16

// Operation codes of FuzzQueueModel: one input byte, taken modulo opSlots,
// picks the operation, and the bytes after it are its arguments. The
// numbering is fixed so that the checked-in corpus keeps its meaning; new
// operations take a reserved slot instead of renumbering.
const (
	opEnqueue      = iota // ID, qty, max attempts, deadline, payload
	opClaim               // owner, lease
	opFinishLast          // the most recent claim, unchanged
	opFinishAny           // any earlier claim (current or stale), then a forgery
	opGet                 // ID
	opAdvance             // clock -8ms .. +247ms
	opAdvanceLong         // clock + n × 100 ms
	opAdvanceMicro        // clock + n × 37 µs: instants between milliseconds
	opToLeaseEnd          // clock to a claim's lease_until -1, 0 or +1 ms
	opToDeadline          // clock to a job's deadline -1, 0 or +1 ms
	opCheckAll            // compare every row now, not only at the end
	opEnqueueBatch        // count 0..5, then each job as opEnqueue reads it
	opClaimBatch          // owner, lease, max -1..6
	opFinishBatch         // count 0..4, then each claim as opFinishAny reads it
	opRequeue             // ID
	// Reserved for operations to come: until then this slot does nothing.
	opReserved15
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

// fuzzRun is one input's run: the real queue, the model, and every claim the
// queue handed out (finish ops replay them, current or stale).
type fuzzRun struct {
	t      *testing.T
	ctx    context.Context
	q      *leaseq.Queue
	db     *sql.DB
	clock  *leaseq.ManualClock
	m      *model
	claims []leaseq.Claim
	log    []string // the operations so far, for failure messages
}

func (r *fuzzRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nafter operations:\n  %s", fmt.Sprintf(format, args...), strings.Join(r.log, "\n  "))
}

func (r *fuzzRun) step(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf("%s  now=%s", fmt.Sprintf(format, args...), relMS(r.clock.Now())))
}

// apply decodes and runs one operation on both the queue and the model.
func (r *fuzzRun) apply(in *opReader) {
	r.t.Helper()
	switch op := in.pick(opSlots); op {
	case opEnqueue:
		r.enqueue(in)
	case opClaim:
		r.claim(fuzzOwners[in.pick(len(fuzzOwners))], fuzzLeases[in.pick(len(fuzzLeases))])
	case opFinishLast:
		if len(r.claims) > 0 {
			r.finish(r.claims[len(r.claims)-1], "last")
		}
	case opFinishAny:
		if len(r.claims) > 0 {
			c := r.claims[in.pick(len(r.claims))]
			r.finish(forge(c, in.next()))
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
			c := r.claims[in.pick(len(r.claims))]
			r.set(c.LeaseUntil.Add(time.Duration(in.pick(3)-1)*time.Millisecond), "lease end of "+c.ID)
		}
	case opToDeadline:
		if s := r.m.jobs[fuzzIDs[in.pick(len(fuzzIDs))]]; s != nil && !s.Deadline.IsZero() {
			r.set(s.Deadline.Add(time.Duration(in.pick(3)-1)*time.Millisecond), "deadline of "+s.ID)
		}
	case opCheckAll:
		r.checkAll()
	case opEnqueueBatch:
		jobs := make([]leaseq.Job, in.pick(6))
		for i := range jobs {
			jobs[i] = r.decodeJob(in)
		}
		r.enqueueBatch(jobs)
	case opClaimBatch:
		owner, lease := fuzzOwners[in.pick(len(fuzzOwners))], fuzzLeases[in.pick(len(fuzzLeases))]
		r.claimBatch(owner, lease, in.pick(8)-1)
	case opFinishBatch:
		r.finishBatch(in)
	case opRequeue:
		r.requeue(fuzzIDs[in.pick(len(fuzzIDs))])
	default:
		// Reserved; see the op constants.
	}
}

func (r *fuzzRun) enqueue(in *opReader) {
	j := r.decodeJob(in)
	now := r.clock.Now()
	err := r.q.Enqueue(r.ctx, j)
	want := r.m.enqueue(now, j)
	r.step("Enqueue(id=%q qty=%d max=%d deadline=%s payload=%q) = %v", j.ID, j.Qty, j.MaxAttempts, relMS(j.Deadline), j.Payload, err)
	if errClass(err) != errClass(want) {
		r.fail("Enqueue: got error %v, want %v", err, want)
	}
	if err != nil {
		r.wantRow(j.ID) // nothing written: still absent, or the earlier row untouched
	}
}

// decodeJob reads a job's fields: ID, qty, max attempts, deadline relative
// to now, payload length and bytes.
func (r *fuzzRun) decodeJob(in *opReader) leaseq.Job {
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
	return j
}

func (r *fuzzRun) claim(owner string, lease time.Duration) {
	now := r.clock.Now()
	c, ok, err := r.q.Claim(r.ctx, owner, lease)
	r.step("Claim(%q, %v) = %q token=%d ok=%v err=%v", owner, lease, c.ID, c.Token, ok, err)
	allowed, want := r.m.beginClaim(now, owner, lease)
	if errClass(err) != errClass(want) {
		r.fail("Claim: got error %v, want %v", err, want)
	}
	switch {
	case err != nil:
		return
	case !ok && len(allowed) > 0:
		r.fail("Claim: got nothing, want one of %q", allowed)
	case ok && !containsString(allowed, c.ID):
		r.fail("Claim: got %q (token %d), want one of %q", c.ID, c.Token, allowed)
	case !ok:
		return
	}
	exp := r.m.grant(c.ID, now, owner, lease)
	if g, w, same := sameClaim(c, exp); !same {
		r.fail("Claim:\n got  %s\n want %s", g, w)
	}
	r.claims = append(r.claims, c)
}

// forge turns a real claim into the claim a confused or lying worker might
// send: unchanged, a neighbouring token, another owner or ID, or malformed.
func forge(c leaseq.Claim, how byte) (leaseq.Claim, string) {
	switch how % 10 {
	case 1:
		c.Token++
		return c, "token+1"
	case 2:
		c.Token--
		return c, "token-1"
	case 3:
		c.Owner += "x"
		return c, "other owner"
	case 4:
		c.ID = c.ID + "'"
		return c, "other ID"
	case 5:
		c.Token = 0
		return c, "token 0"
	case 6:
		c.Owner = ""
		return c, "empty owner"
	case 7:
		c.ID = ""
		return c, "empty ID"
	case 8:
		return leaseq.Claim{}, "zero claim"
	case 9:
		c.LeaseUntil, c.Deadline = c.LeaseUntil.Add(time.Hour), time.Time{}
		return c, "extended lease_until (ignored by the fence)"
	}
	return c, "as issued"
}

func (r *fuzzRun) finish(c leaseq.Claim, how string) {
	now := r.clock.Now()
	ok, err := r.q.Finish(r.ctx, c)
	r.step("Finish(%s: id=%q owner=%q token=%d) = %v, %v", how, c.ID, c.Owner, c.Token, ok, err)
	want, wantErr := r.m.finish(now, c)
	if errClass(err) != errClass(wantErr) || ok != want {
		r.fail("Finish: got %v, %v; want %v, %v", ok, err, want, wantErr)
	}
	r.wantRow(c.ID)
}

func (r *fuzzRun) enqueueBatch(jobs []leaseq.Job) {
	now := r.clock.Now()
	err := r.q.EnqueueBatch(r.ctx, jobs)
	problems := r.m.enqueueBatch(now, jobs)
	descs := make([]string, len(jobs))
	for i, j := range jobs {
		descs[i] = fmt.Sprintf("{id=%q qty=%d max=%d deadline=%s payload=%q}", j.ID, j.Qty, j.MaxAttempts, relMS(j.Deadline), j.Payload)
	}
	r.step("EnqueueBatch(%s) = %v", strings.Join(descs, " "), err)
	switch {
	case len(problems) == 0 && err != nil:
		r.fail("EnqueueBatch: got error %v, want nil", err)
	case len(problems) > 0 && err == nil:
		r.fail("EnqueueBatch: got nil, want one of %v", problems)
	case err != nil && !namesOneOf(err, "jobs", problems):
		r.fail("EnqueueBatch: got error %v, want one of %v (sentinel: indexes), naming its index", err, problems)
	}
	for _, j := range jobs {
		r.wantRow(j.ID) // all written, or nothing: absent, or the earlier row untouched
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

func (r *fuzzRun) claimBatch(owner string, lease time.Duration, max int) {
	now := r.clock.Now()
	cs, err := r.q.ClaimBatch(r.ctx, owner, lease, max)
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = fmt.Sprintf("%q token=%d", c.ID, c.Token)
	}
	r.step("ClaimBatch(%q, %v, max=%d) = [%s] err=%v", owner, lease, max, strings.Join(ids, ", "), err)
	var allowed []string
	want := leaseq.ErrInvalid
	if max >= 1 {
		allowed, want = r.m.beginClaim(now, owner, lease)
	}
	if errClass(err) != errClass(want) {
		r.fail("ClaimBatch: got error %v, want %v", err, want)
	}
	if err != nil {
		return
	}
	if n := min(max, len(allowed)); len(cs) != n {
		r.fail("ClaimBatch: got %d claims, want %d of %q", len(cs), n, allowed)
	}
	seen := map[string]bool{}
	for i, c := range cs {
		switch {
		case seen[c.ID] || !containsString(allowed, c.ID):
			r.fail("ClaimBatch: claim %d is %q, want a distinct one of %q", i, c.ID, allowed)
		case i > 0 && r.m.seq[c.ID] < r.m.seq[cs[i-1].ID]:
			r.fail("ClaimBatch: claim %d (%q) was enqueued before claim %d (%q), want enqueue order", i, c.ID, i-1, cs[i-1].ID)
		}
		seen[c.ID] = true
		exp := r.m.grant(c.ID, now, owner, lease)
		if g, w, same := sameClaim(c, exp); !same {
			r.fail("ClaimBatch claim %d:\n got  %s\n want %s", i, g, w)
		}
		r.claims = append(r.claims, c)
	}
}

// finishBatch reads a count and that many claims, each picked and forged as
// opFinishAny does, and finishes them in one call. With no claims handed out
// yet the batch is empty.
func (r *fuzzRun) finishBatch(in *opReader) {
	n := in.pick(5)
	if len(r.claims) == 0 {
		n = 0
	}
	cs, descs := make([]leaseq.Claim, n), make([]string, n)
	for i := range cs {
		var how string
		cs[i], how = forge(r.claims[in.pick(len(r.claims))], in.next())
		descs[i] = fmt.Sprintf("{%s: id=%q owner=%q token=%d}", how, cs[i].ID, cs[i].Owner, cs[i].Token)
	}
	now := r.clock.Now()
	oks, err := r.q.FinishBatch(r.ctx, cs)
	r.step("FinishBatch(%s) = %v, %v", strings.Join(descs, " "), oks, err)
	want, bad, wantErr := r.m.finishBatch(now, cs)
	switch {
	case errClass(err) != errClass(wantErr):
		r.fail("FinishBatch: got %v, %v; want %v, %v", oks, err, want, wantErr)
	case err != nil && !namesOneOf(err, "claims", map[error][]int{leaseq.ErrInvalid: bad}):
		r.fail("FinishBatch: got error %v, want one naming claims[i] for i in %v", err, bad)
	case err == nil && !slices.Equal(oks, want):
		r.fail("FinishBatch: got %v, want %v", oks, want)
	}
	for _, c := range cs {
		r.wantRow(c.ID)
	}
}

func (r *fuzzRun) requeue(id string) {
	now := r.clock.Now()
	err := r.q.Requeue(r.ctx, id)
	want := r.m.requeue(now, id)
	r.step("Requeue(%q) = %v", id, err)
	if errClass(err) != errClass(want) {
		r.fail("Requeue(%q): got error %v, want %v", id, err, want)
	}
	r.wantRow(id)
}

func (r *fuzzRun) get(id string) {
	r.step("Get(%q)", id)
	r.wantRow(id)
}

// wantRow compares one row (or its absence) with the model.
func (r *fuzzRun) wantRow(id string) {
	r.t.Helper()
	got, err := r.q.Get(r.ctx, id)
	want, wantErr := r.m.get(id)
	if errClass(err) != errClass(wantErr) {
		r.fail("Get(%q): got error %v, want %v", id, err, wantErr)
	}
	if err != nil {
		return
	}
	if g, w, same := sameState(got, want); !same {
		r.fail("row %q:\n got  %s\n want %s", id, g, w)
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

// checkAll compares every row, and that the table holds no row the model
// does not.
func (r *fuzzRun) checkAll() {
	r.t.Helper()
	var n int
	if err := r.db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	if n != len(r.m.jobs) {
		r.fail("table has %d rows, want %d", n, len(r.m.jobs))
	}
	for id := range r.m.jobs {
		r.wantRow(id)
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// maxFuzzOps bounds one input's length, so that a run stays a few
// milliseconds long.
const maxFuzzOps = 200

// FuzzQueueModel decodes its input into a sequence of queue operations —
// enqueue, claim, finish with the current, a stale or a forged claim, the
// batch calls, Requeue, Get, clock moves onto and around lease ends and
// deadlines — and runs each on the
// real queue and on the SPEC model, comparing every answer and, at the end,
// every row. The checked-in corpus (testdata/fuzz/FuzzQueueModel, generated
// from fuzzSeeds) walks each SPEC rule.
func FuzzQueueModel(f *testing.F) {
	opts := leaseq.Options{MaxAttempts: 2, MaxPayload: fuzzMaxPayload}
	q, db, clock := fuzzQueue(f, opts)
	// The seeds are the files of testdata/fuzz/FuzzQueueModel, which go
	// test runs on its own; TestFuzzCorpusUpToDate keeps them current.
	f.Fuzz(func(t *testing.T, input []byte) {
		resetQueue(t, db)
		in := &opReader{b: input}
		// The first byte sets where within a millisecond the clock starts.
		clock.Set(t0.Add(time.Duration(in.next()) * 3 * time.Microsecond))
		r := &fuzzRun{t: t, ctx: context.Background(), q: q, db: db, clock: clock, m: newModel(opts)}
		for n := 0; in.more() && n < maxFuzzOps; n++ {
			r.apply(in)
		}
		r.checkAll()
	})
}

// FuzzNames enqueues, claims and finishes one job with an arbitrary ID,
// owner and payload. Each is either refused with ErrInvalid and nothing
// written, or stored and handed back byte for byte.
func FuzzNames(f *testing.F) {
	q, db, clock := fuzzQueue(f, leaseq.Options{MaxPayload: fuzzMaxPayload})
	f.Add("order-7", "worker-1", []byte("payload"))
	f.Add(`'); DELETE FROM leaseq_jobs; --`, `" OR ""="`, []byte("\x00\x00\xff"))
	f.Add("日本語", "ówner", bytes.Repeat([]byte{0}, fuzzMaxPayload))
	f.Add(strings.Repeat("é", 127)+"x", strings.Repeat("o", 255), bytes.Repeat([]byte{1}, fuzzMaxPayload+1))
	f.Add("a\x00b", "\xff", []byte{})
	f.Fuzz(func(t *testing.T, id, owner string, payload []byte) {
		resetQueue(t, db)
		clock.Set(t0)
		ctx := context.Background()
		count := func() int {
			var n int
			if err := db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		err := q.Enqueue(ctx, leaseq.Job{ID: id, Payload: payload})
		if wantOK := validName(id) && len(payload) <= fuzzMaxPayload; wantOK != (err == nil) || err != nil && !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("Enqueue(%q, %d-byte payload): got %v, want ok=%v or ErrInvalid", id, len(payload), err, wantOK)
		}
		if err != nil {
			if n := count(); n != 0 {
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
