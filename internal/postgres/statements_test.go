package postgres

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leaseq/leaseq/internal/engine"
)

// normal is sql with every run of whitespace one space.
func normal(sql string) string { return strings.Join(strings.Fields(sql), " ") }

// fenceOf is the fence of a fenced statement: its WHERE, up to RETURNING
// (a query's, fence_check.sql's, to its end).
func fenceOf(t *testing.T, st engine.Statement) string {
	s := normal(st.SQL)
	i, j := strings.Index(s, "WHERE "), strings.LastIndex(s, " RETURNING ")
	if j < 0 && strings.HasPrefix(s, "SELECT ") {
		j = len(s)
	}
	if i < 0 || j < i {
		t.Fatalf("%s.sql: no WHERE ... RETURNING in %q", st.Name, s)
	}
	return s[i:j]
}

// TestFencedStatements: every fenced statement carries the fence of
// finish.sql word for word (finish_many.sql per claim of its arrays, with
// the columns of j, the claim's from c and now from t), so that no fenced
// call can change a row its claim no longer holds.
func TestFencedStatements(t *testing.T) {
	fence := fenceOf(t, statements.All()["finish"])
	for _, cond := range []string{"queue = $1", "id = $2", "owner = $3", "token = $4", "status = 'leased'",
		"lease_until > coalesce($5::bigint, leaseq_now())", "(deadline IS NULL OR deadline > coalesce($5::bigint, leaseq_now()))"} {
		if !strings.Contains(fence, cond) {
			t.Errorf("finish.sql's fence %q lacks %q", fence, cond)
		}
	}
	perRow := strings.NewReplacer("queue =", "j.queue =", "id = $2", "j.id = c.id", "owner = $3", "j.owner = c.owner",
		"token = $4", "j.token = c.token", "status =", "j.status =", "lease_until >", "j.lease_until >",
		"(deadline IS NULL OR deadline >", "(j.deadline IS NULL OR j.deadline >", "coalesce($5::bigint, leaseq_now())", "t.now")
	want := map[string]string{"finish_many": perRow.Replace(fence)}
	fenced := 0
	for _, name := range engine.Names(statements.All()) {
		st := statements.All()[name]
		if !st.Fenced {
			continue
		}
		fenced++
		w, ok := want[name]
		if !ok {
			w = fence
			if !strings.HasSuffix(normal(st.SQL), " RETURNING lease_until") && name != "fence_check" {
				t.Errorf("%s.sql does not return the lease end alone", name)
			}
		}
		if got := fenceOf(t, st); got != w {
			t.Errorf("%s.sql's fence is\n\t%s\nnot\n\t%s", name, got, w)
		}
	}
	if fenced != 7 {
		t.Errorf("%d fenced statements, want 7 (finish, extend, release, fail, snooze, finish_many, fence_check)", fenced)
	}
}

// TestStatementsUsed: every embedded file is run by the package's code, as
// stmt("name") in a non-test Go file.
func TestStatementsUsed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		code.Write(b)
	}
	for _, name := range engine.Names(statements.All()) {
		if !strings.Contains(code.String(), `stmt("`+name+`")`) {
			t.Errorf("sql/%s.sql is not used: no stmt(%q) in the package's code", name, name)
		}
	}
}

// TestStatementHeaders: every statement says what it is, and one with
// placeholders names each of them in its header's args.
func TestStatementHeaders(t *testing.T) {
	placeholder := regexp.MustCompile(`\$[0-9]+`)
	for _, name := range engine.Names(statements.All()) {
		st := statements.All()[name]
		used := placeholder.FindAllString(st.SQL, -1)
		if len(used) > 0 && st.Args == "" {
			t.Errorf("%s.sql has placeholders and no args: line in its header", name)
		}
		for _, p := range used {
			if !regexp.MustCompile(`\` + p + `\b`).MatchString(st.Args) {
				t.Errorf("%s.sql's args: %q do not say what %s is", name, st.Args, p)
			}
		}
		if strings.HasSuffix(st.SQL, ";") && name != "schema" {
			t.Errorf("%s.sql ends in a semicolon: one statement, usable as a subquery, has none", name)
		}
	}
}

// TestStmtPanicsOnUnknownName: a statement name that has no file is a bug,
// found at its first run.
func TestStmtPanicsOnUnknownName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("stmt of an unknown name did not panic")
		}
	}()
	stmt("no such statement")
}
