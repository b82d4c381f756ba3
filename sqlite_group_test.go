package leaseq_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: group commit is SQLite's transaction strategy, and these
// tests hold the file's write lock from another connection.

// lockFromOutside takes the database's write lock from a connection of its
// own, as another process would, and returns the function that releases it.
// Calls made meanwhile pile up in the group-commit list.
func (f *fixture) lockFromOutside() (release func()) {
	f.t.Helper()
	other, err := leaseq.Open(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	conn, err := other.Conn(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := conn.ExecContext(f.ctx, "BEGIN IMMEDIATE"); err != nil {
		f.t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(f.ctx, "ROLLBACK"); err != nil {
				f.t.Error(err)
			}
			conn.Close()
			other.Close()
		})
	}
	f.t.Cleanup(release)
	return release
}

// waitForGroupedCalls waits until n calls are in the group-commit list. It waits
// for goroutines to get there, not for time to pass on the queue's clock.
func (f *fixture) waitForGroupedCalls(n int) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.q.WaitingCalls() < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("%d calls waiting, want %d", f.q.WaitingCalls(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitDuplicateFailsOnlyItsCaller: concurrent Enqueues sharing
// one transaction, two of them with an ID already stored and one with an ID
// another caller also uses. Only the duplicates fail.
func TestGroupCommitDuplicateFailsOnlyItsCaller(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "stored", Qty: 1})
	release := f.lockFromOutside()

	ids := []string{"j0", "stored", "j1", "twin", "j2", "twin", "stored", "j3"}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.q.Enqueue(f.ctx, leaseq.Job{ID: id, Qty: 2})
		}()
	}
	f.waitForGroupedCalls(len(ids)) // all in one group: len(ids) <= MaxGroupOps
	release()
	wg.Wait()

	twins := 0
	for i, id := range ids {
		switch {
		case id == "stored":
			if !errors.Is(errs[i], leaseq.ErrDuplicate) {
				t.Errorf("Enqueue(%q): got %v, want ErrDuplicate", id, errs[i])
			}
		case id == "twin":
			if errs[i] == nil {
				twins++
			} else if !errors.Is(errs[i], leaseq.ErrDuplicate) {
				t.Errorf("Enqueue(%q): got %v, want nil or ErrDuplicate", id, errs[i])
			}
		case errs[i] != nil:
			t.Errorf("Enqueue(%q): got %v, want nil (another call's duplicate must not fail it)", id, errs[i])
		}
	}
	if twins != 1 {
		t.Errorf("two Enqueue(\"twin\"): %d succeeded, want exactly 1", twins)
	}
	for _, id := range []string{"j0", "j1", "j2", "j3", "twin"} {
		f.wantRow(leaseq.State{ID: id, Qty: 2, Status: leaseq.StatusPending, MaxAttempts: 3})
	}
	f.wantRow(leaseq.State{ID: "stored", Qty: 1, Status: leaseq.StatusPending, MaxAttempts: 3})
}

// TestGroupCommitCancelledCallerLeaves: a caller whose context ends while
// its call waits for the lock returns at once with its context's error; the
// others commit, and nothing of the cancelled call is written.
func TestGroupCommitCancelledCallerLeaves(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	release := f.lockFromOutside()

	ctx, cancel := context.WithCancel(f.ctx)
	cancelled := make(chan error, 1)
	go func() { cancelled <- f.q.Enqueue(ctx, leaseq.Job{ID: "gone"}) }()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.q.Enqueue(f.ctx, leaseq.Job{ID: fmt.Sprintf("kept-%d", i)})
		}()
	}
	f.waitForGroupedCalls(len(errs) + 1)
	cancel()
	// The lock is still held: the cancelled caller must not wait for it.
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Enqueue: got %v, want context.Canceled", err)
	}
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Enqueue(kept-%d) beside a cancelled call: %v", i, err)
		}
		f.wantRow(leaseq.State{ID: fmt.Sprintf("kept-%d", i), Status: leaseq.StatusPending, MaxAttempts: 3})
	}
	f.wantNotWritten("gone")
}

