package leaseq_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/leaseq/leaseq"
)

// This file covers Close and what happens when the database goes away
// underneath (rule 24 in docs/rules.md), many Queues on one *sql.DB
// (rule 25), the journal check after New (rule 26), and the regressions of
// the bugs a first real user hit: a committer that spun when the database
// was closed, a write that succeeded after db.Close, in-memory databases
// accepted, a MaxPayload the engine cannot store, a switch to WAL going
// unnoticed.
//
// TestCallsAfterClose, TestMaxPayloadLimit and TestManyQueuesOneDB run on
// each engine (forEngines in engine_test.go). The others test SQLite's store
// — its pinned write connection, group committer, file, journal mode and
// in-memory databases — and run on SQLite only.

// promptly bounds how long a call that must fail at once may take before
// the test calls it a hang. A call that answers in time answers in
// milliseconds; the bound only turns a hang into a failure.
const promptly = 10 * time.Second

// within runs call in a goroutine and returns its error, failing the test if
// it has not returned after limit.
func within(t *testing.T, limit time.Duration, what string, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("%s: no answer after %v", what, limit)
		return nil
	}
}

// everyCall is every public method of Queue that can fail, each reduced to
// its error, on a claim c of the queue's job "a".
func everyCall(db *sql.DB, c leaseq.Claim) map[string]func(ctx context.Context, q *leaseq.Queue) error {
	return map[string]func(ctx context.Context, q *leaseq.Queue) error{
		"Enqueue": func(ctx context.Context, q *leaseq.Queue) error { return q.Enqueue(ctx, leaseq.Job{ID: "new"}) },
		"EnqueueBatch": func(ctx context.Context, q *leaseq.Queue) error {
			return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "new"}})
		},
		"EnqueueTx": func(ctx context.Context, q *leaseq.Queue) error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			return q.EnqueueTx(ctx, tx, leaseq.Job{ID: "new"})
		},
		"Claim": func(ctx context.Context, q *leaseq.Queue) error {
			_, _, err := q.Claim(ctx, "B", time.Second)
			return err
		},
		"ClaimBatch": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.ClaimBatch(ctx, "B", time.Second, 5)
			return err
		},
		"Finish": func(ctx context.Context, q *leaseq.Queue) error { _, err := q.Finish(ctx, c); return err },
		"FinishBatch": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.FinishBatch(ctx, []leaseq.Claim{c})
			return err
		},
		"Extend": func(ctx context.Context, q *leaseq.Queue) error {
			_, _, err := q.Extend(ctx, c, time.Second)
			return err
		},
		"Release": func(ctx context.Context, q *leaseq.Queue) error { _, err := q.Release(ctx, c, 0, "r"); return err },
		"Fail":    func(ctx context.Context, q *leaseq.Queue) error { _, err := q.Fail(ctx, c, "r"); return err },
		"Cancel":  func(ctx context.Context, q *leaseq.Queue) error { return q.Cancel(ctx, "a", "r") },
		"Requeue": func(ctx context.Context, q *leaseq.Queue) error { return q.Requeue(ctx, "a") },
		"Purge": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.Purge(ctx, t0.Add(time.Hour), leaseq.StatusDone, leaseq.StatusQuarantined)
			return err
		},
		"Get": func(ctx context.Context, q *leaseq.Queue) error { _, err := q.Get(ctx, "a"); return err },
		"Stats": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.Stats(ctx)
			return err
		},
		"List": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.List(ctx, leaseq.Filter{})
			return err
		},
		"Process": func(ctx context.Context, q *leaseq.Queue) error {
			_, err := q.Process(ctx, "B", time.Second, func(context.Context, leaseq.Claim) error { return nil })
			return err
		},
	}
}

// TestCallsAfterClose: every call on a closed Queue is ErrClosed and writes
// nothing; Close is safe twice; other Queues on the same *sql.DB go on.
func TestCallsAfterClose(t *testing.T) { forEngines(t, testCallsAfterClose) }

