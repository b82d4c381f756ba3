package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"modernc.org/sqlite"
)

// TestOpen and TestOpenPathWithURICharacters test Open, SQLite's way in, and
// run on SQLite only, as do the subtests marked onlySQLite; every other test
// here runs on each engine (forEngines in engine_test.go).

func TestEnqueue(t *testing.T) { forEngines(t, testEnqueue) }

func testEnqueue(t *testing.T, eng testEngine) {
	t.Run("stores the job pending with token 0", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "order-7", Qty: 3, Payload: []byte("x\x00y"), Deadline: ms(5000), MaxAttempts: 5})
		f.wantRow(leaseq.State{ID: "order-7", Qty: 3, Payload: []byte("x\x00y"), Status: leaseq.StatusPending,
			MaxAttempts: 5, Deadline: ms(5000)})
	})
	t.Run("zero MaxAttempts takes the queue default", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{MaxAttempts: 7})
		f.enqueue(leaseq.Job{ID: "a"})
		if got := f.get("a").MaxAttempts; got != 7 {
			t.Fatalf("MaxAttempts: got %d, want the queue's 7", got)
		}
		g := newFixture(t, eng, leaseq.Options{})
		g.enqueue(leaseq.Job{ID: "a"})
		if got := g.get("a").MaxAttempts; got != leaseq.MaxAttemptsDefault {
			t.Fatalf("MaxAttempts: got %d, want MaxAttemptsDefault %d", got, leaseq.MaxAttemptsDefault)
		}
	})
	t.Run("payload at the limit is accepted", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{MaxPayload: 16})
		f.enqueue(leaseq.Job{ID: "a", Payload: make([]byte, 16)})
		if got := len(f.get("a").Payload); got != 16 {
			t.Fatalf("payload length: got %d, want 16", got)
		}
	})
}

// TestEnqueueInvalid covers the first row of the error table in docs/rules.md.
func TestEnqueueInvalid(t *testing.T) { forEngines(t, testEnqueueInvalid) }

func testEnqueueInvalid(t *testing.T, eng testEngine) {
	long := strings.Repeat("x", leaseq.MaxIDLen+1)
	cases := []struct {
		name string
		job  leaseq.Job
		says string // a fragment the error must contain
	}{
		{"empty ID", leaseq.Job{ID: ""}, "ID is empty"},
		{"ID over 255 bytes", leaseq.Job{ID: long}, "256 bytes"},
		{"ID not UTF-8", leaseq.Job{ID: "a\xffb"}, "UTF-8"},
		{"ID with NUL", leaseq.Job{ID: "a\x00b"}, "NUL"},
		{"negative Qty", leaseq.Job{ID: "a", Qty: -1}, "Qty -1"},
		{"negative MaxAttempts", leaseq.Job{ID: "a", MaxAttempts: -2}, "MaxAttempts -2"},
		{"deadline at now", leaseq.Job{ID: "a", Deadline: ms(1000)}, "deadline"},
		{"deadline before now", leaseq.Job{ID: "a", Deadline: ms(999)}, "is not after now"},
		{"deadline within now's millisecond", leaseq.Job{ID: "a", Deadline: ms(1000).Add(999 * time.Microsecond)}, "deadline"},
		{"payload over MaxPayload", leaseq.Job{ID: "a", Payload: make([]byte, 17)}, "17 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{MaxPayload: 16})
			f.enqueue(leaseq.Job{ID: "existing", Qty: 1})
			f.at(1000)
			before := f.snapshot()
			err := f.q.Enqueue(f.ctx, tc.job)
			if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Enqueue: got %v, want ErrInvalid saying %q", err, tc.says)
			}
			f.unchanged(before, "rejected Enqueue")
		})
	}
}

// TestEnqueueDuplicate: an ID already in the queue is refused whatever its
// state, and the stored row is left as it was.
func TestEnqueueDuplicate(t *testing.T) { forEngines(t, testEnqueueDuplicate) }

