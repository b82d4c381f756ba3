package leaseq_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// The pool's batched writes (rule 48 in docs/rules.md): one heartbeat
// write per interval for all its running handlers, a refused extension in
// that write ending its handler alone, and lease ends kept in one timer
// structure that fires exactly at LeaseUntil by the queue's clock.

// leaseEnds reads the lease end of every leased job of q, by ID.
func leaseEnds(t *testing.T, q *leaseq.Queue) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	after := ""
	for {
		page, err := q.List(context.Background(), leaseq.Filter{Status: leaseq.StatusLeased, AfterID: after, Limit: leaseq.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page {
			out[s.ID] = s.LeaseUntil
		}
		if len(page) < leaseq.MaxListLimit {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// sqliteCommits reads the file change counter of the SQLite file at path
// through a connection of its own: every committed write transaction
// advances it by one.
func sqliteCommits(t *testing.T, db *sql.DB) uint32 {
	t.Helper()
	var b []byte
	if err := db.QueryRow("SELECT substr(data, 25, 4) FROM sqlite_dbpage WHERE pgno = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(b)
}

// TestWorkHeartbeatOneWrite: 200 handlers running, every heartbeat extends
// all their leases in one write: at every look all 200 leases end at the
// same instant, the instant of that one transaction, and it moves on; on
// SQLite the file's change counter advances by at most one commit per
// interval, not 200.
func TestWorkHeartbeatOneWrite(t *testing.T) { forEnginesInTurn(t, testWorkHeartbeatOneWrite) }

func testWorkHeartbeatOneWrite(t *testing.T, eng testEngine) {
	const n = 200
	const heartbeat = 100 * time.Millisecond
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	var jobs []leaseq.Job
	for i := range n {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("j%03d", i)})
	}
	if err := q.EnqueueBatch(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: n, Lease: 3 * time.Second, Heartbeat: heartbeat},
		func(ctx context.Context, c leaseq.Claim) error {
			started.Done()
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	waitFor(t, waitGroupDone(&started), "200 handlers to start")
	var counter *sql.DB
	if eng.name == "sqlite" {
		counter = eng.open(t, path)
	}
	var commits0 uint32
	if counter != nil {
		commits0 = sqliteCommits(t, counter)
	}
	begin := time.Now()
	seen := map[time.Time]bool{}
	for len(seen) < 4 {
		ends := leaseEnds(t, q)
		if len(ends) != n {
			t.Fatalf("%d jobs leased, want %d", len(ends), n)
		}
		var first time.Time
		for id, end := range ends {
			if first.IsZero() {
				first = end
			}
			if !end.Equal(first) {
				t.Fatalf("lease of %s ends at %v, another's at %v: the leases were not extended in one write", id, end, first)
			}
		}
		seen[first] = true
		if time.Since(begin) > 30*time.Second {
			t.Fatalf("the leases' end moved %d times in 30s, want 3 heartbeats", len(seen)-1)
		}
		time.Sleep(heartbeat / 4) // a look between heartbeats, not a wait for one
	}
	if counter != nil {
		elapsed := time.Since(begin)
		commits := sqliteCommits(t, counter) - commits0
		if most := uint32(elapsed/heartbeat) + 2; commits > most {
			t.Fatalf("%d commits in %v of heartbeats every %v for %d handlers, want at most %d", commits, elapsed, heartbeat, n, most)
		}
		t.Logf("%d commits in %v, heartbeats every %v, %d handlers", commits, elapsed, heartbeat, n)
	}
	close(release)
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
}

// waitGroupDone is closed once wg is done.
func waitGroupDone(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// TestWorkRefusedExtensionEndsOneHandler: of three running handlers, the
// one whose job is taken from it by hand (SQL that announces nothing) is
// ended with ErrLeaseLost, by the refusal of its claim in the batch (or,
// on SQLite, by the check the file's change wakes); the two others keep
// running, and their leases go on being extended.
func TestWorkRefusedExtensionEndsOneHandler(t *testing.T) {
	forEnginesInTurn(t, testWorkRefusedExtensionEndsOneHandler)
}

func testWorkRefusedExtensionEndsOneHandler(t *testing.T, eng testEngine) {
	q := realQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "a"}, leaseq.Job{ID: "b"}, leaseq.Job{ID: "c"})
	sink, logger := newLogSink()
	var started sync.WaitGroup
	started.Add(3)
	type ending struct {
		id    string
		cause error
	}
	ended := make(chan ending, 3)
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 3, Lease: 10 * time.Second, Heartbeat: 50 * time.Millisecond, DrainTimeout: 50 * time.Millisecond, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			started.Done()
			<-ctx.Done()
			ended <- ending{c.ID, context.Cause(ctx)}
			return nil
		})
	waitFor(t, waitGroupDone(&started), "three handlers to start")
	if _, err := q.DB().Exec("UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = 'by hand' WHERE id = 'b'"); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, ended, "a handler's context to end")
	if got.id != "b" || !errors.Is(got.cause, leaseq.ErrLeaseLost) {
		t.Fatalf("handler of %s ended with %v; want b's, ErrLeaseLost", got.id, got.cause)
	}
	refused := func(e logEntry) bool {
		return record(slog.LevelWarn, "extension refused", "b")(e) || eng.name == "sqlite" && record(slog.LevelWarn, "taken from its handler", "b")(e)
	}
	sink.waitFor(t, "b's refusal at Warn", refused)
	before := leaseEnds(t, q)
	waitUntil(t, 10*time.Second, "a and c's leases to be extended again", func() bool {
		after := leaseEnds(t, q)
		return after["a"].After(before["a"]) && after["c"].After(before["c"])
	})
	select {
	case e := <-ended:
		t.Fatalf("handler of %s ended too (%v); want only b's", e.id, e.cause)
	default:
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestWorkLeaseEndAtLeaseUntil: on a ManualClock, the handler's context
// ends when the clock reaches its claim's LeaseUntil, not 1 ms before, and
// with ErrLeaseLost; the handler of a later lease runs on.
func TestWorkLeaseEndAtLeaseUntil(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		f := newFixture(t, e, leaseq.Options{})
		type run struct {
			c     leaseq.Claim
			ended chan error
		}
		runs := make(chan run, 2)
		// The heartbeats (every 30 minutes) never come; nothing but the
		// clock ends a lease.
		opts := leaseq.WorkerOptions{Owner: "w", Concurrency: 2, Lease: time.Hour, Heartbeat: 30 * time.Minute, PollInterval: time.Hour, DrainTimeout: 10 * time.Millisecond}
		runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			r := run{c, make(chan error, 1)}
			runs <- r
			<-ctx.Done()
			r.ended <- context.Cause(ctx)
			return nil
		})
		f.enqueue(leaseq.Job{ID: "a"})
		a := waitFor(t, runs, "a's handler to start")
		f.clock.Set(a.c.LeaseUntil.Add(-time.Millisecond))
		// b is claimed after the clock moved: its cycle began after the
		// loop compared a's lease end with the clock at 1 ms before it.
		f.enqueue(leaseq.Job{ID: "b"})
		b := waitFor(t, runs, "b's handler to start")
		select {
		case err := <-a.ended:
			t.Fatalf("a's context ended (%v) 1 ms before its LeaseUntil", err)
		default:
		}
		f.clock.Set(a.c.LeaseUntil)
		if err := waitFor(t, a.ended, "a's context to end at its LeaseUntil"); !errors.Is(err, leaseq.ErrLeaseLost) {
			t.Fatalf("a's cause %v, want ErrLeaseLost", err)
		}
		select {
		case err := <-b.ended:
			t.Fatalf("b's context ended (%v) before its LeaseUntil %v", err, b.c.LeaseUntil)
		default:
		}
	})
}