func testCallsAfterClose(t *testing.T, eng testEngine) {
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{DisableGroupCommit: noGroup})
			f.enqueue(leaseq.Job{ID: "a"})
			f.enqueue(leaseq.Job{ID: "b"})
			c := f.mustClaim("A", time.Hour)
			other := f.queue("default") // same name, same jobs
			if err := f.q.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := f.q.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			before := f.snapshot()
			for name, call := range everyCall(f.db, c) {
				err := within(t, promptly, name, func() error { return call(f.ctx, f.q) })
				if !errors.Is(err, leaseq.ErrClosed) {
					t.Fatalf("%s after Close: %v, want ErrClosed", name, err)
				}
				f.unchanged(before, name+" after Close")
			}
			if f.q.Name() != "default" || f.q.DB() != f.db {
				t.Fatal("Name and DB must still answer after Close")
			}
			// The other Queue on the same *sql.DB is not closed.
			if ok, err := other.Finish(f.ctx, c); !ok || err != nil {
				t.Fatalf("Finish through the other open Queue: %v, %v", ok, err)
			}
			if _, ok, err := other.Claim(f.ctx, "B", time.Second); !ok || err != nil {
				t.Fatalf("Claim through the other open Queue: %v, %v", ok, err)
			}
		})
	}
}

// TestCloseGivesBackConnections: once every Queue on a *sql.DB is closed,
// the queue holds no connection, so db.Close closes the file.
func TestCloseGivesBackConnections(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	q2 := f.queue("other")
	f.enqueue(leaseq.Job{ID: "a"})
	f.finish(f.mustClaim("A", time.Hour))
	if err := q2.Enqueue(f.ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if f.db.Stats().InUse == 0 {
		t.Fatal("setup: the write connection should be pinned after a write")
	}
	f.q.Close()
	if err := q2.Enqueue(f.ctx, leaseq.Job{ID: "b"}); err != nil {
		t.Fatalf("Enqueue on the Queue still open: %v", err)
	}
	q2.Close()
	if got := f.db.Stats().InUse; got != 0 {
		t.Fatalf("after every Queue closed: %d connections in use, want 0", got)
	}
	if err := f.db.Close(); err != nil {
		t.Fatalf("db.Close: %v", err)
	}
	if got := f.db.Stats().OpenConnections; got != 0 {
		t.Fatalf("after db.Close: %d connections open, want 0", got)
	}

	// A new Queue on a new *sql.DB of the same file starts afresh.
	g := openFixture(t, sqliteEngine, f.path, leaseq.Options{})
	if s := g.get("a"); s.Status != leaseq.StatusDone {
		t.Fatalf("row a after reopening: %s", fmtRow(s))
	}
}

// committers counts the goroutines running a group committer.
func committers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("internal/sqlite.(*Engine).commitGroups"))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestClosedDBFailsPromptly is the regression test of the spinning
// committer and of the write that succeeded after db.Close. With the
// *sql.DB closed under an open Queue, every call fails at once, with group
// commit on or off, both while the queue still holds its write connection
// and after it let go of it — then the committer used to find no
// connection, answer nobody and spin, and the caller with a Background
// context hung. After the calls, no committer goroutine is left and the
// process is idle.
func TestClosedDBFailsPromptly(t *testing.T) {
	defer leaseq.SetWriteConnIdle(5 * time.Millisecond)()
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			f := newFixture(t, sqliteEngine, leaseq.Options{DisableGroupCommit: noGroup})
			f.enqueue(leaseq.Job{ID: "a"})
			c := f.mustClaim("A", time.Hour)
			if f.db.Stats().InUse == 0 {
				t.Fatal("setup: the write connection should be pinned right after a write")
			}
			if err := f.db.Close(); err != nil {
				t.Fatal(err)
			}
			calls := everyCall(f.db, c)
			// While the connection may still be pinned: the bug let Enqueue
			// commit through it.
			for _, name := range []string{"Enqueue", "Claim", "Finish"} {
				err := within(t, promptly, name+" right after db.Close", func() error { return calls[name](context.Background(), f.q) })
				if err == nil || errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s right after db.Close: %v, want the closed database's error", name, err)
				}
			}
			waitUntil(t, promptly, "the write connection to be given back", func() bool { return f.db.Stats().InUse == 0 })
			for name, call := range calls {
				err := within(t, promptly, name+" after db.Close", func() error { return call(context.Background(), f.q) })
				if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, leaseq.ErrClosed) {
					t.Fatalf("%s after db.Close, connection given back: %v, want the closed database's error", name, err)
				}
			}
			// Several callers at once, so that the committer has a list.
			errs := make(chan error, 8)
			for i := range 8 {
				go func() { errs <- f.q.Enqueue(context.Background(), leaseq.Job{ID: fmt.Sprint("c", i)}) }()
			}
			for range 8 {
				select {
				case err := <-errs:
					if err == nil {
						t.Fatal("a concurrent Enqueue after db.Close succeeded")
					}
				case <-time.After(promptly):
					t.Fatalf("concurrent Enqueues after db.Close: no answer after %v", promptly)
				}
			}
			waitUntil(t, promptly, "the committer to stop", func() bool { return committers() == 0 })
			const window = 300 * time.Millisecond
			cpu := cpuTime(t)
			time.Sleep(window) // a measurement window, not a wait for an event
			if used := cpuTime(t) - cpu; used > window/2 {
				t.Fatalf("the process used %v of CPU in %v with nothing to do: something spins", used, window)
			}
			if err := f.q.Close(); err != nil {
				t.Fatalf("Close after db.Close: %v", err)
			}
		})
	}
}