func testEnqueueDuplicate(t *testing.T, eng testEngine) {
	states := map[leaseq.Status]func(f *fixture){
		leaseq.StatusPending: func(f *fixture) {},
		leaseq.StatusLeased:  func(f *fixture) { f.mustClaim("A", time.Second) },
		leaseq.StatusDone:    func(f *fixture) { f.finish(f.mustClaim("A", time.Second)) },
		leaseq.StatusQuarantined: func(f *fixture) {
			f.mustClaim("A", time.Second)
			f.at(1000)
			f.claim("B", time.Second) // quarantines: MaxAttempts is 1
		},
	}
	for status, prepare := range states {
		t.Run(string(status), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "order-7", Qty: 3, MaxAttempts: 1})
			prepare(f)
			if got := f.get("order-7").Status; got != status {
				t.Fatalf("setup: status %s, want %s", got, status)
			}
			before := f.snapshot()
			err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "order-7", Qty: 99})
			if !errors.Is(err, leaseq.ErrDuplicate) || !strings.Contains(err.Error(), `"order-7"`) {
				t.Fatalf("Enqueue of a stored ID: got %v, want ErrDuplicate naming order-7", err)
			}
			f.unchanged(before, "duplicate Enqueue")
		})
	}
}

// TestClaimInvalid covers Claim's row of the error table in docs/rules.md.
func TestClaimInvalid(t *testing.T) { forEngines(t, testClaimInvalid) }

func testClaimInvalid(t *testing.T, eng testEngine) {
	cases := []struct {
		name  string
		owner string
		lease time.Duration
	}{
		{"empty owner", "", time.Second},
		{"zero lease", "A", 0},
		{"negative lease", "A", -time.Second},
		{"lease under a millisecond", "A", 999 * time.Microsecond},
		{"owner over 255 bytes", strings.Repeat("o", 256), time.Second},
		{"owner with NUL", "A\x00", time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a"})
			before := f.snapshot()
			c, ok, err := f.q.Claim(f.ctx, tc.owner, tc.lease)
			if !errors.Is(err, leaseq.ErrInvalid) || ok {
				t.Fatalf("Claim(%q, %v): got %+v %v %v, want ErrInvalid", tc.owner, tc.lease, c, ok, err)
			}
			f.unchanged(before, "rejected Claim")
		})
	}
}

// TestFinishInvalid covers Finish's ErrInvalid row: a Claim no Claim call
// could have returned.
func TestFinishInvalid(t *testing.T) { forEngines(t, testFinishInvalid) }

func testFinishInvalid(t *testing.T, eng testEngine) {
	cases := []struct {
		name  string
		claim func(c leaseq.Claim) leaseq.Claim
	}{
		{"zero claim", func(leaseq.Claim) leaseq.Claim { return leaseq.Claim{} }},
		{"empty ID", func(c leaseq.Claim) leaseq.Claim { c.ID = ""; return c }},
		{"empty owner", func(c leaseq.Claim) leaseq.Claim { c.Owner = ""; return c }},
		{"token 0", func(c leaseq.Claim) leaseq.Claim { c.Token = 0; return c }},
		{"negative token", func(c leaseq.Claim) leaseq.Claim { c.Token = -1; return c }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a"})
			c := f.mustClaim("A", time.Second)
			before := f.snapshot()
			ok, err := f.q.Finish(f.ctx, tc.claim(c))
			if !errors.Is(err, leaseq.ErrInvalid) || ok {
				t.Fatalf("Finish: got %v %v, want false and ErrInvalid", ok, err)
			}
			f.unchanged(before, "rejected Finish")
		})
	}
}

// TestFinishRefused covers the refusals of rule 3: false, nil error,
// row untouched.
func TestFinishRefused(t *testing.T) { forEngines(t, testFinishRefused) }

