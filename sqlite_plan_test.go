package leaseq

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq/internal/sqlite"
)

// SQLite only: EXPLAIN QUERY PLAN and the statements' SQL are SQLite's.

// The statements of every call and the indexes their plans must use. A
// call's cost stays flat with the size of the queue only while no plan
// visits the table's rows one by one: a plain SCAN of leaseq_jobs would read
// every done and quarantined row, and a SCAN of an index that is not
// partial would read every job.
//
// Which index each statement relies on is said in its file's header
// (internal/sqlite/sql/*.sql, "-- index:"); planned names the statements
// whose plans are checked, and a statement with an index header that is not
// among them fails TestPlannedStatementsHaveHeaders.
var planned = []string{"sweep_leased", "sweep_pending", "promote", "claim", "claim_idle",
	"finish", "extend", "release", "fail", "cancel", "requeue", "insert", "get", "stats",
	"list_status", "list_all", "list_after", "purge_tokens", "purge", "activity", "next_due",
	"operate_refusal", "queues", "resume", "list_kind", "list_kind_all", "fence_check",
	"snooze", "slot_seen", "purge_due", "leased"}

type planWant struct {
	name    string
	query   string
	indexes []string
}

// planWants are the planned statements with the indexes their headers name.
var planWants = func() []planWant {
	sts := sqlite.Statements()
	var ws []planWant
	for _, name := range planned {
		st := sts[name]
		var ix []string
		if st.Index != "" {
			ix = strings.Split(st.Index, ", ")
		}
		ws = append(ws, planWant{name, st.SQL, ix})
	}
	return ws
}()

// TestPlannedStatementsHaveHeaders: every planned statement exists and,
// apart from the INSERT (which reads no index) and Queues (checked on its
// own), names its index; every statement that names one is planned.
func TestPlannedStatementsHaveHeaders(t *testing.T) {
	sts := sqlite.Statements()
	for _, name := range planned {
		st, ok := sts[name]
		switch {
		case !ok:
			t.Errorf("%s.sql: no such statement", name)
		case st.Index == "" && name != "insert" && name != "queues":
			t.Errorf("%s.sql: no index: line in its header", name)
		}
	}
	for name, st := range sts {
		if st.Index != "" && !slices.Contains(planned, name) {
			t.Errorf("%s.sql names index %s but its plan is not checked: add it to planned", name, st.Index)
		}
	}
}

// partialIndexes are the indexes whose loss must make some plan fail.
var partialIndexes = []string{"leaseq_jobs_ready", "leaseq_jobs_waiting", "leaseq_jobs_doomed",
	"leaseq_jobs_pending_deadline", "leaseq_jobs_status", "leaseq_jobs_finished", "leaseq_jobs_kind"}

var paramRE = regexp.MustCompile(`\?(\d+)`)

// planProblems explains query's plan on db and says what is wrong with it:
// a full scan of leaseq_jobs, or a wanted index it does not use.
func planProblems(t *testing.T, db *sql.DB, query string, indexes []string) (plan string, problems []string) {
	t.Helper()
	n := 0
	for _, m := range paramRE.FindAllStringSubmatch(query, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	args := make([]any, n)
	for i := range args {
		args[i] = i + 1
	}
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
		if strings.Contains(detail, "leaseq_jobs ") && strings.HasPrefix(detail, "SCAN ") {
			problems = append(problems, "full scan: "+detail)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	plan = strings.Join(lines, "\n    ")
	for _, ix := range indexes {
		if !slices.ContainsFunc(lines, func(l string) bool { return slices.Contains(strings.Fields(l), ix) }) {
			problems = append(problems, "does not use "+ix)
		}
	}
	return plan, problems
}

// newPlanDB is a database with leaseq's schema, and, if filled, a mix of
// every kind of row in two queues, counted by ANALYZE so the planner knows
// how many of each there are.
func newPlanDB(t *testing.T, filled bool) *sql.DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	clock := NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, name := range []string{"default", "other"} {
		q, err := New(ctx, db, Options{Name: name, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		if !filled {
			continue
		}
		var jobs []Job
		for i := range 600 {
			j := Job{ID: fmt.Sprint(name, i), Priority: i%5 - 2}
			if i%3 == 0 {
				j.Kind = "mail" // rule 50: a third of the jobs have a kind
			}
			switch i % 4 {
			case 1:
				j.RunAt = clock.Now().Add(time.Hour)
			case 2:
				j.Deadline = clock.Now().Add(2 * time.Hour)
			}
			jobs = append(jobs, j)
		}
		if err := q.EnqueueBatch(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		cs, err := q.ClaimBatch(ctx, "w", time.Minute, 300)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.FinishBatch(ctx, cs[:200]); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs[200:250] {
			if _, err := q.Fail(ctx, c, "x"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if filled {
		if _, err := db.Exec("ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestQueryPlansUsePartialIndexes(t *testing.T) {
	for _, filled := range []bool{false, true} {
		t.Run(fmt.Sprint("filled=", filled), func(t *testing.T) {
			db := newPlanDB(t, filled)
			for _, w := range planWants {
				plan, problems := planProblems(t, db, w.query, w.indexes)
				if len(problems) > 0 {
					t.Errorf("%s: %s\n  plan:\n    %s\n  want: no full scan of leaseq_jobs, using %v", w.name, strings.Join(problems, "; "), plan, w.indexes)
				}
			}
		})
	}
}

// TestQueryPlanCheckCatchesDroppedIndex makes sure the check above can fail:
// with any one partial index dropped, some statement's plan is refused.
func TestQueryPlanCheckCatchesDroppedIndex(t *testing.T) {
	for _, ix := range partialIndexes {
		t.Run(ix, func(t *testing.T) {
			db := newPlanDB(t, false)
			if _, err := db.Exec("DROP INDEX " + ix); err != nil {
				t.Fatal(err)
			}
			var refused []string
			for _, w := range planWants {
				if _, problems := planProblems(t, db, w.query, w.indexes); len(problems) > 0 {
					refused = append(refused, w.name)
				}
			}
			if len(refused) == 0 {
				t.Fatalf("index %s dropped, yet every plan passed the check", ix)
			}
		})
	}
}

// TestActivityPlanReadsNoRow: every part of Activity's statement is a range
// of an index that covers it. A plan that reads table rows would read one
// per job finished in the window or waiting now, many times slower.
func TestActivityPlanReadsNoRow(t *testing.T) {
	db := newPlanDB(t, true)
	plan, _ := planProblems(t, db, sqlite.Statements()["activity"].SQL, nil)
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "leaseq_jobs ") && !strings.Contains(line, "USING COVERING INDEX") {
			t.Fatalf("activity reads table rows: %s\n  plan:\n    %s", strings.TrimSpace(line), plan)
		}
	}
}
