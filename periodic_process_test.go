package leaseq_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Periodic jobs across processes (rule 53 in docs/rules.md): pools in
// several processes on real time, on one database, each listing the same
// Periodic, with one restarted in the middle.

// periodicEvery is the interval of the processes' Periodic.
const periodicEvery = 100 * time.Millisecond

// TestChildPeriodic is a pool process of TestPeriodicProcesses: Work with
// the Periodic "beat" every periodicEvery, whose handler prints "ran ID
// token" for each job it runs. It prints "ready" once its queue is open;
// SIGTERM shuts it down. It does nothing unless started so.
func TestChildPeriodic(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "periodic" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	e, err := chaosEngineNamed(os.Getenv("LEASEQ_ENGINE"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := e.open(os.Getenv("LEASEQ_DB"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	q, err := leaseq.New(ctx, db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	say := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(os.Stdout, line)
	}
	go func() { <-term; stop() }()
	say("ready")
	opts := leaseq.WorkerOptions{Owner: os.Getenv("LEASEQ_OWNER"), Concurrency: 4, PollInterval: 50 * time.Millisecond,
		Retention: leaseq.Retention{Off: true},
		Periodic:  []leaseq.Periodic{{Name: "beat", Schedule: leaseq.Every(periodicEvery)}}}
	err = q.Work(ctx, opts, func(_ context.Context, c leaseq.Claim) error {
		say(fmt.Sprintf("ran %s %d", c.ID, c.Token))
		return nil
	})
	if err != nil {
		t.Fatalf("Work: %v", err)
	}
}

// periodicChild is one process of TestPeriodicProcesses.
type periodicChild struct {
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{} // its output read to the end
}

// periodicRuns gathers the processes' "ran" lines.
type periodicRuns struct {
	mu   sync.Mutex
	runs map[string]int // job ID → how many times a handler ran it
	more chan struct{}  // a new job ran
}

func (r *periodicRuns) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

func startPeriodicChild(t *testing.T, eng testEngine, where, owner string, runs *periodicRuns) *periodicChild {
	t.Helper()
	k := &periodicChild{ready: make(chan struct{}), done: make(chan struct{})}
	k.cmd = exec.Command(os.Args[0], "-test.run=^TestChildPeriodic$", "-test.count=1")
	k.cmd.Env = append(os.Environ(), "LEASEQ_CHILD=periodic", "LEASEQ_ENGINE="+eng.name, "LEASEQ_DB="+where,
		"LEASEQ_OWNER="+owner, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	k.cmd.Stderr = os.Stderr
	if err := k.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(k.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if line == "ready" {
				close(k.ready)
			}
			if id, ok := strings.CutPrefix(line, "ran "); ok {
				id, _, _ = strings.Cut(id, " ")
				runs.mu.Lock()
				runs.runs[id]++
				runs.mu.Unlock()
				select {
				case runs.more <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { k.cmd.Process.Kill(); k.cmd.Wait() })
	return k
}

// stop sends SIGTERM and waits for the process to exit cleanly.
func (k *periodicChild) stop(t *testing.T) {
	t.Helper()
	if err := k.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, k.done, "a periodic process's output to end")
	if err := k.cmd.Wait(); err != nil {
		t.Fatalf("periodic process: %v", err)
	}
}

// TestPeriodicProcesses: three processes, one of them restarted midway,
// each with a pool listing the same Periodic on real time, enqueue exactly
// one job per slot: no slot's job is written or run twice, and none comes
// from before the Periodic was first seen.
func TestPeriodicProcesses(t *testing.T) { forEnginesInTurn(t, testPeriodicProcesses) }

func testPeriodicProcesses(t *testing.T, eng testEngine) {
	where := eng.fresh(t)
	q := openQueue(t, eng, where) // the schema, before the processes start
	runs := &periodicRuns{runs: map[string]int{}, more: make(chan struct{}, 1)}
	began := time.Now()
	var kids []*periodicChild
	for i := range 3 {
		kids = append(kids, startPeriodicChild(t, eng, where, fmt.Sprint("p", i), runs))
	}
	for _, k := range kids {
		waitFor(t, k.ready, "a periodic process to start")
	}
	waitRuns := func(n int) {
		t.Helper()
		for runs.distinct() < n {
			waitFor(t, runs.more, fmt.Sprintf("%d slots' jobs to run", n))
		}
	}
	waitRuns(10)
	kids[0].stop(t)
	kids[0] = startPeriodicChild(t, eng, where, "p3", runs)
	waitFor(t, kids[0].ready, "the restarted process to start")
	waitRuns(25)
	for _, k := range kids {
		k.stop(t)
	}

	jobs, err := q.List(context.Background(), leaseq.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	dups, gaps := 0, 0
	var first, last time.Time
	for _, j := range jobs {
		slot, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(j.ID, "beat@"))
		if err != nil || !strings.HasPrefix(j.ID, "beat@") {
			t.Fatalf("job %q is no slot's", j.ID)
		}
		if !j.RunAt.Equal(slot) || slot.Before(began.Truncate(periodicEvery)) {
			t.Fatalf("job %s of slot %s; want RunAt the slot, not before the Periodic was first seen at %s", fmtRow(j), slot, began)
		}
		if n := runs.runs[j.ID]; n > 1 || (j.Status == leaseq.StatusDone && (n != 1 || j.Attempts != 1)) {
			dups++
			t.Errorf("job %s ran %d times", fmtState(j), n)
		}
		if !last.IsZero() && slot.Sub(last) > periodicEvery {
			gaps += int(slot.Sub(last)/periodicEvery) - 1
		}
		if first.IsZero() {
			first = slot
		}
		last = slot
	}
	t.Logf("%s: %d slots from %s to %s, 4 processes (3 at once, one restarted), duplicates: %d, slots skipped while every pool was held up: %d",
		eng.name, len(jobs), first.Format("15:04:05.000"), last.Format("15:04:05.000"), dups, gaps)
	if len(jobs) < 25 {
		t.Fatalf("%d slots' jobs, want at least the 25 that ran", len(jobs))
	}
}

// TestPeriodicProcessesCancelPurge: while three processes offer the same
// Periodic's slots, and one after another is restarted (a pool that starts
// offers the latest slot), an operator cancels every other slot's job as
// soon as it sees it, and purges the cancelled and done jobs
// again and again: a purged slot's job is never written again, whether it
// was cancelled before it ran (token 0) or ran, and no slot's job runs
// twice (rule 53).
func TestPeriodicProcessesCancelPurge(t *testing.T) {
	forEnginesInTurn(t, testPeriodicProcessesCancelPurge)
}

func testPeriodicProcessesCancelPurge(t *testing.T, eng testEngine) {
	where := eng.fresh(t)
	q := openQueue(t, eng, where)
	runs := &periodicRuns{runs: map[string]int{}, more: make(chan struct{}, 1)}
	var kids []*periodicChild
	for i := range 3 {
		kids = append(kids, startPeriodicChild(t, eng, where, fmt.Sprint("p", i), runs))
	}
	for _, k := range kids {
		waitFor(t, k.ready, "a periodic process to start")
	}
	stop := make(chan struct{})
	opDone := make(chan periodicOp, 1)
	go func() { opDone <- cancelAndPurge(q, stop) }()
	for i := range 6 { // a restart every few slots
		for n := runs.distinct(); runs.distinct() < n+3; {
			waitFor(t, runs.more, "slots' jobs to run")
		}
		kids[i%3].stop(t)
		kids[i%3] = startPeriodicChild(t, eng, where, fmt.Sprint("p", 3+i), runs)
		waitFor(t, kids[i%3].ready, "a restarted periodic process to start")
	}
	close(stop)
	op := <-opDone
	for _, k := range kids {
		k.stop(t)
	}
	if op.err != nil {
		t.Fatal(op.err)
	}
	jobs, err := q.List(context.Background(), leaseq.Filter{Limit: leaseq.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if op.purged[j.ID] {
			t.Errorf("slot job %s was purged, and is there again: %s", j.ID, fmtState(j))
		}
	}
	runs.mu.Lock()
	defer runs.mu.Unlock()
	for id, n := range runs.runs {
		if n > 1 {
			t.Errorf("slot job %s ran %d times", id, n)
		}
	}
	t.Logf("%s: %d slots ran, %d cancelled, %d purged, %d jobs left", eng.name, len(runs.runs), op.cancelled, len(op.purged), len(jobs))
	if op.cancelled == 0 || len(op.purged) == 0 {
		t.Fatalf("%d cancelled, %d purged: want both", op.cancelled, len(op.purged))
	}
}

// periodicOp is what cancelAndPurge did.
type periodicOp struct {
	cancelled int
	purged    map[string]bool // the IDs of the jobs purged
	err       error
}

// cancelAndPurge cancels the pending or running job of every other slot and purges
// the cancelled and done jobs, over and over until stop closes.
func cancelAndPurge(q *leaseq.Queue, stop <-chan struct{}) periodicOp {
	ctx := context.Background()
	op := periodicOp{purged: map[string]bool{}}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return op
		default:
		}
		var live []leaseq.State
		for _, s := range []leaseq.Status{leaseq.StatusPending, leaseq.StatusLeased} {
			js, err := q.List(ctx, leaseq.Filter{Status: s, Limit: leaseq.MaxListLimit})
			if err != nil {
				return periodicOp{err: err}
			}
			live = append(live, js...)
		}
		for _, j := range live {
			if slot, _ := time.Parse(time.RFC3339Nano, strings.TrimPrefix(j.ID, "beat@")); slot.UnixMilli()/periodicEvery.Milliseconds()%2 == 0 {
				if err := q.Cancel(ctx, j.ID, "not this one"); err == nil {
					op.cancelled++
				}
			}
		}
		if n%4 == 0 {
			if err := purgeTerminal(ctx, q, op.purged); err != nil {
				return periodicOp{err: err}
			}
		}
		time.Sleep(periodicEvery / 10) // the operator's pace, not a wait for an event
	}
}

// purgeTerminal purges the done and quarantined jobs and notes the IDs it
// deleted: those listed as such before (their status can no longer change)
// whose last change came before the purge's bound.
func purgeTerminal(ctx context.Context, q *leaseq.Queue, purged map[string]bool) error {
	var ids []string
	for _, s := range []leaseq.Status{leaseq.StatusDone, leaseq.StatusQuarantined} {
		js, err := q.List(ctx, leaseq.Filter{Status: s, Limit: leaseq.MaxListLimit})
		if err != nil {
			return err
		}
		for _, j := range js {
			ids = append(ids, j.ID)
		}
	}
	before := time.Now().Add(time.Second) // every one listed
	n, err := q.Purge(ctx, before, leaseq.StatusDone, leaseq.StatusQuarantined)
	if err != nil {
		return err
	}
	if n < len(ids) {
		return fmt.Errorf("purge deleted %d jobs, want at least the %d listed", n, len(ids))
	}
	for _, id := range ids {
		purged[id] = true
	}
	return nil
}
