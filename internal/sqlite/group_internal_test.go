package sqlite

import (
	"context"
	"testing"

	"github.com/leaseq/leaseq/internal/engine"
)

// TestGroupIdleCallJoinsNoTransactionUnasked: a call with an idle check
// (a Claim) that reaches the group-commit list after the committer asked
// the idle checks, while the shared transaction begins, is not taken into
// that transaction: it waits to be asked. Asked and found idle, it is
// answered without any transaction; found busy, it joins the next one. A
// call without an idle check (an Enqueue) is taken at once. Before, 32
// goroutines polling an idle queue rode along in their writers' shared
// transactions and ran a whole claim there each time, slowing those writers
// (bench/, idle mode).
func TestGroupIdleCallJoinsNoTransactionUnasked(t *testing.T) {
	ctx := context.Background()
	answer := map[string]bool{} // idleKey → idle
	check := func(key string) idleFunc {
		return func(context.Context, engine.Execer) (bool, error) { return answer[key], nil }
	}
	newOp := func(idle idleFunc, key any) *groupOp {
		return &groupOp{ctx: ctx, idle: idle, idleKey: key, done: make(chan struct{})}
	}
	var g group
	enqueue := newOp(nil, nil)
	idleClaim := newOp(check("empty"), "empty")
	busyClaim := newOp(check("full"), "full")
	g.waiting = []*groupOp{idleClaim, enqueue, busyClaim}

	// The claims arrived after the committer asked: only the enqueue goes.
	if !g.hasReady() {
		t.Fatal("hasReady: got false with an Enqueue waiting")
	}
	if got := g.takeReady(); len(got) != 1 || got[0] != enqueue {
		t.Fatalf("takeReady before the idle checks: got %d calls, want the Enqueue alone", len(got))
	}
	if len(g.waiting) != 2 || g.waiting[0] != idleClaim || g.waiting[1] != busyClaim {
		t.Fatalf("the unasked claims did not keep their places: %d waiting", len(g.waiting))
	}
	if g.hasReady() {
		t.Fatal("hasReady: got true with only unasked claims waiting; a transaction would begin for nothing")
	}

	// Asked: the idle one is answered at once, the busy one may join.
	answer["empty"], answer["full"] = true, false
	n, err := g.answerIdle(ctx, nil)
	if err != nil || n != 1 {
		t.Fatalf("answerIdle: answered %d, err %v; want 1, nil", n, err)
	}
	select {
	case <-idleClaim.done:
	default:
		t.Fatal("the idle claim was not answered")
	}
	if got := g.takeReady(); len(got) != 1 || got[0] != busyClaim {
		t.Fatalf("takeReady after the idle checks: got %d calls, want the busy claim alone", len(got))
	}
	if len(g.waiting) != 0 {
		t.Fatalf("%d calls still waiting, want none", len(g.waiting))
	}
}