func testFinishRefused(t *testing.T, eng testEngine) {
	cases := []struct {
		name string
		// setup returns the claim to finish; the fixture clock is at the
		// moment of the Finish call when it returns.
		setup func(f *fixture) leaseq.Claim
	}{
		{"unknown ID", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second)
			c.ID = "order-8"
			return c
		}},
		{"wrong owner", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second)
			c.Owner = "B"
			return c
		}},
		{"stale token", func(f *fixture) leaseq.Claim {
			a := f.mustClaim("A", time.Second)
			f.at(1000).mustClaim("A", time.Second)
			f.at(1001)
			return a
		}},
		{"forged future token", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second)
			c.Token++
			return c
		}},
		{"lease over", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second)
			f.at(1500)
			return c
		}},
		{"deadline passed", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second) // lease capped at the deadline, 500
			f.at(500)
			return c
		}},
		{"already done", func(f *fixture) leaseq.Claim {
			c := f.mustClaim("A", time.Second)
			if !f.finish(c) {
				f.t.Fatal("first Finish refused")
			}
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "order-7", Qty: 3, Deadline: ms(500)})
			if tc.name != "deadline passed" {
				f = newFixture(t, eng, leaseq.Options{})
				f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})
			}
			c := tc.setup(f)
			before := f.snapshot()
			ok, err := f.q.Finish(f.ctx, c)
			if ok || err != nil {
				t.Fatalf("Finish(%+v): got %v %v, want false, nil; rows:\n%s", c, ok, err, f.dump())
			}
			f.unchanged(before, "refused Finish")
		})
	}
}

func TestGetNotFound(t *testing.T) { forEngines(t, testGetNotFound) }

func testGetNotFound(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	_, err := f.q.Get(f.ctx, "order-7")
	if !errors.Is(err, leaseq.ErrNotFound) || !strings.Contains(err.Error(), "order-7") {
		t.Fatalf("Get of an unknown ID: got %v, want ErrNotFound naming it", err)
	}
}

func TestClaimEmptyQueue(t *testing.T) { forEngines(t, testClaimEmptyQueue) }

func testClaimEmptyQueue(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	if c, ok := f.claim("A", time.Second); ok {
		t.Fatalf("Claim on an empty queue: got %+v, want nothing", c)
	}
}

// TestClaimOrder: among jobs of one priority, the one due earliest is
// claimed first, then the one enqueued first; an expired lease is due from
// its lease end.
func TestClaimOrder(t *testing.T) { forEngines(t, testClaimOrder) }

func testClaimOrder(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	for _, id := range []string{"j1", "j2", "j3"} {
		f.enqueue(leaseq.Job{ID: id})
	}
	if c := f.mustClaim("A", time.Second); c.ID != "j1" {
		t.Fatalf("first claim: got %s, want j1", c.ID)
	}
	f.at(500)
	if c := f.mustClaim("A", time.Second); c.ID != "j2" {
		t.Fatalf("second claim: got %s, want j2", c.ID)
	}
	f.at(2000)
	for _, want := range []struct {
		id    string
		token int64
	}{{"j3", 1}, {"j1", 2}, {"j2", 2}} { // due at 0, 1000, 1500
		if c := f.mustClaim("B", time.Second); c.ID != want.id || c.Token != want.token {
			t.Fatalf("claim after the leases expired: got %s token %d, want %s token %d", c.ID, c.Token, want.id, want.token)
		}
	}
}

// TestLiveLeaseNotHandedOver is rule 2: however often Claim is called
// while the lease is live, by whoever, the job is not returned and its token
// does not move.
func TestLiveLeaseNotHandedOver(t *testing.T) { forEngines(t, testLiveLeaseNotHandedOver) }

