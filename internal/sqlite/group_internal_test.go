package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leaseq/leaseq/internal/engine"
	"modernc.org/sqlite"
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

// TestGroupLeftCallSaysItWaited: a call taken into a transaction after an
// earlier one it was in met SQLITE_BUSY, and whose context ended before its
// turn came (skipped by runOps) or before the retry (putBack, once the
// committer's own record of the refusal is gone), is answered with an
// error that says it waited for the write lock, matches its context's error
// and the driver's (rule 47 in docs/rules.md). CI once saw a bare "context
// deadline exceeded" from the first window, which no test could force from
// outside.
func TestGroupLeftCallSaysItWaited(t *testing.T) {
	busy := busyError(t)
	for _, how := range []string{"skipped in the transaction", "put back"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			op := &groupOp{ctx: ctx, done: make(chan struct{}), waited: busy,
				run: func(context.Context, engine.Execer) (any, error) {
					t.Fatal("a call whose context ended ran")
					return nil, nil
				}}
			var g group
			if how == "put back" {
				g.putBack([]*groupOp{op})
			} else if err := g.runOps(context.Background(), nil, []*groupOp{op}); err != nil {
				t.Fatal(err)
			}
			var se *sqlite.Error
			switch err := op.err; {
			case err == nil || !strings.Contains(err.Error(), "waiting for the database's write lock"):
				t.Errorf("outcome %v does not say it waited for the write lock", err)
			case !errors.Is(err, context.Canceled):
				t.Errorf("outcome %q does not match the context's error", err)
			case !errors.As(err, &se) || !isBusy(se):
				t.Errorf("outcome %q does not match the driver's SQLITE_BUSY", err)
			}
		})
	}
}

// busyError is a real SQLITE_BUSY: the one BEGIN IMMEDIATE meets while
// another connection holds the write lock, without a busy timeout.
func busyError(t *testing.T) error {
	t.Helper()
	path := "file:" + filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	if !isBusy(err) {
		t.Fatalf("BEGIN IMMEDIATE beside a held write lock: %v, want SQLITE_BUSY", err)
	}
	return err
}
