package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The service's transactions (rules 43–47 in docs/rules.md): InTx and
// FinishTx on both engines. The service's own table here is orders; the
// queue's tables are compared whole with snapshot, the orders table by its
// rows.

// createOrders makes the service's own table on the fixture's database.
func (f *fixture) createOrders() {
	f.t.Helper()
	if _, err := f.db.Exec(`CREATE TABLE orders (id TEXT PRIMARY KEY, note TEXT NOT NULL)`); err != nil {
		f.t.Fatal(err)
	}
}

// orders lists the IDs in the orders table, in order.
func (f *fixture) orders() string {
	f.t.Helper()
	rows, err := f.db.Query(`SELECT id FROM orders ORDER BY id`)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return strings.Join(ids, ",")
}

// placeOrder is an InTx or FinishTx function that writes order id and
// enqueues job jobID (none if "").
func (f *fixture) placeOrder(id, jobID string) func(ctx context.Context, tx leaseq.Tx) error {
	return func(ctx context.Context, tx leaseq.Tx) error {
		if _, err := tx.ExecContext(ctx, f.e.rebind(`INSERT INTO orders (id, note) VALUES (?1, ?2)`), id, "placed"); err != nil {
			return err
		}
		if jobID == "" {
			return nil
		}
		return tx.Enqueue(ctx, leaseq.Job{ID: jobID})
	}
}

func TestInTxCommitsRowsAndJobsTogether(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		if err := f.q.InTx(f.ctx, f.placeOrder("o1", "ship-o1")); err != nil {
			t.Fatal(err)
		}
		if got := f.orders(); got != "o1" {
			t.Fatalf("orders %q, want o1", got)
		}
		f.wantRow(leaseq.State{ID: "ship-o1", Status: leaseq.StatusPending, MaxAttempts: 3, EnqueuedAt: ms(0), UpdatedAt: ms(0)})
		c := f.mustClaim("w", time.Second)
		if c.ID != "ship-o1" {
			t.Fatalf("claimed %q", c.ID)
		}
	})
}

func TestInTxFnErrorKeepsNothing(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "before"})
		before := f.snapshot()
		boom := errors.New("boom")
		err := f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if err := f.placeOrder("o1", "ship-o1")(ctx, tx); err != nil {
				return err
			}
			return boom
		})
		if err != boom {
			t.Fatalf("InTx = %v, want fn's error itself", err)
		}
		f.unchanged(before, "InTx whose fn failed")
		if got := f.orders(); got != "" {
			t.Fatalf("orders %q after fn's error, want none", got)
		}
		// A failed statement of fn's own, returned: the same.
		err = f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if err := tx.Enqueue(ctx, leaseq.Job{ID: "j"}); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO no_such_table VALUES (1)")
			return err
		})
		if err == nil {
			t.Fatal("InTx with a failed statement returned nil")
		}
		f.unchanged(before, "InTx whose statement failed")
		// The queue works on after both.
		if err := f.q.InTx(f.ctx, f.placeOrder("o2", "ship-o2")); err != nil {
			t.Fatal(err)
		}
		if got := f.orders(); got != "o2" {
			t.Fatalf("orders %q, want o2", got)
		}
	})
}

func TestInTxEnqueueErrorsAsEnqueueTx(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "taken"})
		err := f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
			if err := tx.Enqueue(ctx, leaseq.Job{ID: "a"}, leaseq.Job{ID: "taken"}); !errors.Is(err, leaseq.ErrDuplicate) ||
				!strings.Contains(err.Error(), `jobs[1] "taken"`) {
				return fmt.Errorf("duplicate: %v", err)
			}
			if err := tx.Enqueue(ctx, leaseq.Job{ID: "b", Qty: -1}); !errors.Is(err, leaseq.ErrInvalid) ||
				!strings.Contains(err.Error(), "jobs[0]") {
				return fmt.Errorf("invalid: %v", err)
			}
			// After both, the transaction goes on, and keeps this.
			return f.placeOrder("o1", "ship-o1")(ctx, tx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Get(f.ctx, "a"); !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatalf("job a of the refused call: %v, want not found", err)
		}
		f.get("ship-o1")
		if got := f.orders(); got != "o1" {
			t.Fatalf("orders %q, want o1", got)
		}
	})
}

