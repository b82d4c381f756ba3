package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/leaseq/leaseq"
)

// SQLite only: these tests kill a process inside SQLite's commit and check
// what its rollback journal leaves behind.

// The crash tests kill a process inside a write transaction and check what
// the next process finds: the hot journal rolled back, an intact file, and
// exactly the state before or after the transaction. Each runs in every
// rollback-journal mode a caller may use (rule 26 in docs/rules.md):
// the mode decides how a commit ends — the journal deleted, truncated, or
// its header zeroed — and so what a crash at that moment leaves behind.

// journalModes are the journal modes the queue accepts; leaseq.JournalMode,
// the one Open sets, is one of them.
var journalModes = []string{"DELETE", "TRUNCATE", "PERSIST"}

// forEachJournal runs test as a subtest per journal mode.
func forEachJournal(t *testing.T, test func(t *testing.T, journal string)) {
	for _, journal := range journalModes {
		t.Run(journal, func(t *testing.T) { test(t, journal) })
	}
}

// openJournal opens path as a restarted service would: with Open when
// journal is Open's own mode, else with Open's settings but journal, as a
// caller's own *sql.DB would be.
func openJournal(path, journal string) (*sql.DB, error) {
	if journal == leaseq.JournalMode {
		return leaseq.Open(path)
	}
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode("+journal+")"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
}

// crashJobs is the size of the large transaction: one Claim's quarantine
// sweep moves all of them (their deadline has passed) in one UPDATE, then
// claims crashFree.
const (
	crashJobs     = 200
	crashFree     = "free"
	crashPayload  = 1024
	crashDeadline = 1000 // ms after t0
	crashNow      = 2000 // ms after t0: the clock of the crashing transaction
)