func testLiveLeaseNotHandedOver(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})
	a := f.mustClaim("A", time.Second)
	for i := 0; i < 200; i++ {
		f.at(int64(i * 5)) // 0ms .. 995ms
		for _, owner := range []string{"A", "B"} {
			if c, ok := f.claim(owner, time.Hour); ok {
				t.Fatalf("%s claims at %dms: got %+v, want nothing", owner, i*5, c)
			}
		}
	}
	f.at(999)
	f.wantRow(leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 1, Attempts: 1,
		MaxAttempts: 3, LeaseUntil: ms(1000)})
	if !f.finish(a) {
		t.Fatalf("A's Finish at 999ms refused; rows:\n%s", f.dump())
	}
}

// TestRestartedWorkerSameName: a restarted worker has the same owner name;
// only the token tells its two runs apart.
func TestRestartedWorkerSameName(t *testing.T) { forEngines(t, testRestartedWorkerSameName) }

func testRestartedWorkerSameName(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "order-7", Qty: 3})
	old := f.mustClaim("A", time.Second)
	restarted := f.at(1000).mustClaim("A", time.Second)
	if restarted.Token != old.Token+1 {
		t.Fatalf("re-claim by the same name: got token %d, want %d", restarted.Token, old.Token+1)
	}
	if f.at(1001).finish(old) {
		t.Fatalf("the old run's Finish (token %d) accepted, want refused; rows:\n%s", old.Token, f.dump())
	}
	f.wantRow(leaseq.State{ID: "order-7", Qty: 3, Status: leaseq.StatusLeased, Owner: "A", Token: 2, Attempts: 2,
		MaxAttempts: 3, LeaseUntil: ms(2000)})
	if !f.finish(restarted) {
		t.Fatalf("the new run's Finish (token %d) refused; rows:\n%s", restarted.Token, f.dump())
	}
}

// TestTokensNeverReused: tokens and attempts rise by one per claim, through
// expiries, across owners.
func TestTokensNeverReused(t *testing.T) { forEngines(t, testTokensNeverReused) }

func testTokensNeverReused(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{MaxAttempts: 10})
	f.enqueue(leaseq.Job{ID: "a"})
	for i := int64(1); i <= 10; i++ {
		c := f.at((i-1)*100).mustClaim(fmt.Sprint("w", i%3), 100*time.Millisecond)
		if c.Token != i || c.Attempt != int(i) {
			t.Fatalf("claim %d: got token %d attempt %d, want %d and %d", i, c.Token, c.Attempt, i, i)
		}
	}
}

// TestQuarantine is rule 6.
func TestQuarantine(t *testing.T) { forEngines(t, testQuarantine) }

