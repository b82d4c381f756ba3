package leaseq_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// SQLite only: the connection SQLite's store keeps between writes, and the
// file locks it must not hold.

// TestWriteConnHoldsNoLock: the connection a Queue keeps between writes,
// with its prepared statements, holds no SQLite lock. Right after each kind
// of write, another connection with no busy timeout at all can take the
// write lock and commit: its COMMIT needs an EXCLUSIVE lock, which it could
// not get while any statement of ours still held a read lock.
func TestWriteConnHoldsNoLock(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a", MaxAttempts: 1})
	other, err := sql.Open("sqlite", "file:"+f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	if _, err := other.Exec("CREATE TABLE IF NOT EXISTS other (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	writeFromOutside := func(after string) {
		t.Helper()
		if got := f.db.Stats().InUse; got != 1 {
			t.Fatalf("after %s: %d connections in use, want 1 (the pinned write connection)", after, got)
		}
		if _, err := other.Exec("INSERT INTO other VALUES (1)"); err != nil {
			t.Fatalf("after %s, another connection's write: %v, want it to commit at once", after, err)
		}
	}
	c := f.mustClaim("A", time.Second)
	writeFromOutside("Claim")
	f.finish(c)
	writeFromOutside("Finish")
	f.enqueue(leaseq.Job{ID: "b", MaxAttempts: 1})
	writeFromOutside("Enqueue")
	f.mustClaim("A", time.Second)
	f.at(1000).claim("A", time.Second) // quarantines b
	writeFromOutside("a quarantining Claim")
	if err := f.q.Requeue(f.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	writeFromOutside("Requeue")
	if _, err := f.q.ClaimBatch(f.ctx, "A", time.Second, 10); err != nil {
		t.Fatal(err)
	}
	writeFromOutside("ClaimBatch")
}

// TestWriteConnReleasedWhenIdle: the pinned connection goes back to the
// pool once writes stop.
func TestWriteConnReleasedWhenIdle(t *testing.T) {
	defer leaseq.SetWriteConnIdle(10 * time.Millisecond)()
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.enqueue(leaseq.Job{ID: "a"})
	deadline := time.Now().Add(10 * time.Second)
	for f.db.Stats().InUse != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("10s after the last write: %d connections in use, want 0", f.db.Stats().InUse)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mustClaim("A", time.Second) // and a new one is pinned when writes resume
	if got := f.db.Stats().InUse; got != 1 {
		t.Fatalf("after a Claim: %d connections in use, want 1", got)
	}
}

// TestWriteConnNotPinnedInSmallPool: with the pool capped below four
// connections, nothing is kept between writes, so the caller's own queries
// and Get never wait for a connection the queue sits on.
func TestWriteConnNotPinnedInSmallPool(t *testing.T) {
	f := newFixture(t, sqliteEngine, leaseq.Options{})
	f.db.SetMaxOpenConns(1)
	f.enqueue(leaseq.Job{ID: "a"})
	f.mustClaim("A", time.Second)
	if got := f.db.Stats().InUse; got != 0 {
		t.Fatalf("after a Claim with MaxOpenConns(1): %d connections in use, want 0", got)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	if _, err := f.q.Get(ctx, "a"); err != nil {
		t.Fatalf("Get on the single-connection pool: %v", err)
	}
}