// TestClosedDBWhileWaitingForLock: calls waiting in the group-commit list
// behind another connection's write lock get the closed database's error
// when db.Close comes, at the latest when the wait for the file lock in
// progress (the busy timeout) ends — not never.
func TestClosedDBWhileWaitingForLock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out one busy timeout")
	}
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	f.lockFromOutside()
	errs := make(chan error, 4)
	for i := range 4 {
		go func() { errs <- f.q.Enqueue(context.Background(), leaseq.Job{ID: fmt.Sprint("w", i)}) }()
	}
	f.waitForGroupedCalls(4)
	start := time.Now()
	f.db.Close()
	for range 4 {
		select {
		case err := <-errs:
			if err == nil {
				t.Fatal("Enqueue waiting for the lock succeeded after db.Close")
			}
		case <-time.After(leaseq.BusyTimeoutDefault + promptly):
			t.Fatalf("Enqueue waiting for the lock: no answer %v after db.Close", time.Since(start))
		}
	}
	t.Logf("the waiting calls failed %v after db.Close", time.Since(start).Round(time.Millisecond))
	waitUntil(t, promptly, "the committer to stop", func() bool { return committers() == 0 })
}

// TestInMemoryRefused: Open refuses "" and ":memory:", and New refuses a
// *sql.DB on an in-memory or temporary database however it was opened:
// each pooled connection would have a database of its own (the bug: Enqueue
// worked, Get said "no such table").
func TestInMemoryRefused(t *testing.T) {
	for _, path := range []string{"", ":memory:"} {
		db, err := leaseq.Open(path)
		if db != nil || !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("Open(%q): %v, %v; want nil and ErrInvalid", path, db, err)
		}
	}
	for _, dsn := range []string{"", ":memory:", "file::memory:", "file::memory:?cache=shared", "file:mem1?mode=memory&cache=shared"} {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		q, err := leaseq.New(context.Background(), db, leaseq.Options{})
		if q != nil || !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("New on sql.Open(\"sqlite\", %q): %v; want ErrInvalid", dsn, err)
		}
		db.Close()
	}
}

// TestMaxPayloadLimit: New refuses a MaxPayload the engine cannot be
// trusted to store (the bug: "string or blob too big" at Enqueue), accepts
// exactly MaxPayloadLimit, and a payload of that size round-trips.
func TestMaxPayloadLimit(t *testing.T) { forEngines(t, testMaxPayloadLimit) }

func testMaxPayloadLimit(t *testing.T, eng testEngine) {
	f := newFixture(t, eng, leaseq.Options{})
	for _, n := range []int{leaseq.MaxPayloadLimit + 1, 1 << 30, 1<<31 - 1} {
		q, err := leaseq.New(f.ctx, f.db, leaseq.Options{MaxPayload: n})
		if q != nil || !errors.Is(err, leaseq.ErrInvalid) {
			t.Fatalf("New with MaxPayload %d: %v, want ErrInvalid", n, err)
		}
	}
	q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: "big", MaxPayload: leaseq.MaxPayloadLimit, Clock: f.clock})
	if err != nil {
		t.Fatalf("New with MaxPayload = MaxPayloadLimit: %v", err)
	}
	defer q.Close()
	if testing.Short() {
		t.Skip("stores a payload of MaxPayloadLimit bytes")
	}
	big := bytes.Repeat([]byte{0, 1, 0xfe, 0xff, 'x', 0, 0, 7}, leaseq.MaxPayloadLimit/8)
	if len(big) != leaseq.MaxPayloadLimit {
		t.Fatalf("test payload is %d bytes", len(big))
	}
	if err := q.Enqueue(f.ctx, leaseq.Job{ID: "over", Payload: append(big, 0)}); !errors.Is(err, leaseq.ErrInvalid) {
		t.Fatalf("Enqueue of MaxPayloadLimit+1 bytes: %v, want ErrInvalid", err)
	}
	if err := q.Enqueue(f.ctx, leaseq.Job{ID: "big", Payload: big}); err != nil {
		t.Fatalf("Enqueue of MaxPayloadLimit bytes: %v", err)
	}
	c, ok, err := q.Claim(f.ctx, "A", time.Hour)
	if err != nil || !ok || !bytes.Equal(c.Payload, big) {
		t.Fatalf("Claim of the big job: ok %v, err %v, payload %d bytes equal %v", ok, err, len(c.Payload), bytes.Equal(c.Payload, big))
	}
	if s, err := q.Get(f.ctx, "big"); err != nil || !bytes.Equal(s.Payload, big) {
		t.Fatalf("Get of the big job: %v, payload %d bytes", err, len(s.Payload))
	}
}