func testQuarantine(t *testing.T, eng testEngine) {
	t.Run("attempts used up and lease expired", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 1, MaxAttempts: 2})
		f.mustClaim("A", time.Second)               // a, attempt 1
		f.at(1000).mustClaim("B", time.Second)      // a, attempt 2
		f.enqueue(leaseq.Job{ID: "b", Qty: 2})      // due at 1000, as a will be
		c := f.at(2000).mustClaim("C", time.Second) // a is quarantined first, so b
		if c.ID != "b" || c.Token != 1 {
			t.Fatalf("claim at 2000ms: got %s token %d, want b token 1", c.ID, c.Token)
		}
		s := f.get("a")
		if s.Status != leaseq.StatusQuarantined || s.Owner != "B" || s.Token != 2 || s.Attempts != 2 ||
			!strings.Contains(s.Reason, "max attempts") {
			t.Fatalf("row a: got %s, want quarantined keeping owner B, token 2, attempts 2, a max-attempts reason", fmtState(s))
		}
		if !f.finish(c) {
			t.Fatalf("Finish of b refused; rows:\n%s", f.dump())
		}
		for _, at := range []int64{5000, 100000} {
			f.at(at)
			if got, ok := f.claim("D", time.Second); ok {
				t.Fatalf("claim at %dms: got %+v, want nothing (a is quarantined, b done)", at, got)
			}
		}
		if got := f.get("a"); fmtState(got) != fmtState(s) {
			t.Fatalf("quarantined row moved:\n got  %s\n want %s", fmtState(got), fmtState(s))
		}
	})
	t.Run("attempts used up but lease live", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 1})
		c := f.mustClaim("A", time.Second)
		f.at(999).claim("B", time.Second)
		if got := f.get("a").Status; got != leaseq.StatusLeased {
			t.Fatalf("status at 999ms: got %s, want leased (the lease is live)", got)
		}
		if !f.finish(c) {
			t.Fatalf("Finish of the last attempt refused; rows:\n%s", f.dump())
		}
	})
	t.Run("pending job whose deadline passed", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 1, Deadline: ms(500)})
		if c, ok := f.at(500).claim("A", time.Second); ok {
			t.Fatalf("claim at the deadline: got %+v, want nothing", c)
		}
		f.wantRow(leaseq.State{ID: "a", Qty: 1, Status: leaseq.StatusQuarantined, MaxAttempts: 3, Deadline: ms(500),
			Reason: "deadline passed at 1767225600500 (unix ms), 0 of 3 attempts used"})
	})
	t.Run("leased job whose deadline passed", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 1, Deadline: ms(500)})
		f.mustClaim("A", time.Second)
		if c, ok := f.at(500).claim("B", time.Second); ok {
			t.Fatalf("claim at the deadline: got %+v, want nothing", c)
		}
		s := f.get("a")
		if s.Status != leaseq.StatusQuarantined || s.Owner != "A" || s.Token != 1 || !strings.Contains(s.Reason, "deadline") {
			t.Fatalf("row: got %s, want quarantined keeping owner A token 1, reason deadline", fmtState(s))
		}
	})
	t.Run("a deadline just ahead is not quarantined", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Deadline: ms(500)})
		c := f.at(499).mustClaim("A", time.Second)
		if !c.LeaseUntil.Equal(ms(500)) {
			t.Fatalf("lease_until: got %s, want +500ms (the deadline)", relMS(c.LeaseUntil))
		}
	})
}

// TestTimeTruncatedToMillisecond is rule 8: instants are truncated to
// the millisecond before they are compared or stored.
func TestTimeTruncatedToMillisecond(t *testing.T) { forEngines(t, testTimeTruncatedToMillisecond) }

func testTimeTruncatedToMillisecond(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	f.clock.Set(ms(10).Add(900 * time.Microsecond)) // 10.9ms reads as 10ms
	f.enqueue(leaseq.Job{ID: "a", Deadline: ms(5000).Add(999 * time.Microsecond)})
	c := f.mustClaim("A", time.Second+900*time.Microsecond) // 1000.9ms of lease is 1000ms
	if !c.LeaseUntil.Equal(ms(1010)) || !c.Deadline.Equal(ms(5000)) {
		t.Fatalf("claim: got lease_until %s deadline %s, want +1010ms and +5000ms", relMS(c.LeaseUntil), relMS(c.Deadline))
	}
	f.clock.Set(ms(1010).Add(-time.Microsecond)) // 1009.999ms reads as 1009ms: live
	f.clock.Set(ms(1010).Add(500 * time.Microsecond))
	if f.finish(c) {
		t.Fatalf("Finish at 1010.5ms (reads as 1010ms, the lease end): accepted, want refused; rows:\n%s", f.dump())
	}
	g := newFixture(t, eng, leaseq.Options{})
	g.enqueue(leaseq.Job{ID: "a"})
	d := g.mustClaim("A", time.Second)
	g.clock.Set(ms(1000).Add(-time.Microsecond)) // 999.999ms reads as 999ms
	if !g.finish(d) {
		t.Fatalf("Finish at 999.999ms (reads as 999ms): refused, want accepted; rows:\n%s", g.dump())
	}
}

// TestPayloadByteForByte: payloads come back exactly as they went in.
func TestPayloadByteForByte(t *testing.T) { forEngines(t, testPayloadByteForByte) }

