package leaseq_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// Tests of rule 56 in docs/rules.md: what one process does reaches the
// others' pools at once. Every change is made by a child process (this
// test binary run again, TestChildRemote); the pools under test have a
// PollInterval of an hour, so only a cross-process wake-up can explain
// them finding the change within the tests' bounds.

// remoteDo runs the calls of do (e.g. "enqueue:a", "pause", "resume",
// "cancel:a"), in order, in a child process on the database of eng at
// where.
func remoteDo(t *testing.T, eng testEngine, where string, do ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildRemote$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEASEQ_CHILD=remote", "LEASEQ_REMOTE_ENGINE="+eng.name,
		"LEASEQ_REMOTE_DB="+where, "LEASEQ_REMOTE_DO="+strings.Join(do, ","))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process %v: %v\n%s", do, err, out)
	}
}

// TestChildRemote is remoteDo's child: it does nothing unless started by it.
func TestChildRemote(t *testing.T) {
	if os.Getenv("LEASEQ_CHILD") != "remote" {
		return
	}
	var eng testEngine
	for _, e := range allEngines {
		if e.name == os.Getenv("LEASEQ_REMOTE_ENGINE") {
			eng = e
		}
	}
	q := openQueue(t, eng, os.Getenv("LEASEQ_REMOTE_DB"))
	ctx := context.Background()
	for _, do := range strings.Split(os.Getenv("LEASEQ_REMOTE_DO"), ",") {
		verb, id, _ := strings.Cut(do, ":")
		var err error
		switch verb {
		case "enqueue":
			err = q.Enqueue(ctx, leaseq.Job{ID: id})
		case "enqueuetx": // in a transaction of the caller's, committed after a pause
			err = enqueueTxLate(ctx, q, id)
		case "pause":
			err = q.Pause(ctx)
		case "resume":
			err = q.Resume(ctx)
		case "cancel":
			err = q.Cancel(ctx, id, "cancelled by another process")
		default:
			t.Fatalf("unknown call %q", do)
		}
		if err != nil {
			t.Fatalf("%s: %v", do, err)
		}
	}
}

// enqueueTxLate enqueues id with EnqueueTx in a transaction it commits a
// moment later, as a service's own transaction would.
func enqueueTxLate(ctx context.Context, q *leaseq.Queue, id string) error {
	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: id}); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // the service's other work, before its commit
	return tx.Commit()
}

// remoteQueue is a queue on a fresh database of eng, with the Listener a
// PostgreSQL queue needs to hear other processes, and where it is.
func remoteQueue(t *testing.T, eng testEngine) (*leaseq.Queue, string) {
	t.Helper()
	where := eng.fresh(t)
	db := eng.open(t, where)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Listener: testListener(t, eng, where)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q, where
}

// TestRemoteEnqueueWakesPool: a job enqueued by another process, also with
// EnqueueTx in a transaction it commits later, is started by this one's
// idle pool, whose PollInterval is an hour.
func TestRemoteEnqueueWakesPool(t *testing.T) { forEnginesInTurn(t, testRemoteEnqueueWakesPool) }

func testRemoteEnqueueWakesPool(t *testing.T, eng testEngine) {
	q, where := remoteQueue(t, eng)
	started := make(chan string, 4)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 2, PollInterval: time.Hour},
		func(_ context.Context, c leaseq.Claim) error {
			started <- c.ID
			return nil
		})
	waitParked(t)
	for _, do := range []string{"enqueue:a", "enqueue:b", "enqueuetx:c"} {
		_, id, _ := strings.Cut(do, ":")
		remoteDo(t, eng, where, do)
		if got := waitWithin(t, started, 20*time.Second, "the pool to start a job another process enqueued"); got != id {
			t.Fatalf("started %s, want %s", got, id)
		}
		waitParked(t)
	}
}

// TestRemotePause: a Pause made by another process stops this one's pool
// from claiming; its running handler's result is recorded; another
// process's Resume wakes it.
func TestRemotePause(t *testing.T) { forEnginesInTurn(t, testRemotePause) }

func testRemotePause(t *testing.T, eng testEngine) {
	q, where := remoteQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "running"})
	started, proceed := make(chan string, 4), make(chan struct{})
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 2, PollInterval: time.Hour},
		func(_ context.Context, c leaseq.Claim) error {
			started <- c.ID
			if c.ID == "running" {
				<-proceed
			}
			return nil
		})
	waitFor(t, started, "the first handler to start")
	remoteDo(t, eng, where, "pause", "enqueue:held")
	close(proceed)
	waitUntil(t, 10*time.Second, "the running handler's result to be recorded", func() bool {
		return mustGet(t, q, "running").Status == leaseq.StatusDone
	})
	waitParked(t)
	if s := mustGet(t, q, "held"); s.Status != leaseq.StatusPending || s.Token != 0 {
		t.Fatalf("job %s while another process paused the queue; want never claimed", fmtState(s))
	}
	select {
	case id := <-started:
		t.Fatalf("job %s started while the queue was paused", id)
	default:
	}
	remoteDo(t, eng, where, "resume")
	if id := waitWithin(t, started, 20*time.Second, "another process's Resume to wake the pool"); id != "held" {
		t.Fatalf("started %s after Resume, want held", id)
	}
}

// TestRemoteCancel: a Cancel made by another process ends the handler of
// the job in this one with ErrLeaseLost at once, not at its next heartbeat
// (the lease is an hour, a heartbeat every 20 minutes).
func TestRemoteCancel(t *testing.T) { forEnginesInTurn(t, testRemoteCancel) }

func testRemoteCancel(t *testing.T, eng testEngine) {
	q, where := remoteQueue(t, eng)
	mustEnqueue(t, q, leaseq.Job{ID: "a"})
	started, cause := make(chan struct{}), make(chan error, 1)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: time.Hour, PollInterval: time.Hour},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
	waitFor(t, started, "the handler to start")
	remoteDo(t, eng, where, "cancel:a")
	if err := waitWithin(t, cause, 20*time.Second, "the handler's context to end after another process's Cancel"); !errors.Is(err, leaseq.ErrLeaseLost) {
		t.Fatalf("the handler's context ended with %v, want ErrLeaseLost", err)
	}
	if s := mustGet(t, q, "a"); s.Status != leaseq.StatusQuarantined || s.Reason != "cancelled by another process" {
		t.Fatalf("job %s; want quarantined by the Cancel", fmtState(s))
	}
}
