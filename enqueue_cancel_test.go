package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// TestCancelledEnqueueAnswersWhatHappened checks the errors table's
// cancelled context for Enqueue and EnqueueBatch: a call answers with its
// context's error only when nothing of it was written, and nil only when
// all of it was. Each round cancels the call's context at a random point
// (before the call, or up to 3ms into it) and checks the answer against the
// table; both answers must be seen. The queues run on the injected clock
// and on none (the host's, the server's on PostgreSQL).
func TestCancelledEnqueueAnswersWhatHappened(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		for _, clock := range []string{"manual", "system"} {
			for _, batch := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/batch=%v", clock, batch), func(t *testing.T) {
					f := clockFixture(t, e, clock)
					cancelledEnqueues(t, f, batch)
				})
			}
		}
	})
}

// clockFixture is a fixture whose queue runs on the injected clock
// ("manual") or on none ("system": the host's, the server's on
// PostgreSQL).
func clockFixture(t *testing.T, e testEngine, clock string) *fixture {
	t.Helper()
	f := newFixture(t, e, leaseq.Options{})
	if clock == "system" {
		q, err := leaseq.New(f.ctx, f.db, leaseq.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		f.q = q
	}
	return f
}

// cancelledEnqueues runs the rounds of TestCancelledEnqueueAnswersWhatHappened
// on f.
func cancelledEnqueues(t *testing.T, f *fixture, batch bool) {
	const rounds = 300
	written, cancelled := 0, 0
	for round := range rounds {
		jobs := []leaseq.Job{{ID: fmt.Sprintf("r%03d", round), Payload: []byte("p")}}
		if batch {
			jobs = append(jobs, leaseq.Job{ID: jobs[0].ID + "b"}, leaseq.Job{ID: jobs[0].ID + "c"})
		}
		ctx, cancel := context.WithCancel(f.ctx)
		if d := rand.N(4 * time.Millisecond); d < time.Millisecond {
			cancel()
		} else {
			time.AfterFunc(d-time.Millisecond, cancel)
		}
		var err error
		if batch {
			err = f.q.EnqueueBatch(ctx, jobs)
		} else {
			err = f.q.Enqueue(ctx, jobs[0])
		}
		cancel()
		present := 0
		for _, j := range jobs {
			_, gerr := f.q.Get(f.ctx, j.ID)
			switch {
			case gerr == nil:
				present++
			case !errors.Is(gerr, leaseq.ErrNotFound):
				t.Fatal(gerr)
			}
		}
		switch {
		case err == nil && present == len(jobs):
			written++
		case errors.Is(err, context.Canceled) && present == 0:
			cancelled++
		default:
			t.Fatalf("round %d: the call answered %v with %d of its %d jobs in the table", round, err, present, len(jobs))
		}
	}
	t.Logf("%d rounds: %d written, %d cancelled with nothing written", rounds, written, cancelled)
	if written == 0 || cancelled == 0 {
		t.Errorf("%d rounds written, %d cancelled: want both", written, cancelled)
	}
}

// TestPostgresEnqueueCutShortFindsOut checks what an Enqueue or
// EnqueueBatch on PostgreSQL answers when its statement does not answer
// within a second of the end of its context. The driver then gives up on
// the statement and asks the server to cancel it; the call reads whether it
// was written once the statement has ended. Cancelled while it waits on the
// unique index for another transaction's uncommitted job of the same ID,
// the statement writes nothing, and the call answers with its context's
// error. A trigger that waits for a lock the test holds and goes on waiting
// when cancelled stands for a statement the cancellation does not stop (it
// came too late, say): the call's read waits for it to end, and the answer
// says what it did, nil exactly when the job is in the table; while it
// still has not ended a second later, the call says it cannot tell and the
// answer wraps no context error (or, if it has ended after all, what it
// did).
func TestPostgresEnqueueCutShortFindsOut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		batch    bool
		stubborn bool // the statement outlives its cancellation
		release  bool // the test lets go while the call's read waits
	}{
		{"cancelled", false, false, false},
		{"batch cancelled", true, false, false},
		{"outlives", false, true, true},
		{"batch outlives", true, true, true},
		{"still running", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			q, db := pgQueue(t, leaseq.Options{})
			hold, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Rollback()
			if c.stubborn {
				stubbornInserts(t, db, hold)
			} else if err := q.EnqueueTx(ctx, hold, leaseq.Job{ID: "x", Payload: []byte("other")}); err != nil {
				t.Fatal(err)
			}
			answer := make(chan error, 1)
			go func() {
				cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				mine := leaseq.Job{ID: "x", Payload: []byte("mine")}
				if c.batch {
					answer <- q.EnqueueBatch(cctx, []leaseq.Job{mine, {ID: "y", Payload: []byte("mine")}})
				} else {
					answer <- q.Enqueue(cctx, mine)
				}
			}()
			var got error
			answered := false
			if c.release {
				// The statement may end before the call reads, a
				// cancellation that came before it entered the trigger.
				answered, got = waitForMarkWait(t, db, answer)
				hold.Rollback()
			}
			if !answered {
				got = <-answer
			}
			hold.Rollback()
			if got != nil && strings.Contains(got.Error(), "not known") {
				if !c.stubborn || c.release || errors.Is(got, context.DeadlineExceeded) {
					t.Fatalf("answer %v; want what happened, or for a statement still running an error saying it is not known, with no context error", got)
				}
				return
			}
			// The call found out (a statement still running may have
			// ended before its read, as the server noticed the client
			// had gone): what it says is final.
			wantAnswerMatchesTable(t, q, got)
		})
	}
}

