package leaseq_test

import (
	"reflect"
	"slices"
	"strings"

	"github.com/leaseq/leaseq"
)

// FuzzQueueModel's ExtendBatch: opExtendBatch, decoded here.

// extendBatch reads a lease, a count and that many claims, each picked and
// forged as opFinishAny does (the same claim may come twice, or two claims
// of one job), and renews them in one ExtendBatch on the current queue. It
// checks the error (a bad lease, or ErrInvalid naming a malformed claim),
// then each ok and each returned claim — its new lease end, or exactly the
// claim given — against the model; the rows are compared after it as after
// every write. A renewed claim joins the claims later calls pick from.
func (r *fuzzRun) extendBatch(in *opReader) {
	lease := fuzzLeases[in.pick(len(fuzzLeases))]
	qi := r.cur
	cs, descs := r.pickBatch(in, 8)
	now := r.clock.Now()
	got, oks, err := r.qs[qi].ExtendBatch(r.ctx, cs, lease)
	ends := make([]string, len(got))
	for i, c := range got {
		ends[i] = relMS(c.LeaseUntil)
	}
	r.step("q%d ExtendBatch(%s, %v) = lease_until=[%s] %v, %v", qi, strings.Join(descs, " "), lease, strings.Join(ends, " "), oks, err)
	want, wantOKs, bad, wantErr := r.m.extendBatch(qi, now, cs, lease)
	switch {
	case errClass(err) != errClass(wantErr):
		r.fail("ExtendBatch: got %v, %v; want %v, %v", oks, err, wantOKs, wantErr)
	case err != nil && len(bad) > 0 && !namesOneOf(err, "claims", map[error][]int{leaseq.ErrInvalid: bad}):
		r.fail("ExtendBatch: got error %v, want one naming claims[i] for i in %v", err, bad)
	case err != nil && slices.Contains(oks, true):
		r.fail("ExtendBatch: got error %v with oks %v, want none renewed", err, oks)
	case err == nil && (!slices.Equal(oks, wantOKs) || len(got) != len(cs)):
		r.fail("ExtendBatch: got %d claims, oks %v; want %d, %v", len(got), oks, len(cs), wantOKs)
	}
	if err != nil {
		return
	}
	for i := range got {
		if g, w, same := sameClaim(got[i], want[i]); !same {
			r.fail("ExtendBatch returned claim %d:\n got  %s\n want %s", i, g, w)
		}
		// Every field sameClaim does not print is the given claim's too.
		g := got[i]
		g.LeaseUntil = cs[i].LeaseUntil
		if !reflect.DeepEqual(g, cs[i]) {
			r.fail("ExtendBatch returned claim %d:\n got  %+v\n want %+v but for LeaseUntil", i, got[i], cs[i])
		}
		if oks[i] {
			r.claims = append(r.claims, heldClaim{got[i], qi})
		}
	}
	for _, c := range cs {
		r.wantRow(qi, c.ID)
	}
}