// TestWALAfterNew: a database switched to WAL after New is refused when the
// queue next takes a write connection from the pool (rule 26; the bug: it
// went unnoticed). The caller's *sql.DB uses a plain DSN, which sets no
// journal mode, so nothing switches it back.
func TestWALAfterNew(t *testing.T) {
	defer leaseq.SetWriteConnIdle(5 * time.Millisecond)()
	path := filepath.Join(t.TempDir(), "q.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: leaseq.NewManualClock(t0)})
	if err != nil {
		t.Fatalf("New on a plain-DSN database: %v", err)
	}
	defer q.Close()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}

	other := rawDB(t, path)
	var mode string
	if err := other.QueryRow("PRAGMA journal_mode=WAL").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("switching the file to WAL: %q, %v", mode, err)
	}
	waitUntil(t, promptly, "the queue to give its write connection back", func() bool { return db.Stats().InUse == 0 })
	before := snapshotDB(t, other)
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"Enqueue", func() error { return q.Enqueue(ctx, leaseq.Job{ID: "b"}) }},
		{"Claim", func() error { _, _, err := q.Claim(ctx, "A", time.Second); return err }},
		{"EnqueueBatch", func() error { return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "c"}}) }},
	} {
		err := within(t, promptly, call.name, call.do)
		wantErrSays(t, err, leaseq.ErrInvalid, "wal")
		if after := snapshotDB(t, other); after != before {
			t.Fatalf("%s on a WAL database wrote:\n%s want\n%s", call.name, after, before)
		}
	}
}

// TestManyQueuesOneDB: four Queue values on one *sql.DB — two of the same
// name, two of others — used by four goroutines each at once: no call
// fails, and every job is finished exactly once (rule 25).
func TestManyQueuesOneDB(t *testing.T) { forEngines(t, testManyQueuesOneDB) }

func testManyQueuesOneDB(t *testing.T, eng testEngine) {
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			f := newFixture(t, eng, leaseq.Options{})
			names := []string{"a", "a", "b", "c"}
			qs := make([]*leaseq.Queue, len(names))
			for i, name := range names {
				q, err := leaseq.New(f.ctx, f.db, leaseq.Options{Name: name, Clock: f.clock, DisableGroupCommit: noGroup})
				if err != nil {
					t.Fatal(err)
				}
				defer q.Close()
				qs[i] = q
			}
			const workers = 4
			jobs := 50
			if noGroup {
				jobs = 15 // a commit per call: keep the file's fsyncs to a few seconds
			}
			run := func(work func(q *leaseq.Queue, qi, w int) error) {
				t.Helper()
				var wg sync.WaitGroup
				errs := make(chan error, len(qs)*workers)
				for qi, q := range qs {
					for w := range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							if err := work(q, qi, w); err != nil {
								errs <- err
							}
						}()
					}
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
			}
			run(func(q *leaseq.Queue, qi, w int) error {
				for k := range jobs {
					if err := q.Enqueue(f.ctx, leaseq.Job{ID: fmt.Sprintf("q%d-w%d-%02d", qi, w, k)}); err != nil {
						return fmt.Errorf("queue %d worker %d: Enqueue: %w", qi, w, err)
					}
				}
				return nil
			})
			var mu sync.Mutex
			finished := map[string]int{}
			run(func(q *leaseq.Queue, qi, w int) error {
				owner := fmt.Sprintf("q%d-w%d", qi, w)
				for {
					c, ok, err := q.Claim(f.ctx, owner, time.Hour)
					if err != nil {
						return fmt.Errorf("%s: Claim: %w", owner, err)
					}
					if !ok {
						return nil
					}
					if ok, err := q.Finish(f.ctx, c); err != nil || !ok {
						return fmt.Errorf("%s: Finish(%+v): %v, %v", owner, c, ok, err)
					}
					mu.Lock()
					finished[q.Name()+"/"+c.ID]++
					mu.Unlock()
				}
			})
			if len(finished) != len(qs)*workers*jobs {
				t.Fatalf("%d jobs finished, want %d", len(finished), len(qs)*workers*jobs)
			}
			for key, n := range finished {
				if n != 1 {
					t.Fatalf("job %s finished %d times", key, n)
				}
				name, id, _ := strings.Cut(key, "/")
				if want := names[int(id[1]-'0')]; name != want {
					t.Fatalf("job %s finished in queue %s, want %s", id, name, want)
				}
			}
			for _, q := range qs[1:] {
				st := stats(t, q)
				want := workers * jobs
				if q.Name() == "a" {
					want *= 2
				}
				if st.Done != want || st.Pending+st.Leased+st.Expired+st.Scheduled+st.Quarantined != 0 {
					t.Fatalf("queue %s: Stats %s, want %d done and nothing else", q.Name(), fmtStats(st), want)
				}
			}
		})
	}
}

