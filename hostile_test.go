package leaseq_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Every test here runs on each engine (forEngines in engine_test.go).

// hostileNames are valid IDs and owners that would break a queue that
// built SQL from strings, cut names at odd bytes or normalised them.
var hostileNames = []string{
	`it's`,
	`"quoted"`,
	`'); DROP TABLE leaseq_jobs; --`,
	`x' OR '1'='1`,
	`%`, `_`, `\`, `*`, `?1`, `:id`, `$1`,
	"tab\tnew\nline\rreturn",
	"日本語の注文",
	"e\u0301",   // e + combining accent: not normalised to é
	"\u00e9",    // é precomposed: a different name
	"🙂👍🏽",       // astral plane, with a modifier
	"\u202eRTL", // right-to-left override
	"\uFEFFbom",
	strings.Repeat("a", leaseq.MaxIDLen), // exactly the limit
	strings.Repeat("é", leaseq.MaxIDLen/2) + "a", // 255 bytes of 2-byte runes + 1
	strings.Repeat("🙂", leaseq.MaxIDLen/4) + "abc",
}

// TestHostileNames enqueues a job under each hostile name, claims it as an
// owner with that name, and finishes it: ID, owner and payload come back
// byte for byte at every step, each name is its own job, and the table is
// still there.
func TestHostileNames(t *testing.T) { forEngines(t, testHostileNames) }

func testHostileNames(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	for i, name := range hostileNames {
		if len(name) > leaseq.MaxIDLen {
			t.Fatalf("test name %d is %d bytes, over the limit", i, len(name))
		}
		f.enqueue(leaseq.Job{ID: name, Qty: i, Payload: []byte(name)})
	}
	// Jobs are claimed in enqueue order; each is claimed by an owner with
	// its own name, so a mix-up of owner and ID would show.
	for i, name := range hostileNames {
		c := f.mustClaim(name, time.Hour)
		if c.ID != name || c.Owner != name || c.Qty != i || string(c.Payload) != name || c.Token != 1 {
			t.Fatalf("claim %d: got id=%q owner=%q qty=%d payload=%q token=%d; want id=owner=payload=%q qty=%d token=1",
				i, c.ID, c.Owner, c.Qty, c.Payload, c.Token, name, i)
		}
		if !f.finish(c) {
			t.Fatalf("Finish(%q as %q): got false, want true; rows:\n%s", c.ID, c.Owner, f.dump())
		}
	}
	for i, name := range hostileNames {
		s := f.get(name)
		if s.ID != name || s.Owner != name || s.Status != leaseq.StatusDone || s.Qty != i || string(s.Payload) != name {
			t.Fatalf("row %q: got id=%q %s", name, s.ID, fmtState(s))
		}
	}
	if n := countRows(t, f.db); n != len(hostileNames) {
		t.Fatalf("%d rows, want %d", n, len(hostileNames))
	}
	eng.wantIntegrity(t, f.db)
}

// TestHostileNamesRefused: IDs and owners that cannot be stored byte for
// byte — empty, one byte over the limit (in ASCII and in multi-byte
// runes), invalid UTF-8, NUL anywhere — are ErrInvalid and write nothing.
func TestHostileNamesRefused(t *testing.T) { forEngines(t, testHostileNamesRefused) }

func testHostileNamesRefused(t *testing.T, eng testEngine) {
	bad := map[string]string{
		"empty":              "",
		"256 bytes":          strings.Repeat("a", leaseq.MaxIDLen+1),
		"258 bytes of runes": strings.Repeat("日", 86),
		"invalid UTF-8":      "caf\xe9",
		"lone continuation":  "\x80",
		"surrogate half":     "\xed\xa0\x80",
		"NUL inside":         "a\x00b",
		"NUL at the end":     "ab\x00",
		"NUL only":           "\x00",
	}
	f := newFixture(t, eng, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "ok", Qty: 1})
	before := f.snapshot()
	for what, name := range bad {
		if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: name, Qty: 1}); !errors.Is(err, leaseq.ErrInvalid) {
			t.Errorf("Enqueue with an ID that is %s: got %v, want ErrInvalid", what, err)
		}
		if c, ok, err := f.q.Claim(f.ctx, name, time.Second); !errors.Is(err, leaseq.ErrInvalid) || ok {
			t.Errorf("Claim as an owner that is %s: got %+v ok=%v err=%v, want ErrInvalid", what, c, ok, err)
		}
	}
	if after := f.snapshot(); after != before {
		t.Fatalf("refused calls changed the table:\n%s", diffLines(after, before))
	}
}

// TestPayloadLimits: a payload of exactly MaxPayload bytes is stored and
// handed back byte for byte, one byte more is ErrInvalid and writes
// nothing; the same at the default limit of 1 MiB. Payloads of NUL bytes,
// invalid UTF-8 and every byte value survive unchanged.
func TestPayloadLimits(t *testing.T) { forEngines(t, testPayloadLimits) }

func testPayloadLimits(t *testing.T, eng testEngine) {
	for _, limit := range []int{0, 1000} {
		f := newFixture(t, eng, leaseq.Options{MaxPayload: limit})
		if limit == 0 {
			limit = leaseq.MaxPayloadDefault
		}
		at := bytes.Repeat([]byte{0, 1, 0xff, 'x'}, limit/4)
		at = append(at, make([]byte, limit-len(at))...)
		over := append(bytes.Clone(at), 0)
		if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "over", Payload: over}); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("limit %d: Enqueue of %d bytes: got %v, want ErrInvalid", limit, len(over), err)
		}
		if _, err := f.q.Get(f.ctx, "over"); !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatalf("limit %d: the refused job was written: Get = %v", limit, err)
		}
		f.enqueue(leaseq.Job{ID: "at", Payload: at})
		c := f.mustClaim("w", time.Second)
		if !bytes.Equal(c.Payload, at) {
			t.Fatalf("limit %d: claimed payload differs from the %d bytes enqueued", limit, len(at))
		}
		if s := f.get("at"); !bytes.Equal(s.Payload, at) {
			t.Fatalf("limit %d: stored payload (%d bytes) differs from the %d bytes enqueued", limit, len(s.Payload), len(at))
		}
	}

	f := newFixture(t, eng, leaseq.Options{})
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	payloads := map[string][]byte{
		"one NUL":       {0},
		"NULs":          make([]byte, 64),
		"NUL inside":    []byte("before\x00after"),
		"invalid UTF-8": []byte("caf\xe9 \xff\xfe"),
		"every byte":    every,
		"SQL":           []byte("'); DROP TABLE leaseq_jobs; --"),
	}
	for name, p := range payloads {
		f.enqueue(leaseq.Job{ID: name, Payload: p})
	}
	for range payloads {
		c := f.mustClaim("w", time.Hour)
		if !bytes.Equal(c.Payload, payloads[c.ID]) {
			t.Fatalf("claim of %q: payload %q, want %q", c.ID, c.Payload, payloads[c.ID])
		}
	}
	for name, p := range payloads {
		if s := f.get(name); !bytes.Equal(s.Payload, p) {
			t.Fatalf("row %q: payload %q, want %q", name, s.Payload, p)
		}
	}
}

// TestExtremeNumbers: the largest Qty and MaxAttempts round-trip, and a
// deadline far in the future caps nothing.
func TestExtremeNumbers(t *testing.T) { forEngines(t, testExtremeNumbers) }

func testExtremeNumbers(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	far := time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
	f.enqueue(leaseq.Job{ID: "big", Qty: math.MaxInt, MaxAttempts: math.MaxInt32, Deadline: far})
	c := f.mustClaim("w", time.Hour)
	if c.Qty != math.MaxInt || !c.Deadline.Equal(far) || !c.LeaseUntil.Equal(ms(3600_000)) {
		t.Fatalf("claim: got qty=%d deadline=%s lease_until=%s, want qty=%d deadline=%s lease_until=+3600000ms",
			c.Qty, c.Deadline, relMS(c.LeaseUntil), math.MaxInt, far)
	}
	if s := f.get("big"); s.MaxAttempts != math.MaxInt32 {
		t.Fatalf("max attempts: got %d, want %d", s.MaxAttempts, math.MaxInt32)
	}
}
