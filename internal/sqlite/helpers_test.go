package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/engine"
)

// testClock is a clock a test sets, in Unix milliseconds.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) Now() int64      { return c.ms.Load() }
func (c *testClock) Set(t time.Time) { c.ms.Store(t.UnixMilli()) }

// rootSchema is the create script the root hands New: its schema.sql,
// read from the file, as this package's tests cannot import the root.
func rootSchema(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newTestEngine opens a database file of the test's own, with the schema,
// and returns its engine and a queue named "default" on clock, which starts
// at t0.
func newTestEngine(t *testing.T, t0 time.Time, noGroup bool) (*Engine, engine.Queue, *testClock) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e, err := New(ctx, db, rootSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Release)
	if err := e.SchemaMigrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.DatabaseIdentify(ctx); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{}
	clock.Set(t0)
	return e, engine.Queue{Name: "default", Clock: engine.Clock{Now: clock.Now}, NoGroup: noGroup}, clock
}

// jobRow is the row the root writes for a job with only an ID and
// MaxAttempts (0: the root's default, 3), enqueued at now and due at once.
func jobRow(id string, maxAttempts int, now int64) engine.JobRow {
	if maxAttempts == 0 {
		maxAttempts = 3
	}
	return engine.JobRow{ID: id, Payload: []byte{}, MaxAttempts: maxAttempts, Due: now, Created: now}
}

// enqueue writes jobs of q at q's clock, as EnqueueBatch does.
func enqueue(t *testing.T, e *Engine, q engine.Queue, jobs ...engine.JobRow) {
	t.Helper()
	if _, err := e.JobInsertMany(context.Background(), engine.JobInsertManyParams{Queue: q, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
}

// get reads the row of job id of q.
func get(t *testing.T, e *Engine, q engine.Queue, id string) engine.StateRow {
	t.Helper()
	s, found, err := e.JobGet(context.Background(), q.Name, id)
	if err != nil || !found {
		t.Fatalf("get %s: found %v, %v", id, found, err)
	}
	return s
}