// armedClock is a ManualClock that runs arm, once, the next time it is
// read: a way to act at the moment a call's statements run.
type armedClock struct {
	*leaseq.ManualClock
	mu  sync.Mutex
	arm func()
}

func (c *armedClock) Now() time.Time {
	c.mu.Lock()
	f := c.arm
	c.arm = nil
	c.mu.Unlock()
	if f != nil {
		f()
	}
	return c.ManualClock.Now()
}

// TestGroupCommitCallerCancelledAfterRunning: a call whose context ends
// after its statements ran in a shared transaction is not committed, as it
// would not be alone; the other calls of the group commit without it.
func TestGroupCommitCallerCancelledAfterRunning(t *testing.T) {
	clock := &armedClock{ManualClock: leaseq.NewManualClock(t0)}
	f := newFixture(t, sqliteEngine, leaseq.Options{Clock: clock})
	f.clock = clock.ManualClock
	f.enqueueBatch(leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"})
	release := f.lockFromOutside()

	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	gone := make(chan error, 1)
	go func() {
		_, _, err := f.q.Claim(ctx, "X", time.Second)
		gone <- err
	}()
	f.waitForGroupedCalls(1) // X's claim runs first in the group
	var wg sync.WaitGroup
	var kept leaseq.Claim
	var keptErr, enqErr error
	wg.Add(2)
	go func() { defer wg.Done(); kept, _, keptErr = f.q.Claim(f.ctx, "Y", time.Second) }()
	go func() { defer wg.Done(); enqErr = f.q.Enqueue(f.ctx, leaseq.Job{ID: "c"}) }()
	f.waitForGroupedCalls(3)
	clock.mu.Lock()
	clock.arm = cancel // X's claim reads the clock under the lock: cancel it then
	clock.mu.Unlock()
	release()
	wg.Wait()

	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim cancelled while its statements ran: got %v, want context.Canceled", err)
	}
	if keptErr != nil || enqErr != nil {
		t.Fatalf("the other calls of the group: Claim %v, Enqueue %v; want both nil", keptErr, enqErr)
	}
	if kept.ID != "a" || kept.Token != 1 || kept.Owner != "Y" {
		t.Fatalf("Y's claim: got %+v, want a with token 1 (X's claim of a was not committed)", kept)
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusLeased, Owner: "Y", Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(1000)})
	f.wantRow(leaseq.State{ID: "b", Status: leaseq.StatusPending, MaxAttempts: 3})
	f.wantRow(leaseq.State{ID: "c", Status: leaseq.StatusPending, MaxAttempts: 3})
}

// TestGroupCommitFencesEachCall: Finishes of a stale and a current claim of
// one job, and Claims of other jobs, share a transaction; each keeps its
// own fencing.
func TestGroupCommitFencesEachCall(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueueBatch(leaseq.Job{ID: "a"})
	stale := f.at(0).mustClaim("A", time.Second)
	fresh := f.at(1000).mustClaim("B", time.Second)
	if fresh.ID != "a" || fresh.Token != 2 {
		t.Fatalf("1000ms claim: got %+v, want a with token 2", fresh)
	}
	f.enqueueBatch(leaseq.Job{ID: "b"}, leaseq.Job{ID: "c"})
	f.at(1001)
	release := f.lockFromOutside()

	var wg sync.WaitGroup
	finished := make([]bool, 2)
	errs := make(chan error, 4)
	for i, c := range []leaseq.Claim{stale, fresh} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			finished[i], err = f.q.Finish(f.ctx, c)
			errs <- err
		}()
	}
	claims := make(chan leaseq.Claim, 2)
	for _, owner := range []string{"C", "D"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := f.q.Claim(f.ctx, owner, time.Second)
			claims <- c
			errs <- err
		}()
	}
	f.waitForGroupedCalls(4)
	release()
	wg.Wait()
	close(claims)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a call in the group: %v", err)
		}
	}

	if !(finished[0] == false && finished[1] == true) {
		t.Fatalf("Finish(a token 1), Finish(a token 2) in one group: got %v, want [false true]; rows:\n%s", finished, f.dump())
	}
	f.wantRow(leaseq.State{ID: "a", Status: leaseq.StatusDone, Owner: "B", Token: 2, Attempts: 2, MaxAttempts: 3, LeaseUntil: ms(2000)})
	got := map[string]leaseq.Claim{}
	for c := range claims {
		got[c.ID] = c
	}
	for _, id := range []string{"b", "c"} {
		c, ok := got[id]
		if !ok || c.Token != 1 {
			t.Fatalf("two Claims in one group: got %+v, want b and c, each with token 1", got)
		}
		f.wantRow(leaseq.State{ID: id, Status: leaseq.StatusLeased, Owner: c.Owner, Token: 1, Attempts: 1, MaxAttempts: 3, LeaseUntil: ms(2001)})
	}
}