func testPayloadByteForByte(t *testing.T, eng testEngine) {
	payloads := map[string][]byte{
		"nul bytes": {0, 0, 1, 0},
		"not utf-8": {0xff, 0xfe, 0x00, 0xc3},
		"sql":       []byte("'); DROP TABLE leaseq_jobs; --"),
		"empty":     nil,
		"unicode":   []byte("заказ 注文 🍫"),
		"all bytes": allBytes(),
	}
	f := newFixture(t, eng, leaseq.Options{})
	for name, p := range payloads {
		f.enqueue(leaseq.Job{ID: name, Payload: p})
	}
	for range payloads {
		c := f.mustClaim("A", time.Second)
		if string(c.Payload) != string(payloads[c.ID]) || (len(c.Payload) == 0) != (c.Payload == nil) {
			t.Fatalf("claim %q payload: got %q, want %q", c.ID, c.Payload, payloads[c.ID])
		}
		if got := f.get(c.ID).Payload; string(got) != string(payloads[c.ID]) {
			t.Fatalf("Get %q payload: got %q, want %q", c.ID, got, payloads[c.ID])
		}
	}
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// TestContextCancelled: a context that ends before or during an operation
// makes it return the context's error with nothing written.
func TestContextCancelled(t *testing.T) { forEngines(t, testContextCancelled) }

func testContextCancelled(t *testing.T, eng testEngine) {
	t.Run("before", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		c := f.mustClaim("A", time.Second)
		f.enqueue(leaseq.Job{ID: "b"})
		before := f.snapshot()
		ctx, cancel := context.WithCancel(f.ctx)
		cancel()
		if err := f.q.Enqueue(ctx, leaseq.Job{ID: "c"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("Enqueue: got %v, want context.Canceled", err)
		}
		if _, _, err := f.q.Claim(ctx, "B", time.Second); !errors.Is(err, context.Canceled) {
			t.Fatalf("Claim: got %v, want context.Canceled", err)
		}
		if _, err := f.q.Finish(ctx, c); !errors.Is(err, context.Canceled) {
			t.Fatalf("Finish: got %v, want context.Canceled", err)
		}
		f.unchanged(before, "calls with a cancelled context")
	})
	t.Run("while waiting for the lock", func(t *testing.T) {
		onlySQLite(t, eng, "another connection holds SQLite's write lock")
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		before := f.snapshot()
		holdWriteLock(t, f.path)
		ctx, cancel := context.WithTimeout(f.ctx, 50*time.Millisecond)
		defer cancel()
		if _, _, err := f.q.Claim(ctx, "A", time.Second); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Claim while another connection holds the write lock: got %v, want context.DeadlineExceeded", err)
		}
		f.unchanged(before, "Claim that timed out waiting")
	})
	t.Run("during the transaction", func(t *testing.T) {
		onlySQLite(t, eng, "the cancel comes from SQLite's pre-update hook")
		// One pooled connection, so the hook below is on the connection the
		// claim transaction runs on. The hook cancels the context while the
		// quarantine UPDATE is writing a row: that row's change must be
		// rolled back with the rest.
		f := newFixture(t, eng, leaseq.Options{})
		f.db.SetMaxOpenConns(1)
		f.enqueue(leaseq.Job{ID: "spent", MaxAttempts: 1})
		f.mustClaim("A", time.Second)
		f.enqueue(leaseq.Job{ID: "next"})
		f.at(1000)
		before := f.snapshot()
		ctx, cancel := context.WithCancel(f.ctx)
		defer cancel()
		var hooked sync.Once
		setPreUpdateHook(t, f.db, func(sqlite.SQLitePreUpdateData) { hooked.Do(cancel) })
		_, _, err := f.q.Claim(ctx, "B", time.Second)
		setPreUpdateHook(t, f.db, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Claim cancelled mid-transaction: got %v, want context.Canceled", err)
		}
		f.unchanged(before, "Claim cancelled mid-transaction")
		// The connection went back to the pool clean: a write through it works.
		f.enqueue(leaseq.Job{ID: "after"})
		if c := f.mustClaim("C", time.Second); c.ID != "next" {
			t.Fatalf("claim after the cancelled one: got %s, want next (spent quarantined)", c.ID)
		}
	})
}

