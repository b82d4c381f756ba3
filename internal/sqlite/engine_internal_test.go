package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// The root's suite tests the engine through leaseq.Queue; these check the
// engine's own calls directly, so that a fault shows here first.

// TestGroupCommitCallers: many goroutines' single calls, gathered into
// shared transactions, each get their own result.
func TestGroupCommitCallers(t *testing.T) {
	ctx := context.Background()
	e, q, clock := newTestEngine(t, time.Unix(1e9, 0), false)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			j := jobRow(fmt.Sprint("j", i), 0, clock.Now())
			if _, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{j}, One: true}); err != nil {
				errs <- err
				return
			}
			cs, err := e.JobClaim(ctx, engine.JobClaimParams{Queue: q, Owner: "w", Lease: 60000, Max: 1, Share: engine.ShareCalls})
			if err != nil || len(cs) != 1 {
				errs <- fmt.Errorf("claim: %d claims, %v", len(cs), err)
				return
			}
			c := cs[0]
			f := engine.Fenced{Kind: engine.FenceFinish, ID: c.ID, Owner: c.Owner, Token: c.Token}
			r, err := e.JobSettle(ctx, engine.JobSettleParams{Queue: q, Calls: []engine.Fenced{f}, Share: engine.ShareCalls})
			if err != nil || len(r) != 1 || !r[0].OK {
				errs <- fmt.Errorf("finish: %+v, %v", r, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := e.QueueStats(ctx, engine.QueueStatsParams{Queue: q.Name, Now: clock.Now()})
	if err != nil || st.Counts["done"] != n || e.WaitingCalls() != 0 {
		t.Fatalf("stats %+v, %v; %d waiting; want %d done", st, err, e.WaitingCalls(), n)
	}
}

// TestInsertDuplicate: a batch with a taken ID names the job and writes
// nothing; a single Enqueue in a group gets ErrDuplicate alone.
func TestInsertDuplicate(t *testing.T) {
	ctx := context.Background()
	e, q, clock := newTestEngine(t, time.Unix(1e9, 0), false)
	now := clock.Now()
	enqueue(t, e, q, jobRow("a", 0, now))
	bad, err := e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{jobRow("b", 0, now), jobRow("a", 0, now)}})
	if bad != 1 || !errors.Is(err, engine.ErrDuplicate) {
		t.Fatalf("batch with a taken ID: bad %d, %v; want 1, ErrDuplicate", bad, err)
	}
	if _, found, _ := e.JobGet(ctx, q.Name, "b"); found {
		t.Fatal("the batch's other job was written")
	}
	bad, err = e.JobInsertMany(ctx, engine.JobInsertManyParams{Queue: q, Jobs: []engine.JobRow{jobRow("a", 0, now)}, One: true})
	if bad != 0 || !errors.Is(err, engine.ErrDuplicate) {
		t.Fatalf("single Enqueue of a taken ID: bad %d, %v; want 0, ErrDuplicate", bad, err)
	}
}