// stubbornInserts makes every insert into leaseq_jobs of db wait until
// hold ends, and go on waiting when cancelled.
func stubbornInserts(t *testing.T, db *sql.DB, hold *sql.Tx) {
	t.Helper()
	for _, stmt := range []string{`CREATE FUNCTION stubborn() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			BEGIN
				PERFORM pg_advisory_xact_lock_shared(7);
			EXCEPTION WHEN query_canceled THEN
				PERFORM pg_advisory_xact_lock_shared(7);
			END;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER stubborn BEFORE INSERT ON leaseq_jobs FOR EACH ROW EXECUTE FUNCTION stubborn()`} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hold.Exec("SELECT pg_advisory_xact_lock(7)"); err != nil {
		t.Fatal(err)
	}
}

// wantAnswerMatchesTable fails t unless the answer of an enqueue of job x
// with the payload "mine" says what the table holds: nil with that job
// there, the context's error without it.
func wantAnswerMatchesTable(t *testing.T, q *leaseq.Queue, answer error) {
	t.Helper()
	j, err := q.Get(context.Background(), "x")
	mine := err == nil && string(j.Payload) == "mine"
	if err != nil && !errors.Is(err, leaseq.ErrNotFound) {
		t.Fatal(err)
	}
	switch {
	case answer == nil && mine, errors.Is(answer, context.DeadlineExceeded) && !mine:
	default:
		t.Fatalf("answer %v; the call's job in the table: %v", answer, mine)
	}
	t.Logf("answer %v; the call's job in the table: %v", answer, mine)
}

// waitForMarkWait waits until a backend of db's database waits for an
// advisory lock in share mode, an enqueue cut short reading once its
// statement ends, or until the call answers first, and says whether it did
// and with what.
func waitForMarkWait(t *testing.T, db *sql.DB, answer <-chan error) (answered bool, got error) {
	t.Helper()
	for give := time.Now().Add(20 * time.Second); time.Now().Before(give); {
		var waiting bool
		err := db.QueryRow(`SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE a.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted
			  AND l.mode = 'ShareLock' AND a.query LIKE '%pg_advisory_xact_lock_shared($1)%')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return false, nil
		}
		select {
		case err := <-answer:
			t.Logf("the call answered before its read waited: %v", err)
			return true, err
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("no enqueue waited for its statement to end, nor answered, within 20s")
	return false, nil
}
