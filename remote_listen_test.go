package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
	"github.com/leaseq/leaseq/pgxlisten"
)

// testListener is the Listener of a queue of eng at where: on PostgreSQL a
// pgxlisten.Listener, closed when the test ends; none on SQLite, whose
// pools watch the file.
func testListener(t *testing.T, eng testEngine, where string) leaseq.Listener {
	t.Helper()
	if eng.name != "postgres" {
		return nil
	}
	l := pgxlisten.New(where)
	t.Cleanup(func() { l.Close() })
	return l
}

// listenedQueue is a queue on a fresh PostgreSQL database with a
// pgxlisten.Listener, both closed when the test ends.
func listenedQueue(t *testing.T) (where string, db *sql.DB, l *pgxlisten.Listener, q *leaseq.Queue) {
	t.Helper()
	where = postgresEngine.fresh(t)
	db = postgresEngine.open(t, where)
	l = pgxlisten.New(where)
	t.Cleanup(func() { l.Close() })
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Listener: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return where, db, l, q
}

// TestRemoteListenerReconnects: the Listener's connection killed under a
// running pool (pg_terminate_backend) loses nothing: a job enqueued by
// another process while it reconnects is started once it is back (the
// pool looks once after every reconnect), and so is one enqueued after.
func TestRemoteListenerReconnects(t *testing.T) {
	where, db, l, q := listenedQueue(t)
	started := make(chan string, 4)
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour},
		func(_ context.Context, c leaseq.Claim) error {
			started <- c.ID
			return nil
		})
	waitUntil(t, 20*time.Second, "the Listener to connect", func() bool { return l.PID() != 0 })
	waitParked(t)
	pid := l.PID()
	if _, err := db.Exec("SELECT pg_terminate_backend($1)", int64(pid)); err != nil {
		t.Fatal(err)
	}
	remoteDo(t, postgresEngine, where, "enqueue:during")
	if got := waitWithin(t, started, 30*time.Second, "a job enqueued while the Listener reconnected"); got != "during" {
		t.Fatalf("started %s, want during", got)
	}
	waitUntil(t, 30*time.Second, "the Listener to reconnect", func() bool { return l.PID() != 0 && l.PID() != pid })
	waitParked(t)
	remoteDo(t, postgresEngine, where, "enqueue:after")
	if got := waitWithin(t, started, 30*time.Second, "a job enqueued after the Listener reconnected"); got != "after" {
		t.Fatalf("started %s, want after", got)
	}
}