// TestInsertTx: jobs written in the caller's transaction appear when it
// commits; a transaction on another file is refused with tx still usable.
func TestInsertTx(t *testing.T) {
	ctx := context.Background()
	e, q, clock := newTestEngine(t, time.Unix(1e9, 0), false)
	tx, err := e.dbh.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := engine.JobInsertTxParams{Queue: q, Jobs: []engine.JobRow{jobRow("t1", 0, clock.Now()), jobRow("t1", 0, clock.Now())}}
	if bad, err := e.JobInsertTx(ctx, tx, p); bad != 1 || !errors.Is(err, engine.ErrDuplicate) {
		t.Fatalf("repeated ID: bad %d, %v", bad, err)
	}
	p.Jobs = p.Jobs[:1]
	if bad, err := e.JobInsertTx(ctx, tx, p); bad != -1 || err != nil {
		t.Fatalf("after the refused call: bad %d, %v", bad, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	get(t, e, q, "t1")

	other, err := Open(filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer otx.Rollback()
	p.Jobs[0].ID = "t2"
	if _, err := e.JobInsertTx(ctx, otx, p); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a tx on another file: %v, want ErrInvalid", err)
	}
	if _, err := otx.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatalf("the other tx after the refusal: %v", err)
	}
}

// TestUpgrade: databases of schema versions 1 and 2 are upgraded to
// SchemaVersion, keeping their jobs.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	for file, jobs := range map[string]int{"schema-v1.db": 4, "schema-v2.db": 12} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			for _, suffix := range []string{"", "-journal"} {
				b, err := os.ReadFile(filepath.Join("..", "..", "testdata", file+suffix))
				if errors.Is(err, os.ErrNotExist) && suffix != "" {
					continue
				} else if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "q.db"+suffix), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			db, err := Open(filepath.Join(dir, "q.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			e, err := New(ctx, db, rootSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			defer e.Release()
			if err := e.SchemaMigrate(ctx); err != nil {
				t.Fatal(err)
			}
			v, err := e.SchemaVersion(ctx)
			var n int
			if err == nil {
				err = db.QueryRow("SELECT count(*) FROM leaseq_jobs").Scan(&n)
			}
			if err != nil || v != SchemaVersion || n != jobs {
				t.Fatalf("after the upgrade: version %d, %d jobs, %v; want %d, %d", v, n, err, SchemaVersion, jobs)
			}
		})
	}
}

// TestOperatorPurgeAndReads: a cancel, a refused requeue, a requeue, a
// purge, and the reads of what is left.
func TestOperatorPurgeAndReads(t *testing.T) {
	ctx := context.Background()
	e, q, clock := newTestEngine(t, time.Unix(1e9, 0), true)
	now := clock.Now()
	later := jobRow("later", 0, now)
	later.RunAt, later.Due = sql.NullInt64{Int64: now + 5000, Valid: true}, now+5000
	enqueue(t, e, q, jobRow("a", 0, now), jobRow("b", 0, now), later)
	op := func(kind engine.OperationKind, id string) engine.Refusal {
		r, err := e.JobOperate(ctx, engine.JobOperateParams{Queue: q, Kind: kind, ID: id, Reason: "stop"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := op(engine.OpRequeue, "a"); r.Applied || !r.Found || r.Status != "pending" {
		t.Fatalf("requeue of a pending job: %+v", r)
	}
	if r := op(engine.OpCancel, "a"); !r.Applied {
		t.Fatalf("cancel: %+v", r)
	}
	if r := op(engine.OpCancel, "nope"); r.Applied || r.Found {
		t.Fatalf("cancel of an unknown ID: %+v", r)
	}
	if s := get(t, e, q, "a"); s.Status != "quarantined" || s.Reason.String != "stop" {
		t.Fatalf("a after cancel: %+v", s)
	}
	clock.Set(time.UnixMilli(now + 1000))
	n, err := e.JobPurgeChunk(ctx, engine.JobPurgeChunkParams{Queue: q.Name, Status: "quarantined", Before: clock.Now()})
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	page, err := e.JobList(ctx, engine.JobListParams{Queue: q.Name, Limit: 10})
	if err != nil || len(page) != 2 || page[0].ID != "b" || page[1].ID != "later" {
		t.Fatalf("list: %+v, %v", page, err)
	}
	if _, err := e.JobList(ctx, engine.JobListParams{Queue: q.Name, AfterID: "a", Limit: 10}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("list after a purged ID: %v, want ErrNotFound", err)
	}
	if due, ok, err := e.JobNextDue(ctx, q.Name); err != nil || !ok || due != now+5000 {
		t.Fatalf("next due: %d %v %v", due, ok, err)
	}
	rows, err := e.QueueActivity(ctx, engine.QueueActivityParams{Queue: q.Name, Since: now / 60000 * 60000})
	if err != nil || len(rows) == 0 {
		t.Fatalf("activity: %+v, %v", rows, err)
	}
	names, err := e.QueueNames(ctx)
	if err != nil || len(names) != 1 || names[0] != "default" {
		t.Fatalf("queues: %v, %v", names, err)
	}
}
