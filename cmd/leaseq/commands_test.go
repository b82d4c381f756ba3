package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// run is one command line and the exit status it must end with; its output
// is in testdata/golden.golden.
type runCase struct {
	golden string
	args   []string
	code   int
}

// TestCLIReads runs the commands that change nothing on one scene: each
// command's text and JSON, with and without -queue, paging, and the
// failures of a read (an unknown ID, an ID in two queues).
func TestCLIReads(t *testing.T) {
	cases := []runCase{
		{"stats", []string{"stats"}, 0},
		{"stats_json", []string{"stats", "-json"}, 0},
		{"stats_queue", []string{"stats", "-queue", "emails"}, 0},
		{"stats_queue_without_jobs", []string{"stats", "-queue", "nothing-here"}, 0},
		{"stats_db_flag", []string{"stats", "-db", "$DB"}, 0},
		{"list", []string{"list"}, 0},
		{"list_json", []string{"list", "-json"}, 0},
		{"list_quarantined", []string{"list", "-status", "quarantined"}, 0},
		{"list_page", []string{"list", "-queue", "default", "-limit", "3"}, 0},
		{"list_page_json", []string{"list", "-queue", "default", "-limit", "3", "-json"}, 0},
		{"list_next_page", []string{"list", "-queue", "default", "-limit", "3", "-after", "order-3"}, 0},
		{"list_last_page", []string{"list", "-queue", "default", "-limit", "3", "-after", "order-6"}, 0},
		{"list_nothing", []string{"list", "-queue", "emails", "-status", "leased"}, 0},
		{"list_kind", []string{"list", "-kind", "email.welcome"}, 0},
		{"list_kind_status", []string{"list", "-kind", "email.welcome", "-status", "done", "-json"}, 0},
		{"list_after_unknown", []string{"list", "-queue", "default", "-after", "order-99"}, 1},
		{"show_text", []string{"show", "-queue", "default", "order-1"}, 0},
		{"show_binary", []string{"show", "order-6"}, 0},
		{"show_json", []string{"show", "order-6", "-json"}, 0},
		{"show_leased", []string{"show", "order-3"}, 0},
		{"show_multiline_text", []string{"show", "order-1", "-queue", "emails"}, 0},
		{"show_unknown", []string{"show", "order-99"}, 1},
		{"show_unknown_in_queue", []string{"show", "-queue", "emails", "order-5"}, 1},
		{"show_in_two_queues", []string{"show", "order-1"}, 1},
	}
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		scene(t, db)
		for _, c := range cases {
			r := leaseqRun(t, dbArg, atNow(dbArg), c.args...)
			if r.code != c.code {
				t.Errorf("leaseq %q: exit %d, want %d; stderr:\n%s", c.args, r.code, c.code, r.stderr)
			}
			golden(t, c.golden, r.transcript(dbArg, c.args))
		}
	})
}

// TestCLIJSONMatchesAPI checks the JSON of stats and list against what the
// API says of the same database.
func TestCLIJSONMatchesAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		scene(t, db)
		var st statsJSON
		decode(t, leaseqRun(t, dbArg, atNow(dbArg), "stats", "-json"), &st)
		var ls listJSON
		decode(t, leaseqRun(t, dbArg, atNow(dbArg), "list", "-json"), &ls)
		names, err := leaseq.Queues(context.Background(), db)
		if err != nil || len(st.Queues) != len(names) {
			t.Fatalf("stats -json has %d queues, Queues says %q (err %v)", len(st.Queues), names, err)
		}
		jobs := 0
		for i, name := range names {
			q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: name, Clock: leaseq.NewManualClock(now)})
			must(t, err)
			defer q.Close()
			want, err := q.Stats(context.Background())
			must(t, err)
			got := st.Queues[i]
			if got.Queue != name || got.Pending != want.Pending || got.Scheduled != want.Scheduled ||
				got.Leased != want.Leased || got.Expired != want.Expired || got.Done != want.Done ||
				got.Quarantined != want.Quarantined || got.OldestReady == nil || !got.OldestReady.Equal(want.OldestReady) {
				t.Errorf("stats -json for %q = %+v\nStats = %+v", name, got, want)
			}
			page, err := q.List(context.Background(), leaseq.Filter{})
			must(t, err)
			for _, s := range page {
				if j := ls.Jobs[jobs]; j.Queue != name || j.ID != s.ID || j.Status != string(s.Status) ||
					j.Token != s.Token || j.Reason != s.Reason || !j.UpdatedAt.Equal(s.UpdatedAt) {
					t.Errorf("list -json job %d = %+v\nList says %+v", jobs, j, s)
				}
				jobs++
			}
		}
		if jobs != len(ls.Jobs) {
			t.Errorf("list -json has %d jobs, List %d", len(ls.Jobs), jobs)
		}
	})
}

