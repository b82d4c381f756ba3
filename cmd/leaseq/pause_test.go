package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
)

// TestCLIPause: pause and resume (rule 54) change the queue's state on
// both engines, say so in text and JSON, show in stats, and refuse to run
// without -queue.
func TestCLIPause(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		scene(t, db)
		for _, c := range []struct {
			args   []string
			stdout string
			paused bool
		}{
			{[]string{"pause", "-queue", "emails"}, "paused queue \"emails\"\n", true},
			{[]string{"pause", "-queue", "emails", "-json"}, "{\"queue\":\"emails\",\"paused\":true}", true},
			{[]string{"resume", "-queue", "emails"}, "resumed queue \"emails\"\n", false},
			{[]string{"resume", "-queue", "emails", "-json"}, "{\"queue\":\"emails\",\"paused\":false}", false},
		} {
			r := leaseqRun(t, dbArg, atNow(dbArg), c.args...)
			if r.code != 0 || strings.Join(strings.Fields(r.stdout), "") != strings.Join(strings.Fields(c.stdout), "") {
				t.Fatalf("leaseq %q: exit %d, stdout %q, stderr %q; want 0, %q", c.args, r.code, r.stdout, r.stderr, c.stdout)
			}
			wantPaused(t, db, "emails", c.paused)
			wantPaused(t, db, "default", false)
			if c.paused {
				r := leaseqRun(t, dbArg, atNow(dbArg), "stats", "-json")
				if !strings.Contains(r.stdout, `"queue": "emails"`) || !strings.Contains(r.stdout, `"paused": true`) ||
					!strings.Contains(r.stdout, `"paused": false`) {
					t.Fatalf("stats -json of a paused queue:\n%s", r.stdout)
				}
				if r := leaseqRun(t, dbArg, atNow(dbArg), "stats"); !strings.Contains(r.stdout, "emails (paused)") {
					t.Fatalf("stats of a paused queue:\n%s", r.stdout)
				}
			}
		}
		for _, cmd := range []string{"pause", "resume"} {
			r := leaseqRun(t, dbArg, atNow(dbArg), cmd)
			if r.code != 2 || !strings.Contains(r.stderr, "-queue is required") {
				t.Fatalf("leaseq %s without -queue: exit %d, stderr %q; want 2 and a usage error", cmd, r.code, r.stderr)
			}
		}
		wantPaused(t, db, "emails", false)
	})
}

// wantPaused fails the test unless queue name's Stats say paused.
func wantPaused(t *testing.T, db *sql.DB, name string, paused bool) {
	t.Helper()
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: name})
	must(t, err)
	defer q.Close()
	st, err := q.Stats(context.Background())
	must(t, err)
	if st.Paused != paused {
		t.Fatalf("queue %s: Paused %v, want %v", name, st.Paused, paused)
	}
}

// TestCLIPauseUnknownQueue: pausing a queue that has no jobs and is not
// paused — most often a mistyped name — fails (exit 1) naming the queues
// that have jobs and -create, and pauses nothing; with -create it is
// paused, and pausing it again needs no -create. On a database with no
// jobs the message says so.
func TestCLIPauseUnknownQueue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		if r := leaseqRun(t, dbArg, atNow(dbArg), "pause", "-queue", "emails"); r.code != 1 ||
			!strings.Contains(r.stderr, `queue "emails" has no jobs`) || !strings.Contains(r.stderr, "no queue has jobs") {
			t.Fatalf("pause of a queue on an empty database: exit %d, stderr %q; want 1 and that no queue has jobs", r.code, r.stderr)
		}
		wantPaused(t, db, "emails", false)
		scene(t, db)
		for _, args := range [][]string{{"pause", "-queue", "emials"}, {"pause", "-queue", "emials", "-json"}} {
			r := leaseqRun(t, dbArg, atNow(dbArg), args...)
			want := `leaseq: pause: queue "emials" has no jobs and is not paused; the queues with jobs are default, emails` +
				` (pass -create to pause it before its first job)` + "\n"
			if r.code != 1 || r.stdout != "" || r.stderr != want {
				t.Fatalf("leaseq %q: exit %d, stdout %q, stderr %q; want 1, nothing, %q", args, r.code, r.stdout, r.stderr, want)
			}
			wantPaused(t, db, "emials", false)
		}
		for _, args := range [][]string{{"pause", "-queue", "emials", "-create"}, {"pause", "-queue", "emials"}} {
			if r := leaseqRun(t, dbArg, atNow(dbArg), args...); r.code != 0 || r.stdout != "paused queue \"emials\"\n" {
				t.Fatalf("leaseq %q: exit %d, stdout %q, stderr %q; want 0", args, r.code, r.stdout, r.stderr)
			}
			wantPaused(t, db, "emials", true)
		}
		wantPaused(t, db, "emails", false)
	})
}