// TestChildCrash is the process that dies, writing in journal mode
// LEASEQ_CRASH_JOURNAL. LEASEQ_CRASH_OP is the
// transaction ("sweep": one Claim that quarantines crashJobs jobs and claims
// one; "enqueue": one Enqueue), LEASEQ_CRASH_MODE where it dies: "commit"
// from inside SQLite's commit hook, "row" from the pre-update hook after
// LEASEQ_CRASH_ROWS rows, "after" right after the call returned, "none"
// not at all.
func TestChildCrash(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "crash" {
		return
	}
	ctx := context.Background()
	// A cache of 8 pages makes SQLite spill dirty pages into the database
	// file before COMMIT, so a large transaction that dies has already
	// changed the file and only the journal can undo it.
	db, err := sql.Open("sqlite", "file:"+os.Getenv("LEASEQ_CRASH_DB")+"?_pragma=busy_timeout(5000)"+
		"&_pragma=journal_mode("+os.Getenv("LEASEQ_CRASH_JOURNAL")+")&_pragma=synchronous(FULL)&_pragma=cache_size(8)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // the hooks below are on the only connection
	var journal string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&journal); err != nil || !strings.EqualFold(journal, os.Getenv("LEASEQ_CRASH_JOURNAL")) {
		t.Fatalf("journal_mode %q (%v), want %q", journal, err, os.Getenv("LEASEQ_CRASH_JOURNAL"))
	}
	clock := leaseq.NewManualClock(ms(0))
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(ms(crashNow))
	die := func() {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught; nothing after this runs
	}
	mode := os.Getenv("LEASEQ_CRASH_MODE")
	rows, _ := strconv.Atoi(os.Getenv("LEASEQ_CRASH_ROWS"))
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Raw(func(dc any) error {
		h, ok := dc.(sqlite.HookRegisterer)
		if !ok {
			return fmt.Errorf("driver connection %T has no hooks", dc)
		}
		switch mode {
		case "commit":
			h.RegisterCommitHook(func() int32 { die(); return 0 })
		case "row":
			seen := 0
			h.RegisterPreUpdateHook(func(sqlite.SQLitePreUpdateData) {
				if seen++; seen == rows {
					die()
				}
			})
		}
		return nil
	})
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	switch op := os.Getenv("LEASEQ_CRASH_OP"); op {
	case "sweep":
		if _, _, err := q.Claim(ctx, "crasher", time.Second); err != nil {
			t.Fatal(err)
		}
	case "enqueue":
		if err := q.Enqueue(ctx, crashNewJob()); err != nil {
			t.Fatal(err)
		}
	case "enqueue-loop":
		// Enqueue numbered jobs until killed from outside.
		first, _ := strconv.Atoi(os.Getenv("LEASEQ_CRASH_FIRST"))
		for i := first; ; i++ {
			if err := q.Enqueue(ctx, loopJob(i)); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("LEASEQ_CRASH_OP=%q", op)
	}
	if mode == "after" {
		die()
	}
}

func crashNewJob() leaseq.Job {
	return leaseq.Job{ID: "new", Qty: 7, Payload: []byte(strings.Repeat("n", crashPayload))}
}

func loopJob(i int) leaseq.Job {
	return leaseq.Job{ID: fmt.Sprintf("loop-%06d", i), Qty: i, Payload: []byte(fmt.Sprintf("payload %d \x00 end", i))}
}

// crashChild is the command that runs TestChildCrash on path in journal
// mode journal, with env added to its environment.
func crashChild(path, journal string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEASEQ_CHILD=crash", "LEASEQ_CRASH_DB="+path, "LEASEQ_CRASH_JOURNAL="+journal,
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// runCrashChild runs TestChildCrash and reports whether it died by SIGKILL.
func runCrashChild(t *testing.T, path, journal, op, mode string, rows int) bool {
	t.Helper()
	cmd := crashChild(path, journal, "LEASEQ_CRASH_OP="+op, "LEASEQ_CRASH_MODE="+mode, "LEASEQ_CRASH_ROWS="+strconv.Itoa(rows))
	out, err := cmd.CombinedOutput()
	if killedBySIGKILL(err) {
		return true
	}
	if err != nil {
		t.Fatalf("crash child (%s, %s, journal_mode=%s): %v\n%s", op, mode, journal, err, out)
	}
	return false
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// buildCrashTemplate makes the database every crash case starts from:
// crashJobs pending jobs whose deadline will have passed at crashNow, and
// one without a deadline for the Claim to take. Building it skips fsync;
// the crash itself runs with synchronous=FULL.
func buildCrashTemplate(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)&_pragma=synchronous(OFF)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{Clock: leaseq.NewManualClock(ms(0))})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < crashJobs; i++ {
		j := leaseq.Job{ID: fmt.Sprintf("late-%04d", i), Qty: i, Deadline: ms(crashDeadline),
			Payload: []byte(strings.Repeat(string(rune('a'+i%26)), crashPayload))}
		if err := q.Enqueue(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Enqueue(ctx, leaseq.Job{ID: crashFree, Qty: 1}); err != nil {
		t.Fatal(err)
	}
}

// copyDB copies a closed database with VACUUM INTO, so that the file is
// never opened outside SQLite.
func copyDB(t *testing.T, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+from)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("VACUUM INTO ?", to); err != nil {
		t.Fatal(err)
	}
}

// dumpDB prints every column of every row, and the schema version: two
// dumps are equal exactly when the queue's state is.
func dumpDB(t *testing.T, db *sql.DB) string {
	t.Helper()
	var b strings.Builder
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "user_version=%d\n", v)
	rows, err := db.Query(`SELECT seq, id, qty, hex(payload), status, owner, token, attempts, max_attempts,
		ifnull(lease_until, 'NULL'), ifnull(deadline, 'NULL'), reason, created_at, updated_at FROM leaseq_jobs ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, vals...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// reopen opens a database the way a restarted service would, after a crash,
// in journal mode journal (see openJournal), and checks that the hot journal
// is gone and the file is intact.
func reopen(t *testing.T, path, journal string) (*sql.DB, *leaseq.Queue, *leaseq.ManualClock) {
	t.Helper()
	db, err := openJournal(path, journal)
	if err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	clock := leaseq.NewManualClock(ms(crashNow))
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Clock: clock})
	if err != nil {
		t.Fatalf("New after the crash: %v", err)
	}
	if size, hot := journalState(t, path); hot {
		t.Fatalf("after reopening, a hot journal of %d bytes is still there; want it rolled back", size)
	}
	wantIntegrity(t, db)
	return db, q, clock
}

func wantIntegrity(t *testing.T, db *sql.DB) {
	t.Helper()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("PRAGMA integrity_check: got %q, %v; want ok", res, err)
	}
}

// journalMagic opens every rollback journal whose header was synced. In
// synchronous=FULL SQLite writes the header with a zero magic and fills it
// in only when it syncs the journal, which it must do before it writes any
// page into the database file. So a journal with the magic is hot: the file
// may hold changes that only a rollback can undo. A journal without it is
// stale and ignored: the database file was never touched.
var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// journalState reports the size of the journal left next to path (0 if
// none) and whether it is hot. The journal is a separate file that SQLite
// holds no lock on, so reading it does not disturb the database's locks.
func journalState(t *testing.T, path string) (int64, bool) {
	t.Helper()
	b, err := os.ReadFile(path + "-journal")
	if errors.Is(err, os.ErrNotExist) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b)), len(b) >= len(journalMagic) && string(b[:len(journalMagic)]) == string(journalMagic)
}

// committedJournalProblem says what is wrong with the journal next to path
// when no transaction is in progress and the last one committed, or returns
// "". How a commit ends its journal depends on the mode: DELETE deletes the
// file, TRUNCATE cuts it to 0 bytes, PERSIST keeps it and overwrites its
// header with zeros, which is what makes it no longer hot.
func committedJournalProblem(t *testing.T, path, journal string) string {
	t.Helper()
	size, hot := journalState(t, path)
	_, err := os.Stat(path + "-journal")
	exists := err == nil
	switch {
	case hot:
		return fmt.Sprintf("a hot journal of %d bytes", size)
	case journal == "DELETE" && exists:
		return fmt.Sprintf("a journal of %d bytes; DELETE mode deletes it on commit", size)
	case journal == "TRUNCATE" && size > 0:
		return fmt.Sprintf("a journal of %d bytes; TRUNCATE mode truncates it on commit", size)
	case journal == "PERSIST" && exists && !zeroHeader(t, path+"-journal"):
		return "a journal whose header is not zeroed; PERSIST mode zeroes it on commit"
	}
	return ""
}

// journalHeaderSize is how many bytes of the journal header SQLite zeroes
// when a transaction commits in PERSIST mode.
const journalHeaderSize = 28

// zeroHeader reports whether the journal at path starts with a zeroed
// header (or is shorter than one and all zeros).
func zeroHeader(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range b[:min(len(b), journalHeaderSize)] {
		if c != 0 {
			return false
		}
	}
	return true
}

// TestCrashInsideCommit kills a process at chosen points of one write
// transaction — from inside SQLite's commit hook, from the pre-update hook
// in the middle of a 200-row UPDATE (after the first row, half of them, all
// of them), and just after the commit returned — then reopens the file as a
// new process would. The hot journal is rolled back, integrity_check is ok,
// and the rows are exactly those before the transaction (or after it, for
// the kill after commit), never a mix; and the recovered queue runs the same
// transaction to exactly the after-state. In every journal mode.
func TestCrashInsideCommit(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "template.db")
	buildCrashTemplate(t, tmpl)
	forEachJournal(t, func(t *testing.T, journal string) { crashInsideCommit(t, tmpl, journal) })
}

func crashInsideCommit(t *testing.T, tmpl, journal string) {
	dir := t.TempDir()
	cases := []struct {
		name, op, mode string
		rows           int
		wantHot        bool // the file was changed before the kill
		wantAfter      bool
	}{
		{"enqueue/commit-hook", "enqueue", "commit", 0, false, false},
		{"sweep/commit-hook", "sweep", "commit", 0, true, false},
		{"sweep/first-row", "sweep", "row", 1, false, false},
		{"sweep/half-the-rows", "sweep", "row", crashJobs / 2, true, false},
		{"sweep/at-the-claim-row", "sweep", "row", crashJobs + 1, true, false},
		{"sweep/after-commit", "sweep", "after", 0, false, true},
		{"enqueue/after-commit", "enqueue", "after", 0, false, true},
	}
	// The state after each transaction, as an undisturbed process leaves
	// it.
	before := dumpFile(t, tmpl)
	afterOf := map[string]string{}
	for _, op := range []string{"sweep", "enqueue"} {
		path := filepath.Join(dir, op+"-after.db")
		copyDB(t, tmpl, path)
		if runCrashChild(t, path, journal, op, "none", 0) {
			t.Fatalf("%s: the child without a crash point was killed", op)
		}
		if afterOf[op] = dumpFile(t, path); afterOf[op] == before {
			t.Fatalf("%s changed nothing; the test would prove nothing", op)
		}
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("case%d.db", i))
			copyDB(t, tmpl, path)
			after := afterOf[tc.op]

			if !runCrashChild(t, path, journal, tc.op, tc.mode, tc.rows) {
				t.Fatalf("child (%s) was not killed", tc.mode)
			}
			size, hot := journalState(t, path)
			switch {
			case tc.wantAfter:
				if why := committedJournalProblem(t, path, journal); why != "" {
					t.Fatalf("after a committed transaction: %s", why)
				}
			case size == 0:
				t.Fatalf("no journal after a kill inside the transaction")
			case tc.wantHot && !hot:
				t.Fatalf("the %d-byte journal is not hot: the file was not changed yet, so the rollback is not tested", size)
			}
			t.Logf("killed (%s): journal of %d bytes, hot=%v", tc.mode, size, hot)

			db, q, _ := reopen(t, path, journal)
			got := dumpDB(t, db)
			want, wantName := before, "before"
			if tc.wantAfter {
				want, wantName = after, "after"
			}
			if got != want {
				t.Fatalf("rows after the crash are not the state %s the transaction:\n%s", wantName, diffLines(got, want))
			}
			if tc.wantAfter {
				return
			}
			// The recovered queue runs the same transaction to the same
			// end as an undisturbed process: nothing of the dead one is
			// left behind.
			redo(t, q, tc.op)
			if got := dumpDB(t, db); got != after {
				t.Fatalf("the transaction rerun after recovery:\n%s", diffLines(got, after))
			}
			if why := committedJournalProblem(t, path, journal); why != "" {
				t.Fatalf("after the rerun committed: %s", why)
			}
		})
	}
}

func redo(t *testing.T, q *leaseq.Queue, op string) {
	t.Helper()
	ctx := context.Background()
	switch op {
	case "sweep":
		c, ok, err := q.Claim(ctx, "crasher", time.Second)
		if err != nil || !ok || c.ID != crashFree {
			t.Fatalf("Claim after recovery: got %q ok=%v err=%v, want %q", c.ID, ok, err, crashFree)
		}
	case "enqueue":
		if err := q.Enqueue(ctx, crashNewJob()); err != nil {
			t.Fatalf("Enqueue after recovery: %v", err)
		}
	}
}

func dumpFile(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return dumpDB(t, db)
}

// diffLines shows the first lines where got and want differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "got %d lines, want %d\n", len(g), len(w))
	shown := 0
	for i := 0; i < max(len(g), len(w)) && shown < 5; i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			shown++
			fmt.Fprintf(&b, "line %d:\n  got  %.200s\n  want %.200s\n", i, gl, wl)
		}
	}
	return b.String()
}

// TestCrashAtRandomMoments SIGKILLs a process that enqueues jobs one after
// another, at random moments, several times on the same file. After each
// kill the reopened queue holds exactly the jobs whose Enqueue committed — a
// gapless prefix of the sequence, each row complete — and the next process
// carries on from there. In every journal mode; with -short, in Open's only,
// as the kills take real time.
func TestCrashAtRandomMoments(t *testing.T) {
	forEachJournal(t, func(t *testing.T, journal string) {
		if testing.Short() && journal != leaseq.JournalMode {
			t.Skipf("-short: only Open's journal mode, %s", leaseq.JournalMode)
		}
		crashAtRandomMoments(t, journal)
	})
}

func crashAtRandomMoments(t *testing.T, journal string) {
	path := filepath.Join(t.TempDir(), "loop.db")
	db, err := openJournal(path, journal)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaseq.New(context.Background(), db, leaseq.Options{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	next, hot := 0, 0
	for round := 0; round < 4; round++ {
		cmd := crashChild(path, journal, "LEASEQ_CRASH_OP=enqueue-loop", "LEASEQ_CRASH_FIRST="+strconv.Itoa(next))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A random moment: the real clock is the point here.
		time.Sleep(200*time.Millisecond + rand.N(400*time.Millisecond))
		cmd.Process.Kill()
		if err := cmd.Wait(); !killedBySIGKILL(err) {
			t.Fatalf("round %d: child ended with %v, want SIGKILL", round, err)
		}
		if _, isHot := journalState(t, path); isHot {
			hot++
		}
		n := checkPrefix(t, path, journal, next)
		t.Logf("round %d: killed after %d more jobs", round, n-next)
		next = n
	}
	t.Logf("%d jobs in %d rounds, %d kills left a hot journal", next, 4, hot)
}

// checkPrefix reopens path in journal mode journal and checks that it holds
// loop jobs 0..n-1 exactly for some n >= from, and returns n.
func checkPrefix(t *testing.T, path, journal string, from int) int {
	t.Helper()
	db, err := openJournal(path, journal)
	if err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	defer db.Close()
	wantIntegrity(t, db)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < from {
		t.Fatalf("%d jobs after the crash, but %d had committed before it", n, from)
	}
	for i := 0; i < n; i++ {
		want := loopJob(i)
		s, err := q.Get(context.Background(), want.ID)
		if err != nil {
			t.Fatalf("job %d of %d: %v (the jobs are not a gapless prefix)", i, n, err)
		}
		if s.Qty != want.Qty || string(s.Payload) != string(want.Payload) || s.Status != leaseq.StatusPending {
			t.Fatalf("job %s: got %s, want qty=%d payload=%q pending", want.ID, fmtState(s), want.Qty, want.Payload)
		}
	}
	return n
}