// decode parses a successful run's JSON into v.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not the JSON shape: %v\n%s", err, r.stdout)
	}
}

// writeCase is a command that changes the scene, and what the API must
// then find: the status and reason of jobs by queue and ID ("" status:
// the job is gone).
type writeCase struct {
	runCase
	want []jobWant
}

type jobWant struct {
	queue, id string
	status    leaseq.Status
	reason    string
}

// TestCLIWrites runs requeue, cancel and purge, each on a fresh scene, and
// checks what they said and what they did: every ID is tried, each is
// reported, and one failure makes the exit status 1.
func TestCLIWrites(t *testing.T) {
	const cancelled = "cancelled by an operator"
	cases := []writeCase{
		{runCase{"requeue", []string{"requeue", "order-6"}, 0},
			[]jobWant{{"default", "order-6", leaseq.StatusPending, ""}}},
		{runCase{"requeue_some_fail", []string{"requeue", "order-6", "order-5", "order-99", "order-1", "welcome-2"}, 1},
			[]jobWant{{"default", "order-6", leaseq.StatusPending, ""}, {"default", "order-5", leaseq.StatusDone, ""},
				{"emails", "welcome-2", leaseq.StatusPending, ""}}},
		{runCase{"requeue_some_fail_json", []string{"requeue", "-json", "order-6", "order-5", "order-99"}, 1},
			[]jobWant{{"default", "order-6", leaseq.StatusPending, ""}}},
		{runCase{"requeue_in_queue", []string{"requeue", "-queue", "emails", "order-1", "welcome-2"}, 1},
			[]jobWant{{"emails", "welcome-2", leaseq.StatusPending, ""}, {"emails", "order-1", leaseq.StatusPending, ""}}},
		{runCase{"cancel", []string{"cancel", "order-3", "order-4"}, 0},
			[]jobWant{{"default", "order-3", leaseq.StatusQuarantined, cancelled},
				{"default", "order-4", leaseq.StatusQuarantined, cancelled}}},
		{runCase{"cancel_some_fail", []string{"cancel", "-queue", "default", "-reason", "fraud check: hold", "order-3", "order-5", "order-1"}, 1},
			[]jobWant{{"default", "order-3", leaseq.StatusQuarantined, "fraud check: hold"},
				{"default", "order-5", leaseq.StatusDone, ""}, {"default", "order-1", leaseq.StatusQuarantined, "fraud check: hold"},
				{"emails", "order-1", leaseq.StatusPending, ""}}},
		{runCase{"cancel_json", []string{"cancel", "order-2", "order-7", "-json"}, 1},
			[]jobWant{{"default", "order-2", leaseq.StatusQuarantined, cancelled},
				{"default", "order-7", leaseq.StatusQuarantined, "customer called to cancel"}}},
		{runCase{"purge", []string{"purge", "-older-than", "5m"}, 0},
			[]jobWant{{"default", "order-5", "", ""}, {"emails", "welcome-1", "", ""},
				{"default", "order-6", leaseq.StatusQuarantined, "card declined:\ncode 51 (insufficient funds)"}}},
		{runCase{"purge_quarantined", []string{"purge", "-older-than", "5m", "-status", "quarantined", "-queue", "default"}, 0},
			[]jobWant{{"default", "order-6", "", ""}, {"default", "order-7", leaseq.StatusQuarantined, "customer called to cancel"},
				{"default", "order-5", leaseq.StatusDone, ""}, {"emails", "welcome-2", leaseq.StatusQuarantined, ""}}},
		{runCase{"purge_all_json", []string{"purge", "-older-than", "0s", "-status", "done,quarantined", "-json"}, 0},
			[]jobWant{{"default", "order-5", "", ""}, {"default", "order-6", "", ""}, {"default", "order-7", "", ""},
				{"emails", "welcome-1", "", ""}, {"emails", "welcome-2", "", ""}, {"default", "order-1", leaseq.StatusPending, ""}}},
	}
	for _, c := range cases {
		t.Run(c.golden, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
				scene(t, db)
				r := leaseqRun(t, dbArg, atNow(dbArg), c.args...)
				if r.code != c.code {
					t.Errorf("leaseq %q: exit %d, want %d; stderr:\n%s", c.args, r.code, c.code, r.stderr)
				}
				golden(t, c.golden, r.transcript(dbArg, c.args))
				for _, w := range c.want {
					checkJob(t, db, w)
				}
			})
		})
	}
}