// TestInTxGroupOneFnFails: InTx calls that arrive together (on SQLite, one
// shared commit: they queue up behind a call that holds the writer's turn)
// each keep their own outcome; the one whose fn fails leaves nothing.
func TestInTxGroupOneFnFails(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		const n = 8
		hold, holding := make(chan struct{}), make(chan struct{})
		blocker := make(chan error, 1)
		go func() {
			blocker <- f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
				close(holding)
				<-hold
				return f.placeOrder("o0", "")(ctx, tx)
			})
		}()
		<-holding
		boom := errors.New("boom")
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := 1; i <= n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i-1] = f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
					if err := f.placeOrder(fmt.Sprintf("o%d", i), fmt.Sprintf("j%d", i))(ctx, tx); err != nil {
						return err
					}
					if i == 3 {
						return boom
					}
					return nil
				})
			}()
		}
		if e.name == "sqlite" {
			waitUntil(t, 10*time.Second, "the calls to queue up", func() bool { return f.q.WaitingCalls() == n })
		}
		close(hold)
		wg.Wait()
		if err := <-blocker; err != nil {
			t.Fatal(err)
		}
		for i, err := range errs {
			if want := error(nil); i == 2 {
				if err != boom {
					t.Errorf("call %d: %v, want its fn's error", i+1, err)
				}
			} else if err != want {
				t.Errorf("call %d: %v", i+1, err)
			}
		}
		if got, want := f.orders(), "o0,o1,o2,o4,o5,o6,o7,o8"; got != want {
			t.Fatalf("orders %q, want %q", got, want)
		}
		st, err := f.q.Stats(f.ctx)
		if err != nil || st.Pending != n-1 {
			t.Fatalf("stats %s %v, want %d pending", fmtStats(st), err, n-1)
		}
	})
}