// holdWriteLock takes SQLite's write lock on path from another connection
// until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.ExecContext(context.Background(), "ROLLBACK")
		conn.Close()
		db.Close()
	})
}

// setPreUpdateHook installs fn as the pre-update hook of one pooled
// connection of db (with SetMaxOpenConns(1), the only one).
func setPreUpdateHook(t *testing.T, db *sql.DB, fn sqlite.PreUpdateHookFn) {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		dc.(sqlite.HookRegisterer).RegisterPreUpdateHook(fn)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpen is rule 9: every pooled connection gets the settings.
func TestOpen(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	var conns []*sql.Conn
	for i := 0; i < 3; i++ { // three at once, so three distinct connections
		c, err := f.db.Conn(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	want := map[string]string{"journal_mode": strings.ToLower(leaseq.JournalMode), "synchronous": "2", "busy_timeout": "5000", "foreign_keys": "1"}
	for i, c := range conns {
		for pragma, w := range want {
			var got string
			if err := c.QueryRowContext(f.ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != w {
				t.Fatalf("connection %d: PRAGMA %s = %s, want %s", i, pragma, got, w)
			}
		}
	}
}

// TestOpenPathWithURICharacters: Open takes a file path, not a URI; '?',
// '#' and '%' in it name the file literally. (The other Open errors are in
// faults_test.go.)
func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%20d.db")
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := leaseq.New(context.Background(), db, leaseq.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database was not created at the literal path: %v", err)
	}
}

func TestNew(t *testing.T) { forEngines(t, testNew) }

func testNew(t *testing.T, eng testEngine) {
	ctx := context.Background()
	t.Run("idempotent and keeps the jobs", func(t *testing.T) {
		onlySQLite(t, eng, "reads SQLite's user_version")
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a"})
		q2, err := leaseq.New(ctx, f.db, leaseq.Options{Clock: f.clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q2.Get(ctx, "a"); err != nil {
			t.Fatalf("job after a second New: %v", err)
		}
		var v int
		f.db.QueryRow("PRAGMA user_version").Scan(&v)
		if v != leaseq.SchemaVersion {
			t.Fatalf("user_version: got %d, want %d", v, leaseq.SchemaVersion)
		}
	})
	t.Run("many callers at once on a fresh file", func(t *testing.T) {
		onlySQLite(t, eng, "eight pools on one new file")
		path := filepath.Join(t.TempDir(), "q.db")
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				db, err := sql.Open("sqlite", "file:"+path) // own pool, no busy timeout
				if err != nil {
					errs <- err
					return
				}
				defer db.Close()
				q, err := leaseq.New(ctx, db, leaseq.Options{})
				if err == nil {
					err = q.Enqueue(ctx, leaseq.Job{ID: fmt.Sprint("job-", i)})
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent New+Enqueue: %v", err)
			}
		}
	})
	t.Run("refuses WAL", func(t *testing.T) {
		onlySQLite(t, eng, "SQLite's journal mode")
		path := filepath.Join(t.TempDir(), "q.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = leaseq.New(ctx, db, leaseq.Options{})
		if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), "journal_mode=wal") {
			t.Fatalf("New on a WAL database: got %v, want ErrInvalid naming journal_mode=wal", err)
		}
	})
	t.Run("refuses a newer schema", func(t *testing.T) {
		onlySQLite(t, eng, "sets SQLite's user_version")
		f := newFixture(t, eng, leaseq.Options{})
		if _, err := f.db.Exec("PRAGMA user_version = 99"); err != nil {
			t.Fatal(err)
		}
		_, err := leaseq.New(ctx, f.db, leaseq.Options{})
		if !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), "99") {
			t.Fatalf("New on schema version 99: got %v, want ErrInvalid naming 99", err)
		}
	})
	t.Run("refuses bad options", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		for _, o := range []leaseq.Options{{MaxAttempts: -1}, {MaxPayload: -1},
			{MaxPayload: leaseq.MaxPayloadLimit + 1}, {Name: "a\x00"}, {Name: strings.Repeat("n", leaseq.MaxIDLen+1)}} {
			if _, err := leaseq.New(ctx, f.db, o); !errors.Is(err, leaseq.ErrInvalid) {
				t.Fatalf("New(%+v): got %v, want ErrInvalid", o, err)
			}
		}
		if _, err := leaseq.New(ctx, nil, leaseq.Options{}); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("New(nil db): got %v, want ErrInvalid", err)
		}
	})
}