// checkJob fails the test unless the job is as w says.
func checkJob(t *testing.T, db *sql.DB, w jobWant) {
	t.Helper()
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: w.queue})
	must(t, err)
	defer q.Close()
	st, err := q.Get(context.Background(), w.id)
	switch {
	case w.status == "" && !errors.Is(err, leaseq.ErrNotFound):
		t.Errorf("%s/%s: Get = %+v, %v; want it purged", w.queue, w.id, st, err)
	case w.status == "":
	case err != nil:
		t.Errorf("%s/%s: %v", w.queue, w.id, err)
	case st.Status != w.status || w.reason != "" && st.Reason != w.reason:
		t.Errorf("%s/%s is %s (reason %q); want %s (reason %q)", w.queue, w.id, st.Status, st.Reason, w.status, w.reason)
	}
}

// TestCLIUsageErrors checks that each kind of caller's mistake exits 2 with
// the mistake on the first line of stderr and the command's usage after it,
// and that nothing was written on stdout.
func TestCLIUsageErrors(t *testing.T) {
	dbArg, db := sqliteDB(t)
	scene(t, db)
	env := atNow(dbArg)
	for _, c := range []struct {
		args  []string
		env   []string
		first string // stderr's first line
		usage string // the usage that follows
	}{
		{nil, env, "leaseq: no command given", "usage: leaseq COMMAND"},
		{[]string{"nosuch"}, env, `leaseq: unknown command "nosuch"`, "usage: leaseq COMMAND"},
		{[]string{"-db", dbArg, "stats"}, env, `leaseq: unknown command "-db"`, "usage: leaseq COMMAND"},
		{[]string{"stats", "-nope"}, env, "leaseq: stats: flag provided but not defined: -nope", "usage: leaseq stats"},
		{[]string{"stats", "extra"}, env, `leaseq: stats: unexpected argument "extra"`, "usage: leaseq stats"},
		{[]string{"stats"}, nil, "leaseq: stats: no database: give -db PATH or -db URL, or set LEASEQ_DB", "usage: leaseq stats"},
		{[]string{"stats"}, []string{"LEASEQ_DB=" + dbArg, "LEASEQ_NOW=yesterday"},
			`leaseq: stats: LEASEQ_NOW="yesterday" is not an RFC 3339 time like 2025-01-01T00:00:00Z`, "usage: leaseq stats"},
		{[]string{"list", "-status", "stuck"}, env, `leaseq: list: -status "stuck" is not pending, leased, done or quarantined`, "usage: leaseq list"},
		{[]string{"list", "-kind", strings.Repeat("k", 65)}, env, "leaseq: list: -kind is 65 bytes, over the limit of 64", "usage: leaseq list"},
		{[]string{"list", "-limit", "0"}, env, "leaseq: list: -limit 0 is outside 1..1000", "usage: leaseq list"},
		{[]string{"list", "-limit", "1001"}, env, "leaseq: list: -limit 1001 is outside 1..1000", "usage: leaseq list"},
		{[]string{"list", "-limit", "many"}, env, `leaseq: list: invalid value "many" for flag -limit: parse error`, "usage: leaseq list"},
		{[]string{"list", "-after", "order-1"}, env, "leaseq: list: -after needs -queue: job IDs are unique per queue only", "usage: leaseq list"},
		{[]string{"show"}, env, "leaseq: show: want one job ID, got 0 arguments", "usage: leaseq show"},
		{[]string{"show", "order-1", "order-2"}, env, "leaseq: show: want one job ID, got 2 arguments", "usage: leaseq show"},
		{[]string{"requeue"}, env, "leaseq: requeue: want at least one job ID", "usage: leaseq requeue"},
		{[]string{"cancel", "-json"}, env, "leaseq: cancel: want at least one job ID", "usage: leaseq cancel"},
		{[]string{"cancel", "-reason"}, env, "leaseq: cancel: flag needs an argument: -reason", "usage: leaseq cancel"},
		{[]string{"purge"}, env, "leaseq: purge: -older-than is required: say how old the jobs to delete must be, such as 24h", "usage: leaseq purge"},
		{[]string{"purge", "-older-than", "-1h"}, env, `leaseq: purge: invalid value "-1h" for flag -older-than: negative`, "usage: leaseq purge"},
		{[]string{"purge", "-older-than", "a day"}, env, `leaseq: purge: invalid value "a day" for flag -older-than: not a duration like 24h or 90m`, "usage: leaseq purge"},
		{[]string{"purge", "-older-than", "1h", "-status", "pending"}, env, `leaseq: purge: -status "pending": only done and quarantined jobs can be purged`, "usage: leaseq purge"},
		{[]string{"purge", "-older-than", "1h", "now"}, env, `leaseq: purge: unexpected argument "now"`, "usage: leaseq purge"},
		{[]string{"help", "nosuch"}, env, `leaseq: help: unknown command "nosuch"`, "usage: leaseq help"},
		{[]string{"help", "list", "show"}, env, `leaseq: help: unexpected argument "show"`, "usage: leaseq help"},
		{[]string{"demo", "extra"}, env, `leaseq: demo: unexpected argument "extra"`, "usage: leaseq demo"},
		{[]string{"serve", "extra"}, env, `leaseq: serve: unexpected argument "extra"`, "usage: leaseq serve"},
	} {
		r := leaseqRun(t, dbArg, c.env, c.args...)
		first, rest, _ := strings.Cut(r.stderr, "\n")
		if r.code != 2 || first != c.first || !strings.HasPrefix(rest, "\n"+c.usage) || r.stdout != "" {
			t.Errorf("leaseq %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2, no stdout, stderr:\n%s\n\n%s ...",
				c.args, r.code, r.stdout, r.stderr, c.first, c.usage)
		}
	}
}