// TestWorkLeaseEndMovedDuringCheck: a ManualClock that moves onto a lease
// end just after the pool's loop read it to look for ended leases (and
// found none) still ends that handler at once, with ErrLeaseLost: the loop
// waits for the clock's next move as of before that read. A loop that took
// it after the read waited on for a move that had come already
// (TestWorkLeaseEndAtLeaseUntil's handler ran on for 20 s once, under
// -race -count=20).
func TestWorkLeaseEndMovedDuringCheck(t *testing.T) {
	forEnginesInTurn(t, func(t *testing.T, e testEngine) {
		clock := leaseq.NewLeaseCheckRacer(t0)
		f := newFixture(t, e, leaseq.Options{Clock: clock})
		started, ended := make(chan leaseq.Claim, 1), make(chan error, 1)
		// Nothing but the clock ends the lease: no heartbeat, no poll.
		opts := leaseq.WorkerOptions{Owner: "w", Lease: time.Hour, Heartbeat: 30 * time.Minute, PollInterval: time.Hour, DrainTimeout: 10 * time.Millisecond}
		runWork(t, f.q, opts, func(ctx context.Context, c leaseq.Claim) error {
			started <- c
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil
		})
		f.enqueue(leaseq.Job{ID: "a"})
		a := waitFor(t, started, "a's handler to start")
		waitLoopWaits(t)
		clock.MoveAfterLeaseCheck(a.LeaseUntil)
		clock.Set(a.LeaseUntil.Add(-time.Millisecond)) // wakes the loop, which looks at its lease ends
		if err := waitFor(t, ended, "a's context to end once the clock moved onto its LeaseUntil"); !errors.Is(err, leaseq.ErrLeaseLost) {
			t.Fatalf("a's cause %v, want ErrLeaseLost", err)
		}
		if !clock.Moved() {
			t.Fatal("the clock did not move in the loop's lease check: the window was not tested")
		}
	})
}