// TestInTxRetriedWhole: a transaction that fails as a whole is run again,
// fn with it, and commits once. On SQLite a reader holds the file's shared
// lock, so the COMMIT gets SQLITE_BUSY (the database is opened without a
// busy timeout, so at once) until it lets go; on PostgreSQL fn's first
// run meets a serialization failure.
func TestInTxRetriedWhole(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		var runs atomic.Int32
		release := func() {}
		if e.name == "sqlite" {
			db, err := sql.Open("sqlite", f.path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q, err := leaseq.New(f.ctx, db, leaseq.Options{Clock: f.clock})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			f.q = q
			reader, err := db.Begin() // deferred: Open's DSN would begin IMMEDIATE
			if err != nil {
				t.Fatal(err)
			}
			rows, err := reader.Query("SELECT id FROM leaseq_jobs")
			if err != nil {
				t.Fatal(err)
			}
			rows.Next()
			release = func() { rows.Close(); reader.Rollback() }
			defer release()
		}
		ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
		defer cancel()
		err := f.q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
			n := runs.Add(1)
			if err := f.placeOrder("o1", "ship-o1")(ctx, tx); err != nil {
				return err
			}
			switch {
			case e.name == "postgres" && n == 1:
				_, err := tx.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION 'made up' USING ERRCODE = 'serialization_failure'; END $$`)
				return err
			case e.name == "sqlite" && n == 3:
				release() // two tries met the reader: let the third commit
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if min := int32(2); runs.Load() < min {
			t.Fatalf("fn ran %d times, want at least %d", runs.Load(), min)
		}
		if got := f.orders(); got != "o1" {
			t.Fatalf("orders %q, want o1 once", got)
		}
		f.get("ship-o1")
	})
}

// TestInTxOtherCallsRefused: inside fn, every Queue call made with fn's
// ctx, of this queue or another, is ErrInvalid at once (rule 44) — on
// SQLite it would wait for the turn fn holds, for ever.
func TestInTxOtherCallsRefused(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "x"})
		other := f.queue("other")
		calls := map[string]func(ctx context.Context) error{
			"Enqueue":       func(ctx context.Context) error { return f.q.Enqueue(ctx, leaseq.Job{ID: "y"}) },
			"other Enqueue": func(ctx context.Context) error { return other.Enqueue(ctx, leaseq.Job{ID: "y"}) },
			"Claim":         func(ctx context.Context) error { _, _, err := f.q.Claim(ctx, "w", time.Second); return err },
			"Get":           func(ctx context.Context) error { _, err := f.q.Get(ctx, "x"); return err },
			"Stats":         func(ctx context.Context) error { _, err := f.q.Stats(ctx); return err },
			"InTx": func(ctx context.Context) error {
				return f.q.InTx(ctx, func(context.Context, leaseq.Tx) error { return nil })
			},
			"EnqueueTx": func(ctx context.Context) error { return f.q.EnqueueTx(ctx, nil, leaseq.Job{ID: "y"}) },
			"Work": func(ctx context.Context) error {
				return f.q.Work(ctx, leaseq.WorkerOptions{Owner: "w"}, func(context.Context, leaseq.Claim) error { return nil })
			},
		}
		c := f.mustClaim("w", time.Minute)
		before := f.snapshot()
		for _, run := range []struct {
			name string
			call func(fn func(ctx context.Context, tx leaseq.Tx) error) error
		}{
			{"InTx", func(fn func(ctx context.Context, tx leaseq.Tx) error) error { return f.q.InTx(f.ctx, fn) }},
			{"FinishTx", func(fn func(ctx context.Context, tx leaseq.Tx) error) error {
				_, err := f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
					if err := fn(ctx, tx); err != nil {
						return err
					}
					return errors.New("keep the job leased")
				})
				return err
			}},
		} {
			for name, call := range calls {
				answered := make(chan error, 1)
				go func() {
					answered <- run.call(func(ctx context.Context, _ leaseq.Tx) error {
						ctx = context.WithValue(ctx, struct{}{}, "derived") // a context derived from fn's
						if err := call(ctx); !errors.Is(err, leaseq.ErrInvalid) || !strings.Contains(err.Error(), run.name) {
							return fmt.Errorf("%s: %v, want ErrInvalid naming %s", name, err, run.name)
						}
						return nil
					})
				}()
				if err := waitWithin(t, answered, 10*time.Second, run.name+" calling "+name); err != nil && err.Error() != "keep the job leased" {
					t.Error(err)
				}
			}
		}
		f.unchanged(before, "the refused calls")
		// Outside fn, the same calls work.
		if err := f.q.Enqueue(f.ctx, leaseq.Job{ID: "y"}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInTxInvalid(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.enqueue(leaseq.Job{ID: "x"})
		c := f.mustClaim("w", time.Minute)
		before := f.snapshot()
		ran := false
		fn := func(context.Context, leaseq.Tx) error { ran = true; return nil }
		for name, err := range map[string]error{
			"InTx nil fn":           f.q.InTx(f.ctx, nil),
			"InTx nil ctx":          f.q.InTx(nil, fn), //nolint:staticcheck // the refusal is the point
			"FinishTx nil fn":       second(f.q.FinishTx(f.ctx, c, nil)),
			"FinishTx zero Claim":   second(f.q.FinishTx(f.ctx, leaseq.Claim{}, fn)),
			"FinishTx token 0":      second(f.q.FinishTx(f.ctx, leaseq.Claim{ID: "x", Owner: "w"}, fn)),
			"FinishTx nil ctx":      second(f.q.FinishTx(nil, c, fn)), //nolint:staticcheck
			"Tx.Enqueue of a job 0": f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error { return tx.Enqueue(ctx, leaseq.Job{}) }),
		} {
			if !errors.Is(err, leaseq.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if ran {
			t.Fatal("fn ran for a refused call")
		}
		f.unchanged(before, "the invalid calls")
	})
}

// second is the error of a call that answers (bool, error).
func second(_ bool, err error) error { return err }

func TestInTxPanicRollsBackAndRaises(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		before := f.snapshot()
		func() {
			defer func() {
				if v := recover(); v != "fn panicked" {
					t.Fatalf("recovered %v, want fn's panic value", v)
				}
			}()
			f.q.InTx(f.ctx, func(ctx context.Context, tx leaseq.Tx) error {
				f.placeOrder("o1", "ship-o1")(ctx, tx)
				panic("fn panicked")
			})
		}()
		f.unchanged(before, "InTx whose fn panicked")
		if got := f.orders(); got != "" {
			t.Fatalf("orders %q, want none", got)
		}
		// The writer's turn was given back.
		if err := f.q.InTx(f.ctx, f.placeOrder("o2", "")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestFinishTxFence: FinishTx before, at and after the lease's end, with
// the fence checked before fn (fn not run) and judged again after it.
func TestFinishTxFence(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "x"})
		c := f.mustClaim("A", time.Second) // lease_until = 1000ms
		ran := 0
		fn := func(ctx context.Context, tx leaseq.Tx) error {
			ran++
			return f.placeOrder(fmt.Sprintf("o%d", ran), fmt.Sprintf("next-%d", ran))(ctx, tx)
		}
		// Refused before fn: fn is not run.
		before := f.snapshot()
		for _, bad := range []struct {
			why string
			c   leaseq.Claim
			at  int64
		}{
			{"lease ended exactly now", c, 1000},
			{"lease ended", c, 1500},
			{"stale token", func() leaseq.Claim { d := c; d.Token++; return d }(), 10},
			{"wrong owner", func() leaseq.Claim { d := c; d.Owner = "B"; return d }(), 10},
			{"unknown ID", func() leaseq.Claim { d := c; d.ID = "nope"; return d }(), 10},
			{"another queue's claim", func() leaseq.Claim { d := c; d.Queue = "other"; return d }(), 10},
		} {
			f.at(bad.at)
			ok, err := f.q.FinishTx(f.ctx, bad.c, fn)
			if ok || err != nil || ran != 0 {
				t.Fatalf("%s: %v %v, fn ran %d times; want false, nil, fn not run", bad.why, ok, err, ran)
			}
			f.unchanged(before, "FinishTx refused: "+bad.why)
		}
		// Refused after fn: the lease ends while fn runs.
		f.at(500)
		ok, err := f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			err := fn(ctx, tx)
			f.at(1000)
			return err
		})
		if ok || err != nil || ran != 1 {
			t.Fatalf("lease ended during fn: %v %v (fn ran %d); want false, nil", ok, err, ran)
		}
		f.unchanged(before, "FinishTx refused after fn")
		if got := f.orders(); got != "" {
			t.Fatalf("orders %q after a refused FinishTx, want none", got)
		}
		// fn's error: the job stays leased, nothing written.
		f.at(500)
		boom := errors.New("boom")
		ok, err = f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			fn(ctx, tx)
			return boom
		})
		if ok || err != boom {
			t.Fatalf("fn's error: %v %v; want false and fn's error", ok, err)
		}
		f.unchanged(before, "FinishTx whose fn failed")
		// Accepted with the lease ending 1ms after fn: the rows, the next
		// job and the finish are all there.
		f.at(500)
		ok, err = f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			err := fn(ctx, tx)
			f.at(999)
			return err
		})
		if !ok || err != nil {
			t.Fatalf("FinishTx at 999ms: %v %v; want accepted", ok, err)
		}
		f.wantRow(leaseq.State{ID: "x", Status: leaseq.StatusDone, Owner: "A", Token: 1, Attempts: 1, MaxAttempts: 3,
			LeaseUntil: ms(1000), EnqueuedAt: ms(0), UpdatedAt: ms(999)})
		f.wantRow(leaseq.State{ID: "next-3", Status: leaseq.StatusPending, MaxAttempts: 3, EnqueuedAt: ms(500), UpdatedAt: ms(500)})
		if got := f.orders(); got != "o3" {
			t.Fatalf("orders %q, want o3 alone", got)
		}
		// Finished: refused before fn from now on.
		done := f.snapshot()
		if ok, err := f.q.FinishTx(f.ctx, c, fn); ok || err != nil || ran != 3 {
			t.Fatalf("FinishTx of a done job: %v %v (fn ran %d)", ok, err, ran)
		}
		f.unchanged(done, "FinishTx of a done job")
	})
}

// TestFinishTxDeadline: the deadline is a boundary of the fence too, judged
// after fn.
func TestFinishTxDeadline(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "x", Deadline: ms(800)})
		c := f.mustClaim("A", time.Second) // lease_until = min(1000, 800)
		before := f.snapshot()
		ok, err := f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			f.at(800)
			return f.placeOrder("o1", "")(ctx, tx)
		})
		if ok || err != nil {
			t.Fatalf("deadline reached during fn: %v %v", ok, err)
		}
		f.unchanged(before, "FinishTx past the deadline")
		f.at(0)
		ok, err = f.q.FinishTx(f.ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
			f.at(799)
			return f.placeOrder("o1", "")(ctx, tx)
		})
		if !ok || err != nil || f.orders() != "o1" {
			t.Fatalf("1ms before the deadline: %v %v, orders %q", ok, err, f.orders())
		}
	})
}

// TestFinishTxRefusedAfterAnotherClaim: a worker whose lease ended and
// whose job another worker claimed never commits its business writes.
func TestFinishTxRefusedAfterAnotherClaim(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		f.createOrders()
		f.enqueue(leaseq.Job{ID: "x"})
		a := f.mustClaim("A", time.Second)
		f.at(1000)
		b := f.mustClaim("B", time.Second)
		before := f.snapshot()
		ranA := false
		if ok, err := f.q.FinishTx(f.ctx, a, func(ctx context.Context, tx leaseq.Tx) error {
			ranA = true
			return f.placeOrder("by-A", "")(ctx, tx)
		}); ok || err != nil || ranA {
			t.Fatalf("A: %v %v (fn ran: %v)", ok, err, ranA)
		}
		f.unchanged(before, "A's late FinishTx")
		if ok, err := f.q.FinishTx(f.ctx, b, f.placeOrder("by-B", "")); !ok || err != nil {
			t.Fatalf("B: %v %v", ok, err)
		}
		if got := f.orders(); got != "by-B" {
			t.Fatalf("orders %q, want by-B alone", got)
		}
	})
}

// TestFinishTxReadOnly: a read-only queue refuses both calls before fn.
func TestFinishTxReadOnly(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		ro, err := leaseq.New(f.ctx, f.db, leaseq.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		ran := false
		fn := func(context.Context, leaseq.Tx) error { ran = true; return nil }
		if err := ro.InTx(f.ctx, fn); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("InTx: %v", err)
		}
		if _, err := ro.FinishTx(f.ctx, leaseq.Claim{ID: "x", Owner: "w", Token: 1}, fn); !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("FinishTx: %v", err)
		}
		if ran {
			t.Fatal("fn ran on a read-only queue")
		}
	})
}

// TestTxAfterFnReturned: a Tx kept past its function is done.
func TestTxAfterFnReturned(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		var kept leaseq.Tx
		if err := f.q.InTx(f.ctx, func(_ context.Context, tx leaseq.Tx) error { kept = tx; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := kept.ExecContext(f.ctx, "SELECT 1"); !errors.Is(err, sql.ErrTxDone) {
			t.Fatalf("Exec after fn returned: %v, want sql.ErrTxDone", err)
		}
		var one int
		if err := kept.QueryRowContext(f.ctx, "SELECT 1").Scan(&one); err == nil {
			t.Fatal("QueryRow after fn returned scanned a row")
		}
		cancelled, cancel := context.WithCancel(f.ctx)
		cancel()
		if err := f.q.InTx(f.ctx, func(_ context.Context, tx leaseq.Tx) error {
			if err := tx.QueryRowContext(cancelled, "SELECT 1").Scan(&one); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("QueryRow on an ended context: %v", err)
			}
			_, err := tx.ExecContext(cancelled, "SELECT 1")
			if !errors.Is(err, context.Canceled) {
				return fmt.Errorf("Exec on an ended context: %v", err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := kept.Enqueue(f.ctx, leaseq.Job{ID: "late"}); !errors.Is(err, sql.ErrTxDone) {
			t.Fatalf("Enqueue after fn returned: %v, want sql.ErrTxDone", err)
		}
		if _, err := f.q.Get(f.ctx, "late"); !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatalf("late job: %v", err)
		}
	})
}

// TestInTxCtxAfterFn: a context fn kept (or derived from its own) is no
// longer refused once fn returned: the transaction it marked has ended.
func TestInTxCtxAfterFn(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		var kept context.Context
		if err := f.q.InTx(f.ctx, func(ctx context.Context, _ leaseq.Tx) error {
			kept = context.WithValue(ctx, struct{}{}, "derived")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := f.q.Enqueue(kept, leaseq.Job{ID: "after"}); err != nil {
			t.Fatalf("Enqueue with fn's context after fn returned: %v", err)
		}
		if err := f.q.InTx(kept, func(context.Context, leaseq.Tx) error { return nil }); err != nil {
			t.Fatalf("InTx with fn's context after fn returned: %v", err)
		}
		if f.get("after").Status != leaseq.StatusPending {
			t.Fatalf("rows:\n%s", f.dump())
		}
	})
}

// TestInTxSlowStatementCtx: a statement of fn that would run for ever
// ends when the call's context does, on both engines, and the calls that
// shared SQLite's transaction with it are written all the same; nothing
// of the InTx is. Before, SQLite ran fn's statements on the shared
// transaction's context, and a 500 ms context returned after the
// statement finished (10–18 s for a billion rows; never for this one).
func TestInTxSlowStatementCtx(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
		defer cancel()
		besides := make(chan error, 20)
		answer := make(chan error, 1)
		for i := range cap(besides) { // beside it, some in its group
			go func() { besides <- f.q.Enqueue(f.ctx, leaseq.Job{ID: fmt.Sprintf("beside-%d", i)}) }()
		}
		go func() {
			answer <- f.q.InTx(ctx, func(ctx context.Context, tx leaseq.Tx) error {
				if err := tx.Enqueue(ctx, leaseq.Job{ID: "inside"}); err != nil {
					return err
				}
				var n int64
				return tx.QueryRowContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`).Scan(&n)
			})
		}()
		select {
		case err := <-answer:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("InTx answered %v, want its context's deadline", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("InTx had not answered 30 s after its 300 ms context ended")
		}
		for range cap(besides) {
			if err := <-besides; err != nil {
				t.Fatalf("an Enqueue beside the InTx: %v", err)
			}
		}
		if _, err := f.q.Get(f.ctx, "inside"); !errors.Is(err, leaseq.ErrNotFound) {
			t.Fatalf("the InTx's own job: %v, want ErrNotFound\n%s", err, f.dump())
		}
		for i := range cap(besides) {
			f.get(fmt.Sprintf("beside-%d", i))
		}
	})
}