// TestCLIHelp checks "leaseq help" and the help of each command, which
// "COMMAND -h" prints too, on stdout with exit 0.
func TestCLIHelp(t *testing.T) {
	r := leaseqRun(t, "", nil, "help")
	if r.code != 0 || r.stderr != "" {
		t.Errorf("leaseq help: exit %d, stderr %q", r.code, r.stderr)
	}
	golden(t, "help", r.stdout)
	for _, flagHelp := range []string{"-h", "-help", "--help"} {
		if h := leaseqRun(t, "", nil, flagHelp); h != r {
			t.Errorf("leaseq %s = %+v, want what leaseq help printed", flagHelp, h)
		}
	}
	for _, c := range commands {
		r := leaseqRun(t, "", nil, "help", c.name)
		if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: leaseq "+c.name) {
			t.Errorf("leaseq help %s: exit %d, stderr %q, stdout:\n%s", c.name, r.code, r.stderr, r.stdout)
		}
		golden(t, "help_"+c.name, r.stdout)
		if h := leaseqRun(t, "", nil, c.name, "-h"); h != r {
			t.Errorf("leaseq %s -h = %+v, want what leaseq help %s printed", c.name, h, c.name)
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("leaseq help %s: line over 80 characters:\n%s", c.name, line)
			}
		}
	}
}

// TestCLIDatabaseArgument checks what -db refuses: a path that does not
// exist (which must not be created), a directory, a file that is not a
// database, a database that is not leaseq's, and an unreachable
// PostgreSQL URL, whose password must not be shown.
func TestCLIDatabaseArgument(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	empty := filepath.Join(dir, "empty.db")
	text := filepath.Join(dir, "notes.txt")
	must(t, os.WriteFile(empty, nil, 0o600))
	must(t, os.WriteFile(text, []byte(strings.Repeat("not a database\n", 100)), 0o600))
	for _, c := range []struct{ db, want string }{
		{missing, `leaseq: stats: database "$DB" does not exist`},
		{filepath.Join(dir, "no-dir", "jobs.db"), `leaseq: stats: database "$DB" does not exist`},
		{dir, `leaseq: stats: database "$DB" is a directory, not a SQLite file`},
		{empty, `leaseq: stats: database "$DB": not a leaseq database (reading its table leaseq_jobs: SQL logic error: no such table: leaseq_jobs (1))`},
		{text, `leaseq: stats: database "$DB": file is not a database (26)`},
		{"postgres://ops:s3cret@127.0.0.1:1/jobs?sslmode=disable", `leaseq: stats: database postgres://ops:xxxxx@127.0.0.1:1/jobs?sslmode=disable: `},
	} {
		r := leaseqRun(t, c.db, nil, "stats", "-db", c.db)
		got := strings.ReplaceAll(r.stderr, c.db, "$DB")
		if r.code != 1 || !strings.HasPrefix(got, c.want) || strings.Count(got, "\n") != 1 || r.stdout != "" {
			t.Errorf("leaseq stats -db %s: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and one line starting\n%s",
				c.db, r.code, r.stdout, r.stderr, c.want)
		}
		if strings.Contains(r.stderr, "s3cret") {
			t.Errorf("stderr shows the password: %s", r.stderr)
		}
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stats created %s: %v", missing, err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("stats wrote to %s, which is not a leaseq database: %v, %v", empty, fi, err)
	}
}