// TestGroupCommitFailureReachesEveryCall: a statement error other than a
// duplicate ends the shared transaction; every call in it gets the error and
// none of them took effect.
func TestGroupCommitFailureReachesEveryCall(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	if _, err := f.db.Exec(`CREATE TRIGGER boom BEFORE INSERT ON leaseq_jobs WHEN NEW.id = 'boom'
		BEGIN SELECT RAISE(ABORT, 'boom refused'); END`); err != nil {
		t.Fatal(err)
	}
	release := f.lockFromOutside()
	ids := []string{"first", "boom", "last"}
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.q.Enqueue(f.ctx, leaseq.Job{ID: id})
		}()
	}
	f.waitForGroupedCalls(len(ids))
	release()
	wg.Wait()
	for i, err := range errs {
		if err == nil || errors.Is(err, leaseq.ErrDuplicate) {
			t.Errorf("Enqueue(%q) in the failed group: got %v, want the transaction's error", ids[i], err)
		}
	}
	f.wantNotWritten(ids...)
	f.enqueue(leaseq.Job{ID: "after"}) // the queue still works
}

// TestGroupCommitBoundedGroups: more calls than fit in one transaction all
// commit, each exactly once.
func TestGroupCommitBoundedGroups(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	n := leaseq.MaxGroupOps + 10
	release := f.lockFromOutside()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.q.Enqueue(f.ctx, leaseq.Job{ID: fmt.Sprintf("j%d", i), Qty: i})
		}()
	}
	f.waitForGroupedCalls(n)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Enqueue(j%d): %v", i, err)
		}
	}
	cs := f.claimBatch("A", time.Second, 2*n)
	if len(cs) != n {
		t.Fatalf("ClaimBatch after %d Enqueues: got %d jobs, want %d", n, len(cs), n)
	}
}

// TestNoGroupCommit: with group commit off, concurrent calls still keep
// their own outcomes.
func TestNoGroupCommit(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{DisableGroupCommit: true})
	f.enqueue(leaseq.Job{ID: "stored"})
	var wg sync.WaitGroup
	ids := []string{"x", "stored", "y"}
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.q.Enqueue(f.ctx, leaseq.Job{ID: id})
		}()
	}
	wg.Wait()
	if errs[0] != nil || !errors.Is(errs[1], leaseq.ErrDuplicate) || errs[2] != nil {
		t.Fatalf("Enqueue(x, stored, y): got %v, want [nil ErrDuplicate nil]", errs)
	}
	if f.q.WaitingCalls() != 0 {
		t.Fatalf("group commit is off, yet calls wait in its list")
	}
	c := f.at(0).mustClaim("A", time.Second)
	if !f.at(999).finish(c) {
		t.Fatalf("Finish at 999ms with group commit off: got false, want true")
	}
}
