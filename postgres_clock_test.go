package leaseq_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// hookClock is a ManualClock that runs a hook at its next reading: the
// moment a call reads the clock.
type hookClock struct {
	*leaseq.ManualClock
	mu   sync.Mutex
	hook func()
}

func (c *hookClock) Now() time.Time {
	c.mu.Lock()
	hook := c.hook
	c.hook = nil
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	return c.ManualClock.Now()
}

func (c *hookClock) atNextReading(hook func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hook = hook
}

// TestPostgresInjectedClockReadOnceHeld checks rule 8 in docs/rules.md on PostgreSQL with an injected clock: a call reads the clock only
// once it holds what it waits for — a fenced or an operator's call the
// job's row, a claim its connection — so that no wait leaves it judging at
// a stale instant, and calls on one job are judged at instants in the
// order they commit.
//
// Two processes act on one leased job: while one call is reading its
// clock, the other — whose clock reads a millisecond later — is made at
// once. The first must be judged first: the second waits for its row. Were
// the clock read before the row was held, the second would commit first
// and the first would be judged, at the earlier instant, on the row the
// later one left: a Finish refused at +100ms for a Cancel at +101ms.
func TestPostgresInjectedClockReadOnceHeld(t *testing.T) {
	t.Run("a finish, and a cancel made while it reads the clock", func(t *testing.T) {
		t.Parallel()
		p := newClockPair(t)
		c := p.claimed()
		var cancelErr error
		p.first.atNextReading(p.meanwhile(func() { cancelErr = p.second.Cancel(context.Background(), "j", "cancelled at +101ms") }))
		ok, err := p.firstQ.Finish(context.Background(), c)
		p.wait()
		if err != nil || !ok || !errors.Is(cancelErr, leaseq.ErrInvalid) {
			t.Fatalf("Finish at +100ms: %v, %v; Cancel at +101ms: %v; want the finish accepted and the cancel refused as ErrInvalid "+
				"(the job was done): calls on one job are judged in the order they commit", ok, err, cancelErr)
		}
	})
	t.Run("a cancel, and a finish made while it reads the clock", func(t *testing.T) {
		t.Parallel()
		p := newClockPair(t)
		c := p.claimed()
		var finished bool
		var finishErr error
		p.first.atNextReading(p.meanwhile(func() { finished, finishErr = p.second.Finish(context.Background(), c) }))
		err := p.firstQ.Cancel(context.Background(), "j", "cancelled at +100ms")
		p.wait()
		if err != nil || finished || finishErr != nil {
			t.Fatalf("Cancel at +100ms: %v; Finish at +101ms: %v, %v; want the cancel accepted and the finish refused", err, finished, finishErr)
		}
	})
	t.Run("a claim", func(t *testing.T) {
		t.Parallel()
		p := newClockPair(t)
		// Enqueued from another *sql.DB: an Enqueue's notification (rule
		// 56) keeps a connection of its handle's for a while after it.
		other, err := sql.Open("pgx", p.url)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		oq, err := leaseq.New(context.Background(), other, leaseq.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer oq.Close()
		if err := oq.Enqueue(context.Background(), leaseq.Job{ID: "j"}); err != nil {
			t.Fatal(err)
		}
		inUse := -1
		p.first.atNextReading(func() { inUse = p.db.Stats().InUse })
		if _, ok, err := p.firstQ.Claim(context.Background(), "w", time.Second); err != nil || !ok {
			t.Fatalf("Claim: %v, %v", ok, err)
		}
		if inUse != 1 {
			t.Fatalf("the claim read the clock with %d connections in use, want 1: its own, held before the reading", inUse)
		}
	})
}

// clockPair is two queues on one PostgreSQL database, as two processes
// would have, with clocks one millisecond apart: first at +100ms, second at
// +101ms.
type clockPair struct {
	t              *testing.T
	db             *sql.DB
	url            string // db's
	first          *hookClock
	firstQ, second *leaseq.Queue
	done           chan struct{}
}

func newClockPair(t *testing.T) *clockPair {
	t.Helper()
	url := pgtest.URL(t)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &clockPair{t: t, db: db, url: url, first: &hookClock{ManualClock: leaseq.NewManualClock(t0)}, done: make(chan struct{})}
	if p.firstQ, err = leaseq.New(context.Background(), db, leaseq.Options{Clock: p.first}); err != nil {
		t.Fatal(err)
	}
	if p.second, err = leaseq.New(context.Background(), db, leaseq.Options{Clock: leaseq.NewManualClock(ms(101))}); err != nil {
		t.Fatal(err)
	}
	return p
}

// claimed enqueues job j and claims it at t0 for 150ms, then sets the
// first clock to +100ms.
func (p *clockPair) claimed() leaseq.Claim {
	p.t.Helper()
	ctx := context.Background()
	if err := p.firstQ.Enqueue(ctx, leaseq.Job{ID: "j"}); err != nil {
		p.t.Fatal(err)
	}
	c, ok, err := p.firstQ.Claim(ctx, "w", 150*time.Millisecond)
	if err != nil || !ok {
		p.t.Fatalf("Claim: %v, %v", ok, err)
	}
	p.first.Set(ms(100))
	return c
}

// meanwhile is a hook that makes call on a goroutine of its own and
// returns once call has returned or is waiting for a lock, whichever comes
// first.
func (p *clockPair) meanwhile(call func()) func() {
	return func() {
		go func() {
			defer close(p.done)
			call()
		}()
		for give := time.Now().Add(10 * time.Second); time.Now().Before(give); time.Sleep(time.Millisecond) {
			select {
			case <-p.done:
				return
			default:
			}
			var waiting bool
			err := p.db.QueryRow(`SELECT EXISTS (SELECT FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
			if err != nil || waiting {
				return
			}
		}
		p.t.Error("the call made meanwhile neither returned nor waited for a lock within 10s")
	}
}

// wait waits for the call made meanwhile to return.
func (p *clockPair) wait() {
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatal("the call made meanwhile did not return within 10s")
	}
}
