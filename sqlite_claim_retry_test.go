package leaseq_test

import (
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: a COMMIT that fails with SQLITE_BUSY while another
// connection reads the file.

// gateClock is a ManualClock whose Now, once armed, stops on its n-th read
// until the test opens the gate, and then returns the time it read before
// stopping. A test uses it to act at a known point inside a call.
type gateClock struct {
	*leaseq.ManualClock
	mu      sync.Mutex
	left    int // reads until the gate; 0: not armed
	reached chan struct{}
	open    chan struct{}
}

// arm makes the n-th read of Now from here on stop at the gate.
func (c *gateClock) arm(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.left, c.reached, c.open = n, make(chan struct{}), make(chan struct{})
}

func (c *gateClock) Now() time.Time {
	now := c.ManualClock.Now()
	c.mu.Lock()
	stop := false
	if c.left > 0 {
		c.left--
		stop = c.left == 0
	}
	reached, open := c.reached, c.open
	c.mu.Unlock()
	if stop {
		close(reached)
		<-open
	}
	return now
}

// TestClaimRolledBackThenIdle: a Claim whose transaction claimed a job but
// could not commit (SQLITE_BUSY at COMMIT, as another connection was
// reading) and whose retry then finds nothing to do returns nothing — never
// the claim from the try that was rolled back. The database never recorded
// that claim: its holder would work on a job that another worker may claim
// with the very same token. Here the retry finds nothing because the clock
// went back below the job's run_at in between, the one way to make it
// happen at a chosen moment; another process claiming the job meanwhile
// does the same. Claim with and without group commit, and ClaimBatch.
func TestClaimRolledBackThenIdle(t *testing.T) {
	for _, tc := range []struct {
		name         string
		group, batch bool
	}{
		{"Claim/group-commit", true, false},
		{"Claim/no-group-commit", false, false},
		{"ClaimBatch", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sqliteEngine, leaseq.Options{})
			f.enqueue(leaseq.Job{ID: "j", Qty: 1, RunAt: ms(100)})
			before := f.snapshot()

			// The claiming queue's *sql.DB has a plain DSN: no busy
			// timeout, so its COMMIT gets SQLITE_BUSY at once while
			// another connection reads.
			db, err := sql.Open("sqlite", "file:"+f.path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			clock := &gateClock{ManualClock: leaseq.NewManualClock(ms(100))}
			q, err := leaseq.New(f.ctx, db, leaseq.Options{Clock: clock, DisableGroupCommit: !tc.group})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()

			// The reader's open transaction holds the lock COMMIT must wait for.
			reader, err := f.db.Conn(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			var n int
			if _, err := reader.ExecContext(f.ctx, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			if err := reader.QueryRowContext(f.ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
				t.Fatal(err)
			}
			defer reader.ExecContext(f.ctx, "ROLLBACK")

			// A Claim reads the clock twice up to its claim: in the idle
			// check, then in the claim transaction, where it stops.
			clock.arm(2)
			type result struct {
				cs  []leaseq.Claim
				err error
			}
			done := make(chan result, 1)
			go func() {
				if tc.batch {
					cs, err := q.ClaimBatch(f.ctx, "A", time.Second, 10)
					done <- result{cs, err}
					return
				}
				c, ok, err := q.Claim(f.ctx, "A", time.Second)
				if ok {
					done <- result{[]leaseq.Claim{c}, err}
					return
				}
				done <- result{nil, err}
			}()
			select {
			case <-clock.reached:
			case r := <-done:
				t.Fatalf("the claim returned (%+v, %v) before its transaction read the clock", r.cs, r.err)
			case <-time.After(10 * time.Second):
				t.Fatal("the claim never reached its transaction")
			}
			clock.Set(ms(50)) // from the retry on, "j" is not due
			close(clock.open)
			select {
			case r := <-done:
				if r.err != nil || len(r.cs) != 0 {
					t.Fatalf("got claims %+v, err %v; want none: the try that claimed %q was rolled back", r.cs, r.err, "j")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the claim did not return")
			}
			f.unchanged(before, "a Claim whose transaction was rolled back")
		})
	}
}
