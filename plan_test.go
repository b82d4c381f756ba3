package leaseq

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The statements of Enqueue, Claim and Finish and the indexes their plans
// must use. Claim's cost stays flat with the size of the queue only while
// no plan visits the table's rows one by one: a plain SCAN of leaseq_jobs
// would read every done and quarantined row.
var planWants = []struct {
	name    string
	query   string
	indexes []string
}{
	{"quarantine expired leases", quarantineSQL[0], []string{"leaseq_jobs_doomed"}},
	{"quarantine passed deadlines", quarantineSQL[1], []string{"leaseq_jobs_pending_deadline"}},
	{"claim", claimSQL, []string{"leaseq_jobs_pending", "leaseq_jobs_leased"}},
	{"finish", finishSQL, []string{"sqlite_autoindex_leaseq_jobs_1"}},
	{"enqueue", insertSQL, nil},
	{"get", getSQL, []string{"sqlite_autoindex_leaseq_jobs_1"}},
}

// planProblems explains query's plan on db and says what is wrong with it:
// a full scan of leaseq_jobs, or a wanted index it does not use.
func planProblems(t *testing.T, db *sql.DB, query string, indexes []string) (plan string, problems []string) {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, 1, 2, 3, 4, 5, 6, 7)
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
		if strings.Contains(detail, "leaseq_jobs") && strings.HasPrefix(detail, "SCAN ") &&
			!strings.Contains(detail, "INDEX leaseq_jobs_") {
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

// newPlanDB is a database with leaseq's schema.
func newPlanDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := New(context.Background(), db, Options{}); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestQueryPlansUsePartialIndexes(t *testing.T) {
	db := newPlanDB(t)
	for _, w := range planWants {
		plan, problems := planProblems(t, db, w.query, w.indexes)
		if len(problems) > 0 {
			t.Errorf("%s: %s\n  plan:\n    %s\n  want: no full scan of leaseq_jobs, using %v", w.name, strings.Join(problems, "; "), plan, w.indexes)
		}
	}
}

// TestQueryPlanCheckCatchesDroppedIndex makes sure the check above can fail:
// with any one partial index dropped, some statement's plan is refused.
func TestQueryPlanCheckCatchesDroppedIndex(t *testing.T) {
	for _, ix := range []string{"leaseq_jobs_pending", "leaseq_jobs_leased", "leaseq_jobs_doomed", "leaseq_jobs_pending_deadline"} {
		t.Run(ix, func(t *testing.T) {
			db := newPlanDB(t)
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
