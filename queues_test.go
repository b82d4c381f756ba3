package leaseq

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/sqlite"
)

// TestQueues checks that Queues names every queue with jobs, in byte order,
// and forgets one whose last job was purged.
func TestQueues(t *testing.T) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	open := func(name string) *Queue {
		q, err := New(ctx, db, Options{Name: name, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Close() })
		return q
	}
	open(DefaultName) // the schema, no jobs
	if got, err := Queues(ctx, db); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Queues on an empty database = %q, %v; want an empty slice", got, err)
	}
	for _, name := range []string{"mail", "Zeta", "é", "a b", "default"} {
		if err := open(name).EnqueueBatch(ctx, []Job{{ID: "1"}, {ID: "2"}, {ID: "3"}}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Zeta", "a b", "default", "mail", "é"}
	if got, err := Queues(ctx, db); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Queues = %q, %v; want %q", got, err, want)
	}
	// Finish and purge every job of "mail": it has no jobs left.
	mail := open("mail")
	cs, err := mail.ClaimBatch(ctx, "w", time.Minute, 3)
	if err != nil || len(cs) != 3 {
		t.Fatalf("ClaimBatch = %d claims, %v", len(cs), err)
	}
	if _, err := mail.FinishBatch(ctx, cs); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if n, err := mail.Purge(ctx, clock.Now()); err != nil || n != 3 {
		t.Fatalf("Purge = %d, %v; want 3", n, err)
	}
	want = slices.DeleteFunc(want, func(s string) bool { return s == "mail" })
	if got, err := Queues(ctx, db); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Queues after purging mail = %q, %v; want %q", got, err, want)
	}
}

// TestQueuesPlan checks that Queues probes an index once per queue: every
// step of its plan on leaseq_jobs is a SEARCH of an index, never a SCAN of
// the table or of an index, either of which would read every job.
func TestQueuesPlan(t *testing.T) {
	for _, filled := range []bool{false, true} {
		db := newPlanDB(t, filled)
		plan, problems := planProblems(t, db, sqlite.Statements()["queues"].SQL, nil)
		for _, line := range strings.Split(plan, "\n    ") {
			if strings.Contains(line, "leaseq_jobs") && !strings.HasPrefix(line, "SEARCH leaseq_jobs USING COVERING INDEX") {
				problems = append(problems, "not a covering index search: "+line)
			}
		}
		if len(problems) > 0 {
			t.Errorf("filled=%v: %s\n  plan:\n    %s", filled, strings.Join(problems, "; "), plan)
		}
	}
}