// TestMissingDirectoryFailsPromptly: when no connection can be opened any
// more — the database's directory was removed — every call gets that error
// at once, with group commit on or off, and the committer does not spin
// (rule 24).
func TestMissingDirectoryFailsPromptly(t *testing.T) {
	defer leaseq.SetWriteConnIdle(5 * time.Millisecond)()
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGroupCommit=%v", noGroup), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "gone")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			f := openFixture(t, sqliteEngine, filepath.Join(dir, "q.db"), leaseq.Options{DisableGroupCommit: noGroup})
			f.db.SetMaxIdleConns(0) // every call needs a new connection
			f.enqueue(leaseq.Job{ID: "a"})
			c := f.mustClaim("A", time.Hour)
			waitUntil(t, promptly, "the write connection to be given back", func() bool { return f.db.Stats().OpenConnections == 0 })
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			for name, call := range everyCall(f.db, c) {
				err := within(t, promptly, name+" with the directory gone", func() error { return call(context.Background(), f.q) })
				if sqliteCode(err) != sqlite3.SQLITE_CANTOPEN {
					t.Fatalf("%s with the directory gone: %v, want SQLITE_CANTOPEN", name, err)
				}
			}
			waitUntil(t, promptly, "the committer to stop", func() bool { return committers() == 0 })
		})
	}
}

// TestQueuesShareOneGroup is the regression test of two Queues on one
// *sql.DB fighting over the file lock (3.3 times slower than one): Queues of
// different names on one *sql.DB put their calls in one group-commit list
// and commit them together (rule 25). While another connection holds the
// write lock, the calls of both Queues wait in the same list, and once it
// is free they are committed in one transaction.
func TestQueuesShareOneGroup(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	other := f.queue("other")
	// The commit hook goes on the only connection. The write that follows
	// gives back the one the queue kept (a pool this small is not pinned).
	f.db.SetMaxOpenConns(1)
	f.enqueue(leaseq.Job{ID: "a"})
	c := f.mustClaim("A", time.Hour)
	var commits atomic.Int32
	setHooks(t, f.db, nil, func() int32 { commits.Add(1); return 0 }, nil)
	release := f.lockFromOutside()
	errs := make(chan error, 3)
	go func() { errs <- f.q.Enqueue(f.ctx, leaseq.Job{ID: "b"}) }()
	go func() { errs <- other.Enqueue(f.ctx, leaseq.Job{ID: "b"}) }()
	go func() {
		// A claim with no queue is judged as other's, which has no job a:
		// refused by the fence, but in the same list. (One naming the
		// default queue would be refused without reaching the list.)
		byHand := c
		byHand.Queue = ""
		ok, err := other.Finish(f.ctx, byHand)
		if err == nil && ok {
			err = errors.New("Finish through the other queue accepted a claim of the default queue")
		}
		errs <- err
	}()
	f.waitForGroupedCalls(3) // all three in the list of f.q's store
	if n := other.WaitingCalls(); n != 3 {
		t.Fatalf("the other Queue sees %d waiting calls, want the same 3", n)
	}
	release()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := commits.Load(); n != 1 {
		t.Fatalf("the three calls of two Queues took %d commits, want 1", n)
	}
	if s, err := other.Get(f.ctx, "b"); err != nil || s.Queue != "other" {
		t.Fatalf("other's b: %s, %v", fmtRow(s), err)
	}
	f.get("b")
}