// TestRemoteListenerKilledOften: the Listener's connection killed nine
// times in a row (pg_terminate_backend), each time followed at once by
// another process's Enqueue, Resume or Cancel, which this process's pool
// (PollInterval and heartbeat 20 minutes or more) must see within
// killedBound every time: the Listener reconnects after its shortest wait
// after each loss of a good connection, and the pools look once after
// each reconnect. Before, the wait doubled with each loss (100 ms … 12.8 s
// for the eighth), and the eighth wake-up came too late.
func TestRemoteListenerKilledOften(t *testing.T) {
	where, db, l, q := listenedQueue(t)
	ctx := context.Background()
	started, lost := make(chan string, 16), make(chan error, 16)
	_, logger := newLogSink() // each cancelled handler's lost lease is logged
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, PollInterval: time.Hour, Lease: time.Hour, Heartbeat: 20 * time.Minute, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			started <- c.ID
			if strings.HasPrefix(c.ID, "cancel") { // runs until another process cancels it
				<-ctx.Done()
				lost <- context.Cause(ctx)
			}
			return nil
		})
	const killedBound = 10 * time.Second
	pid := uint32(0)
	kill := func() {
		t.Helper()
		waitUntil(t, 20*time.Second, "the Listener to connect", func() bool { return l.PID() != 0 && l.PID() != pid })
		pid = l.PID()
		if _, err := db.Exec("SELECT pg_terminate_backend($1)", int64(pid)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 9 {
		id := fmt.Sprintf("%d", i)
		switch i % 3 {
		case 0:
			waitParked(t)
			kill()
			remoteDo(t, postgresEngine, where, "enqueue:enqueue"+id)
			if got := waitWithin(t, started, killedBound, "the job another process enqueued after kill "+id); got != "enqueue"+id {
				t.Fatalf("started %s, want enqueue%s", got, id)
			}
		case 1:
			if err := q.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			mustEnqueue(t, q, leaseq.Job{ID: "resume" + id})
			waitParked(t)
			kill()
			remoteDo(t, postgresEngine, where, "resume")
			if got := waitWithin(t, started, killedBound, "the job of the queue another process resumed after kill "+id); got != "resume"+id {
				t.Fatalf("started %s, want resume%s", got, id)
			}
		case 2:
			mustEnqueue(t, q, leaseq.Job{ID: "cancel" + id})
			if got := waitFor(t, started, "cancel"+id+"'s handler to start"); got != "cancel"+id {
				t.Fatalf("started %s, want cancel%s", got, id)
			}
			kill()
			remoteDo(t, postgresEngine, where, "cancel:cancel"+id)
			if err := waitWithin(t, lost, killedBound, "the handler of the job another process cancelled after kill "+id); !errors.Is(err, leaseq.ErrLeaseLost) {
				t.Fatalf("cause %v, want ErrLeaseLost", err)
			}
		}
	}
}

// TestRemoteServerRestart: after the PostgreSQL server restarts under a
// running pool, its Listener reconnects on its own and a job another
// process enqueues is started at once again. It restarts the server every
// test of the process shares, so it runs alone.
func TestRemoteServerRestart(t *testing.T) {
	where, db, l, q := listenedQueue(t)
	started := make(chan string, 4)
	_, logger := newLogSink() // the claims the restart cuts are logged, and retried
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", PollInterval: time.Hour, Logger: logger},
		func(_ context.Context, c leaseq.Claim) error {
			started <- c.ID
			return nil
		})
	waitUntil(t, 20*time.Second, "the Listener to connect", func() bool { return l.PID() != 0 })
	pid := l.PID()
	db.SetMaxIdleConns(0) // no connection the restart cuts is used again
	pgtest.Restart(t)
	db.SetMaxIdleConns(2)
	waitUntil(t, 60*time.Second, "the Listener to reconnect", func() bool { return l.PID() != 0 && l.PID() != pid })
	remoteDo(t, postgresEngine, where, "enqueue:after-restart")
	if got := waitWithin(t, started, 30*time.Second, "a job enqueued after the restart"); got != "after-restart" {
		t.Fatalf("started %s, want after-restart", got)
	}
}

// TestRemoteHeartbeatStillGuards: on PostgreSQL without a Listener no
// wake-up reports another process's change, and the heartbeat's refusal
// still ends the handler of a job taken from it (rule 30).
func TestRemoteHeartbeatStillGuards(t *testing.T) {
	q := realQueue(t, postgresEngine)
	mustEnqueue(t, q, leaseq.Job{ID: "c"})
	started, cause := make(chan struct{}), make(chan error, 1)
	sink, logger := newLogSink()
	runWork(t, q, leaseq.WorkerOptions{Owner: "w", Lease: 10 * time.Second, Heartbeat: 50 * time.Millisecond, Logger: logger},
		func(ctx context.Context, c leaseq.Claim) error {
			close(started)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil
		})
	waitFor(t, started, "the handler to start")
	// Another process's Cancel as its SQL alone: nothing announces it.
	if _, err := q.DB().Exec("UPDATE leaseq_jobs SET status = 'quarantined', ready = 0, reason = 'by hand' WHERE id = 'c'"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, cause, "the handler's context to end"); !errors.Is(err, leaseq.ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", err)
	}
	sink.waitFor(t, "the refused extension at Warn, naming the job", record(slog.LevelWarn, "extension refused", "c"))
}
