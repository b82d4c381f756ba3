package leaseq_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Rule 50: a job's kind is stored, returned in Claim.Kind and State.Kind,
// and filters List; the Claim says when the job was enqueued and its RunAt
// (rule 51).

// TestKindStoredAndReturned: each way in (Enqueue, EnqueueBatch,
// EnqueueTx) keeps the kind; Claim, Get and List return it with the whole
// row; a job without one has "".
func TestKindStoredAndReturned(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "a", Kind: "email.send", Payload: []byte(`{"to":"x"}`)})
		if err := f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "b", Kind: "sms"}, {ID: "c"}}); err != nil {
			t.Fatal(err)
		}
		tx, err := f.db.BeginTx(f.ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.q.EnqueueTx(f.ctx, tx, leaseq.Job{ID: "d", Kind: "email.send", RunAt: ms(500)}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		for id, kind := range map[string]string{"a": "email.send", "b": "sms", "c": "", "d": "email.send"} {
			if got := f.get(id).Kind; got != kind {
				t.Fatalf("Get(%q).Kind = %q, want %q", id, got, kind)
			}
		}
		f.wantRow(leaseq.State{ID: "a", Kind: "email.send", Payload: []byte(`{"to":"x"}`), Status: leaseq.StatusPending,
			MaxAttempts: leaseq.MaxAttemptsDefault, EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		c := f.at(10).mustClaim("w", time.Second)
		if c.ID != "a" || c.Kind != "email.send" || !c.EnqueuedAt.Equal(ms(0)) || !c.RunAt.IsZero() {
			t.Fatalf("claim of a: %+v, want kind email.send, enqueued at 0, no RunAt", c)
		}
		wantKinds(t, f, leaseq.Filter{Kind: "email.send"}, "a", "d")
		wantKinds(t, f, leaseq.Filter{Kind: "email.send", Status: leaseq.StatusLeased}, "a")
		wantKinds(t, f, leaseq.Filter{Kind: "email.send", Status: leaseq.StatusPending}, "d")
		wantKinds(t, f, leaseq.Filter{Kind: "email.send", AfterID: "a"}, "d")
		wantKinds(t, f, leaseq.Filter{Kind: "email.send", Limit: 1}, "a")
		wantKinds(t, f, leaseq.Filter{Kind: "sms", Status: leaseq.StatusDone})
		wantKinds(t, f, leaseq.Filter{Kind: "nothing"})
		wantKinds(t, f, leaseq.Filter{}, "a", "b", "c", "d")
		// Kinds are per queue: another queue's List by kind sees none.
		wantKinds(t, &fixture{t: t, q: f.queue("other")}, leaseq.Filter{Kind: "email.send"})
	})
}

// wantKinds fails unless List(flt) returns exactly ids, in that order.
func wantKinds(t *testing.T, f *fixture, flt leaseq.Filter, ids ...string) {
	t.Helper()
	if got := listIDs(t, f.q, flt); !slices.Equal(got, append([]string{}, ids...)) {
		t.Fatalf("List(%+v) = %v, want %v", flt, got, ids)
	}
}

// TestClaimEnqueuedAtRunAt: Claim.EnqueuedAt is the enqueue instant and
// Claim.RunAt the job's RunAt, then, after a Release with a delay, the end
// of that delay, exactly at the boundaries.
func TestClaimEnqueuedAtRunAt(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.at(100).enqueue(leaseq.Job{ID: "later", RunAt: ms(1000), Kind: "k"})
		f.at(999).nothingClaimable("RunAt is 1000")
		c := f.at(1000).mustClaim("w", time.Second)
		if !c.EnqueuedAt.Equal(ms(100)) || !c.RunAt.Equal(ms(1000)) || c.Kind != "k" {
			t.Fatalf("claim at 1000: enqueued %s run at %s kind %q, want +100ms, +1000ms, k", relMS(c.EnqueuedAt), relMS(c.RunAt), c.Kind)
		}
		if ok, err := f.at(1500).q.Release(f.ctx, c, 700*time.Millisecond, "again"); !ok || err != nil {
			t.Fatalf("Release: %v %v", ok, err)
		}
		f.at(2199).nothingClaimable("released until 2200")
		c = f.at(2200).mustClaim("w", time.Second)
		if !c.EnqueuedAt.Equal(ms(100)) || !c.RunAt.Equal(ms(2200)) || c.Attempt != 2 {
			t.Fatalf("claim after the release: %+v, want enqueued +100ms, run at +2200ms, attempt 2", c)
		}
	})
}

// TestKindInvalid: a kind over MaxKindLen bytes, not UTF-8 or with a NUL
// is ErrInvalid naming Kind, from every way in, and writes nothing; one of
// exactly MaxKindLen bytes is taken. A Filter.Kind that no job could have
// is ErrInvalid too.
func TestKindInvalid(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "x"})
		for _, kind := range []string{strings.Repeat("k", leaseq.MaxKindLen+1), "bad\xff", "nul\x00"} {
			before := f.snapshot()
			j := leaseq.Job{ID: "new", Kind: kind}
			wantErrSays(t, f.q.Enqueue(f.ctx, j), leaseq.ErrInvalid, "Kind")
			wantErrSays(t, f.q.EnqueueBatch(f.ctx, []leaseq.Job{{ID: "ok"}, j}), leaseq.ErrInvalid, "Kind")
			tx, err := f.db.BeginTx(f.ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantErrSays(t, f.q.EnqueueTx(f.ctx, tx, j), leaseq.ErrInvalid, "Kind")
			tx.Rollback()
			_, err = f.q.List(f.ctx, leaseq.Filter{Kind: kind})
			wantErrSays(t, err, leaseq.ErrInvalid, "Kind")
			f.unchanged(before, "enqueue with Kind "+strings.ToValidUTF8(kind, "?"))
		}
		longest := strings.Repeat("k", leaseq.MaxKindLen)
		f.enqueue(leaseq.Job{ID: "longest", Kind: longest})
		if got := f.get("longest").Kind; got != longest {
			t.Fatalf("kind of %d bytes stored as %q", leaseq.MaxKindLen, got)
		}
	})
}
