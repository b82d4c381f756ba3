package leaseq_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
	"github.com/leaseq/leaseq/pgxlisten"
)

// TestPostgresOneConnection runs every kind of call on a pool of one
// connection, on the server's clock: none may need a second connection,
// for the server's clock or anything else — it would wait for the one the
// call holds (a wait of seconds, then the host's clock in its place). The
// bound on each call is generous; a call normally takes milliseconds. The
// instants an operator's calls store are the server's, read within the
// call.
func TestPostgresOneConnection(t *testing.T) {
	t.Parallel()
	q, db := pgQueue(t, leaseq.Options{})
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	const bound = 4 * time.Second
	timed := func(what string, call func() error) {
		t.Helper()
		began := time.Now()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if took := time.Since(began); took > bound {
			t.Fatalf("%s on a pool of one connection took %v, want under %v", what, took, bound)
		}
	}
	// Old enough that the server's clock is read again by the next call.
	time.Sleep(1100 * time.Millisecond) // the clock's refresh interval, not a wait for an event
	timed("Enqueue", func() error { return q.Enqueue(ctx, leaseq.Job{ID: "a"}) })
	timed("EnqueueBatch", func() error { return q.EnqueueBatch(ctx, []leaseq.Job{{ID: "b"}, {ID: "c"}, {ID: "d"}}) })
	timed("EnqueueTx", func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := q.EnqueueTx(ctx, tx, leaseq.Job{ID: "e"}); err != nil {
			return err
		}
		return tx.Commit()
	})
	var a, b leaseq.Claim
	timed("Claim", func() error {
		var err error
		a, _, err = q.Claim(ctx, "w", time.Minute)
		return err
	})
	timed("ClaimBatch", func() error {
		cs, err := q.ClaimBatch(ctx, "w", time.Minute, 2)
		if len(cs) == 2 {
			b = cs[1]
		}
		return err
	})
	timed("Extend", func() error { _, _, err := q.Extend(ctx, a, time.Minute); return err })
	timed("Finish", func() error { _, err := q.Finish(ctx, a); return err })
	timed("Release", func() error { _, err := q.Release(ctx, b, 0, "again"); return err })
	c, _, err := q.Claim(ctx, "w", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	timed("Fail", func() error { _, err := q.Fail(ctx, c, "broken"); return err })
	for round := range 3 {
		time.Sleep(1100 * time.Millisecond) // the clock's refresh interval, not a wait for an event
		before := serverNow(t, db)
		timed("Requeue", func() error { return q.Requeue(ctx, c.ID) })
		timed("Cancel", func() error { return q.Cancel(ctx, c.ID, "stop") })
		after := serverNow(t, db)
		if s := mustGet(t, q, c.ID); s.UpdatedAt.Before(before) || s.UpdatedAt.After(after) || s.Status != leaseq.StatusQuarantined {
			t.Fatalf("round %d: row %s; want cancelled at the server's instant, between %v and %v", round, fmtState(s), before, after)
		}
	}
	timed("Purge", func() error { _, err := q.Purge(ctx, time.Now().Add(time.Hour), leaseq.StatusDone); return err })
	timed("Get", func() error { _, err := q.Get(ctx, "b"); return err })
	timed("Stats", func() error { _, err := q.Stats(ctx); return err })
	timed("List", func() error { _, err := q.List(ctx, leaseq.Filter{}); return err })
}

// TestPostgresOneConnectionEnqueues: 40 Enqueues in a row on a pool of one
// connection all end within a context of 5 s (a call takes milliseconds),
// and their notifications (rule 56) still reach a Listener: the sender
// holds a limited pool's connection only while its NOTIFY runs. Before, it
// kept the connection for half a second after each round in case more
// came, each Enqueue waited for it, and the 40 took 10 s, so the context
// ended before the 20th.
func TestPostgresOneConnectionEnqueues(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	heard := make(chan string, 64)
	l := pgxlisten.New(url) // a connection of its own, outside the pool
	t.Cleanup(func() { l.Close() })
	l.Listen("leaseq", func(payload string) {
		select {
		case heard <- payload:
		default:
		}
	})
	if p := waitFor(t, heard, "the Listener to connect"); p != "" {
		t.Fatalf("first payload %q, want the look-once \"\"", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 40 {
		if err := q.Enqueue(ctx, leaseq.Job{ID: fmt.Sprintf("j%02d", i)}); err != nil {
			t.Fatalf("Enqueue %d of 40 on a pool of one connection, within 5 s: %v", i+1, err)
		}
	}
	if p := waitFor(t, heard, "the Enqueues' notification"); p != "wdefault" {
		t.Fatalf("payload %q, want \"wdefault\"", p)
	}
}