// waitLoopWaits waits until a pool's loop waits in its select; its
// handlers may be running.
func waitLoopWaits(t *testing.T) {
	t.Helper()
	waitUntil(t, 10*time.Second, "the pool's loop to wait", func() bool {
		states, tops := goroutineTops()
		for i, top := range tops {
			if top == poolFrame+"await" && strings.HasPrefix(states[i], "select") {
				return true
			}
		}
		return false
	})
}

// TestWorkCycleOneCommit: a pool of one handler over 40 jobs commits once
// per cycle, the result and the next claim together: 41 write transactions
// (the first claim, then one per result), where a pool that recorded its
// results and its claims apart would make 80. On SQLite a handler that
// records its job with FinishTx (rule 46) writes its row in the same cycle:
// 41 as well, where a FinishTx of its own beside the pool's claim would
// make 81 (as it does on PostgreSQL, where each is a transaction of its
// own).
// Counted on SQLite by the file's change counter, on PostgreSQL by the
// transaction IDs the server assigned (a NOTIFY takes one too).
func TestWorkCycleOneCommit(t *testing.T) {
	forEnginesInTurn(t, func(t *testing.T, eng testEngine) {
		t.Run("nil", func(t *testing.T) { testWorkCycleOneCommit(t, eng, false) })
		t.Run("FinishTx", func(t *testing.T) { testWorkCycleOneCommit(t, eng, true) })
	})
}

func testWorkCycleOneCommit(t *testing.T, eng testEngine, finishTx bool) {
	const n = 40
	path := eng.fresh(t)
	q := openQueue(t, eng, path)
	if _, err := q.DB().Exec(`CREATE TABLE effects (job TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var jobs []leaseq.Job
	for i := range n {
		jobs = append(jobs, leaseq.Job{ID: fmt.Sprintf("j%02d", i)})
	}
	if err := q.EnqueueBatch(context.Background(), jobs); err != nil {
		t.Fatal(err)
	}
	writes := func() uint64 {
		if eng.name == "sqlite" {
			return uint64(sqliteCommits(t, q.DB()))
		}
		var x uint64
		if err := q.DB().QueryRow("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	handler := func(context.Context, leaseq.Claim) error { return nil }
	if finishTx {
		handler = func(ctx context.Context, c leaseq.Claim) error {
			ok, err := q.FinishTx(ctx, c, func(ctx context.Context, tx leaseq.Tx) error {
				_, err := tx.ExecContext(ctx, eng.rebind("INSERT INTO effects (job) VALUES (?1)"), c.ID)
				return err
			})
			if err != nil || !ok {
				return fmt.Errorf("FinishTx: %v, %v", ok, err)
			}
			return nil
		}
	}
	before := writes()
	w := runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Hour, Heartbeat: 30 * time.Minute}, handler)
	// Jobs are claimed in enqueue order, one at a time: the last one done
	// is every one done. (Get only reads; Stats may fold PostgreSQL's
	// counter rows, a write of its own.)
	waitUntil(t, 30*time.Second, "every job done", func() bool {
		s, err := q.Get(context.Background(), jobs[n-1].ID)
		return err == nil && s.Status == leaseq.StatusDone
	})
	got := writes() - before
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	var effects int
	if err := q.DB().QueryRow(`SELECT count(*) FROM effects`).Scan(&effects); err != nil || effects != n*btoi(finishTx) {
		t.Fatalf("%d effect rows (%v), want %d", effects, err, n*btoi(finishTx))
	}
	// On PostgreSQL the EnqueueBatch's NOTIFY (rule 56), which its sender
	// sends on a goroutine of its own, may come inside the count: one more.
	// There a FinishTx commits on its own (engine.CycleTxs): one more per
	// job.
	want := uint64(n + 1)
	if eng.name == "postgres" && finishTx {
		want += n
	}
	most := want
	if eng.name == "postgres" {
		most++
	}
	if got < want || got > most {
		t.Fatalf("%d write transactions for %d jobs through one slot, want %d (at most %d): one per cycle", got, n, want, most)
	}
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
