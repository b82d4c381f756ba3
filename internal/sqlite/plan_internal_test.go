package sqlite

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestIndexHeadersMatchPlans: each statement's "-- index:" line names
// indexes that its plan, on an empty database with the schema, uses.
func TestIndexHeadersMatchPlans(t *testing.T) {
	e, _, _ := newTestEngine(t, time.Unix(1e9, 0), false)
	param := regexp.MustCompile(`\?(\d+)`)
	for name, st := range statements.All() {
		if st.Index == "" {
			continue
		}
		n := 0
		for _, m := range param.FindAllStringSubmatch(st.SQL, -1) {
			k, _ := strconv.Atoi(m[1])
			n = max(n, k)
		}
		args := make([]any, n)
		for i := range args {
			args[i] = i + 1
		}
		rows, err := e.dbh.Query("EXPLAIN QUERY PLAN "+st.SQL, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		rows.Close()
		for _, ix := range strings.Split(st.Index, ", ") {
			if !slices.ContainsFunc(lines, func(l string) bool { return slices.Contains(strings.Fields(l), ix) }) {
				t.Errorf("%s.sql names index %s, which its plan does not use:\n    %s", name, ix, strings.Join(lines, "\n    "))
			}
		}
	}
}
