package sqlite

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// normal is text with every run of white space one space.
func normal(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestFencedStatementsCarryTheFence: every statement marked fenced holds
// the fence's conditions, word for word as finish.sql has them, which is
// what the concatenation of one fence clause used to guarantee.
func TestFencedStatementsCarryTheFence(t *testing.T) {
	finish := normal(stmt("finish"))
	i := strings.Index(finish, "WHERE ")
	if i < 0 {
		t.Fatal("finish.sql has no WHERE")
	}
	fence := strings.TrimSuffix(finish[i:], " RETURNING lease_until") // fence_check.sql is a query
	for _, c := range []string{"queue = ?1", "id = ?2", "owner = ?3", "token = ?4", "status = 'leased'",
		"lease_until > ?5", "(deadline IS NULL OR deadline > ?5)"} {
		if !strings.Contains(fence, c) {
			t.Fatalf("finish.sql's fence lacks %q: %s", c, fence)
		}
	}
	n := 0
	for name, st := range statements.All() {
		if !st.Fenced {
			continue
		}
		n++
		if !strings.Contains(normal(st.SQL), fence) {
			t.Errorf("%s.sql is fenced but does not carry the fence %q", name, fence)
		}
	}
	calls := []string{"finish", "extend", "release", "fail", "snooze"}
	for _, name := range calls {
		if !statements.All()[name].Fenced {
			t.Errorf("%s.sql runs as a fenced call but has no \"-- fenced\" line", name)
		}
	}
	if !statements.All()["fence_check"].Fenced {
		t.Error("fence_check.sql checks FinishTx's fence but has no \"-- fenced\" line")
	}
	if n != len(calls)+1 {
		t.Errorf("%d statements are marked fenced, want the %d fenced calls' and fence_check's", n, len(calls))
	}
}

// TestEveryStatementIsUsed: each embedded file is named as stmt("name") in
// the package's Go files outside the tests, and every stmt call names a
// file.
func TestEveryStatementIsUsed(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	code := src.String()
	for name := range statements.All() {
		if !strings.Contains(code, fmt.Sprintf("stmt(%q)", name)) {
			t.Errorf("%s.sql is embedded but no stmt(%q) runs it", name, name)
		}
	}
	for _, m := range regexp.MustCompile(`stmt\("([^"]+)"\)`).FindAllStringSubmatch(code, -1) {
		if _, ok := statements.All()[m[1]]; !ok {
			t.Errorf("stmt(%q) names no file", m[1])
		}
	}
}

// TestStatementHeaders: every statement with placeholders names them in an
// "args:" line, each placeholder it uses among them, and one without has
// none.
func TestStatementHeaders(t *testing.T) {
	param := regexp.MustCompile(`\?\d+`)
	for name, st := range statements.All() {
		used := param.FindAllString(st.SQL, -1)
		switch {
		case len(used) > 0 && st.Args == "":
			t.Errorf("%s.sql has placeholders but no \"-- args:\" line", name)
		case len(used) == 0 && st.Args != "":
			t.Errorf("%s.sql has no placeholders but an \"-- args:\" line", name)
		}
		for _, p := range used {
			if !regexp.MustCompile(regexp.QuoteMeta(p) + `\b`).MatchString(st.Args) {
				t.Errorf("%s.sql uses %s, which its args line does not name", name, p)
			}
		}
	}
}

// TestSchemaVersionSetIsSchemaVersion: the pragma that records the schema
// version writes SchemaVersion.
func TestSchemaVersionSetIsSchemaVersion(t *testing.T) {
	if got, want := normal(stmt("schema_version_set")), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion); got != want {
		t.Fatalf("schema_version_set.sql is %q, want %q", got, want)
	}
}

// TestStmtPanicsOnUnknownName: a name with no file is a bug, found at once.
func TestStmtPanicsOnUnknownName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("stmt of an unknown name did not panic")
		}
	}()
	stmt("no such statement")
}