// TestCLIEscapes checks that text from the database cannot break a table
// or drive the terminal: an ID, a reason and a payload holding control
// characters are shown escaped, and "--" reaches an ID that starts with
// "-".
func TestCLIEscapes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		ctx := context.Background()
		clock := leaseq.NewManualClock(t0)
		q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
		must(t, err)
		defer q.Close()
		must(t, q.EnqueueBatch(ctx, []leaseq.Job{
			{ID: "evil\x1b[2J\tid", Payload: []byte("text\x1b]0;title\x07")},
			{ID: "-dash", Payload: []byte("plain")},
		}))
		must(t, q.Cancel(ctx, "evil\x1b[2J\tid", "\x1b[31mred\x1b[0m\tand\r\nmore"))
		for _, c := range []runCase{
			{"escape_list", []string{"list"}, 0},
			{"escape_show", []string{"show", "evil\x1b[2J\tid"}, 0},
			{"escape_dash", []string{"show", "--", "-dash"}, 0},
			{"escape_dash_requeue", []string{"requeue", "-queue", "default", "--", "-dash", "-json"}, 1},
		} {
			r := leaseqRun(t, dbArg, atNow(dbArg), c.args...)
			if r.code != c.code {
				t.Errorf("leaseq %q: exit %d, want %d; stderr:\n%s", c.args, r.code, c.code, r.stderr)
			}
			if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r") {
				t.Errorf("leaseq %q printed a control character:\n%q", c.args, r.stdout+r.stderr)
			}
			golden(t, c.golden, r.transcript(dbArg, c.args))
		}
	})
}