func TestManualClock(t *testing.T) {
	c := leaseq.NewManualClock(t0)
	c.Advance(1500 * time.Millisecond)
	if got := c.Now(); !got.Equal(ms(1500)) {
		t.Fatalf("after Advance: got %s, want +1500ms", relMS(got))
	}
	c.Set(ms(7))
	if got := c.Now(); !got.Equal(ms(7)) {
		t.Fatalf("after Set: got %s, want +7ms", relMS(got))
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Advance(time.Millisecond); c.Now() }()
	}
	wg.Wait()
	if got := c.Now(); !got.Equal(ms(15)) {
		t.Fatalf("after 8 concurrent Advance(1ms): got %s, want +15ms", relMS(got))
	}
}

// TestRequeue: a quarantined job leaves quarantine only when requeued, with
// its attempts reset and its token kept.
func TestRequeue(t *testing.T) { forEngines(t, testRequeue) }

func testRequeue(t *testing.T, eng testEngine) {
	t.Run("quarantined job is claimable again with the next token", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Qty: 2, MaxAttempts: 1})
		f.mustClaim("A", time.Second)
		f.at(1000).claim("B", time.Second) // quarantines a
		if err := f.q.Requeue(f.ctx, "a"); err != nil {
			t.Fatal(err)
		}
		f.wantRow(leaseq.State{ID: "a", Qty: 2, Status: leaseq.StatusPending, Owner: "A", Token: 1, MaxAttempts: 1})
		c := f.mustClaim("B", time.Second)
		if c.Token != 2 || c.Attempt != 1 {
			t.Fatalf("claim after requeue: got token %d attempt %d, want token 2 attempt 1", c.Token, c.Attempt)
		}
	})
	for _, tc := range []struct {
		name    string
		prepare func(f *fixture)
		want    error
	}{
		{"pending", func(f *fixture) {}, leaseq.ErrInvalid},
		{"leased", func(f *fixture) { f.mustClaim("A", time.Second) }, leaseq.ErrInvalid},
		{"done", func(f *fixture) { f.finish(f.mustClaim("A", time.Second)) }, leaseq.ErrInvalid},
		{"deadline passed", func(f *fixture) { f.at(5000).claim("A", time.Second) }, leaseq.ErrInvalid},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "a", Deadline: ms(5000)})
			tc.prepare(f)
			before := f.snapshot()
			if err := f.q.Requeue(f.ctx, "a"); !errors.Is(err, tc.want) {
				t.Fatalf("Requeue: got %v, want %v; rows:\n%s", err, tc.want, f.dump())
			}
			f.unchanged(before, "refused Requeue")
		})
	}
	t.Run("unknown ID", func(t *testing.T) {
		f := newFixture(t, eng, leaseq.Options{})
		if err := f.q.Requeue(f.ctx, "nope"); !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatalf("Requeue of an unknown ID: got %v, want ErrNotFound", err)
		}
	})
}