// TestCLIDemo runs the demo as a process: it plays and checks the timeline
// and exits 0.
func TestCLIDemo(t *testing.T) {
	r := leaseqRun(t, "", nil, "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "final row: order-7 status=done owner=B token=2 attempts=2") {
		t.Errorf("leaseq demo: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestCLIRelativeTimes pins the relative part of the times shown.
func TestCLIRelativeTimes(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "now"}, {999 * time.Millisecond, "now"}, {-time.Second, "1s ago"}, {42 * time.Second, "in 42s"},
		{-(3*time.Minute + 12*time.Second + 900*time.Millisecond), "3m12s ago"}, {5 * time.Hour, "in 5h"},
		{-(5*time.Hour + 59*time.Second), "5h ago"}, {51 * time.Hour, "in 2d3h"}, {-700 * 24 * time.Hour, "700d ago"},
	} {
		if got := relative(c.d); got != c.want {
			t.Errorf("relative(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1204: "1,204", 1234567: "1,234,567", -1204: "-1,204"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{24 * time.Hour: "24h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s", 0: "0s", 1500 * time.Millisecond: "1.5s"} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestCLIEmptyDatabase checks what the commands say of a database that has
// leaseq's schema and no jobs.
func TestCLIEmptyDatabase(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		for _, c := range []runCase{
			{"empty_stats", []string{"stats"}, 0},
			{"empty_stats_json", []string{"stats", "-json"}, 0},
			{"empty_list", []string{"list"}, 0},
			{"empty_list_json", []string{"list", "-json"}, 0},
			{"empty_purge", []string{"purge", "-older-than", "0s"}, 0},
			{"empty_show", []string{"show", "order-1"}, 1},
		} {
			r := leaseqRun(t, dbArg, atNow(dbArg), c.args...)
			if r.code != c.code {
				t.Errorf("leaseq %q: exit %d, want %d; stderr:\n%s", c.args, r.code, c.code, r.stderr)
			}
			golden(t, c.golden, r.transcript(dbArg, c.args))
		}
	})
}

// TestCLIPurgeSaysHowMany purges more jobs than one of Purge's
// transactions holds and checks the count it prints, and that the jobs
// finished inside the window stay.
func TestCLIPurgeSaysHowMany(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		ctx := context.Background()
		clock := leaseq.NewManualClock(t0)
		q, err := leaseq.New(ctx, db, leaseq.Options{Clock: clock})
		must(t, err)
		defer q.Close()
		finish := func(n int, prefix string) {
			jobs := make([]leaseq.Job, n)
			for i := range jobs {
				jobs[i] = leaseq.Job{ID: fmt.Sprintf("%s-%d", prefix, i)}
			}
			must(t, q.EnqueueBatch(ctx, jobs))
			for len(jobs) > 0 {
				cs, err := q.ClaimBatch(ctx, "w", time.Hour, len(jobs))
				must(t, err)
				if _, err := q.FinishBatch(ctx, cs); err != nil {
					t.Fatal(err)
				}
				jobs = jobs[len(cs):]
			}
		}
		finish(1204, "old")
		clock.Set(t0.Add(24*time.Hour + 30*time.Minute)) // inside the last 24h at t0+25h
		finish(3, "recent")
		args := []string{"purge", "-older-than", "24h"}
		env := []string{"LEASEQ_DB=" + dbArg, "LEASEQ_NOW=" + t0.Add(25*time.Hour).Format(time.RFC3339)}
		r := leaseqRun(t, dbArg, env, args...)
		if want := "purged 1,204 done jobs older than 24h from queue \"default\"\n"; r.code != 0 || r.stdout != want {
			t.Errorf("leaseq %q: exit %d, stdout %q, stderr %q; want exit 0, stdout %q", args, r.code, r.stdout, r.stderr, want)
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Done != 3 {
			t.Errorf("after the purge Stats = %+v, %v; want the 3 recent done jobs", st, err)
		}
	})
}

// TestReasonsShownForWhatTheyAre: list shows no reason beside a done job
// (its reason is an earlier retry's and would read as a failure) and marks
// a waiting job's as its retry's; show labels each by what it is.
func TestReasonsShownForWhatTheyAre(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		q, err := leaseq.New(t.Context(), db, leaseq.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		// Each job alone in the queue while it is claimed, so that each
		// claim takes the job meant.
		for _, id := range []string{"done", "retried"} {
			if err := q.Enqueue(t.Context(), leaseq.Job{ID: id}); err != nil {
				t.Fatal(err)
			}
			c, ok, err := q.Claim(t.Context(), "w", time.Hour)
			if !ok || err != nil {
				t.Fatalf("Claim: %v %v", ok, err)
			}
			if ok, err := q.Release(t.Context(), c, 0, "receiver answered 503 for "+c.ID); !ok || err != nil {
				t.Fatalf("Release: %v %v", ok, err)
			}
			if id == "done" {
				if c, ok, err = q.Claim(t.Context(), "w", time.Hour); !ok || err != nil {
					t.Fatalf("Claim: %v %v", ok, err)
				}
				if ok, err := q.Finish(t.Context(), c); !ok || err != nil {
					t.Fatalf("Finish: %v %v", ok, err)
				}
			}
		}
		var out bytes.Buffer
		if code := run(t.Context(), []string{"list", "-db", dbArg}, &out, io.Discard); code != 0 {
			t.Fatalf("list: exit %d\n%s", code, out.String())
		}
		if strings.Contains(out.String(), "503 for done") || !strings.Contains(out.String(), "retried: receiver answered 503 for retried") {
			t.Errorf("list shows a done job's earlier reason, or not a waiting job's as a retry's:\n%s", out.String())
		}
		for id, label := range map[string]string{"done": "reason of an earlier retry (the job is done):\n", "retried": "why retried:\n"} {
			out.Reset()
			if code := run(t.Context(), []string{"show", "-db", dbArg, id}, &out, io.Discard); code != 0 || !strings.Contains(out.String(), label) {
				t.Errorf("show %s: exit %d, want %q in:\n%s", id, code, label, out.String())
			}
		}
	})
}
