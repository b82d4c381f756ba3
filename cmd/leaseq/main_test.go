package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leaseq/leaseq"
)

// TestDemoTimeline runs the demo on a kept database and checks the lines a
// newcomer reads, then the row itself from a fresh connection.
func TestDemoTimeline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.db")
	var out bytes.Buffer
	if err := run(t.Context(), []string{"demo", "-db", path}, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		`(?m)^   0ms  A claims order-7 +token=1 lease_until=1000ms$`,
		`(?m)^ 999ms  B claims +nothing \(A's lease is live`,
		`(?m)^1000ms  B claims order-7 +token=2 lease_until=2000ms`,
		`(?m)^1000ms  B delivers order-7 qty=3 +receiver: new, total=3$`,
		`(?m)^1000ms  B finishes token=2 +accepted$`,
		`(?m)^1001ms  A delivers order-7 qty=3 +receiver: repeat ignored, total=3$`,
		`(?m)^1001ms  A finishes token=1 +refused \(stale token: the row says owner=B token=2\)$`,
		`(?m)^final row: order-7 status=done owner=B token=2 attempts=2$`,
		`(?m)^receiver total: 3 \(qty counted once over 2 deliveries\)$`,
		// The steps happen in this order.
		`(?s)A claims.*999ms  B claims.*B finishes.*A delivers.*A finishes.*final row`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output does not match %s\ngot:\n%s", want, out.String())
		}
	}
	wantKeptRow(t, path)
}

// wantKeptRow checks that -db kept the file and that its row is B's, done.
func wantKeptRow(t *testing.T, path string) {
	t.Helper()
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatalf("the demo did not keep %s: %v", path, err)
	}
	defer db.Close()
	q, err := leaseq.New(t.Context(), db, leaseq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := q.Get(t.Context(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != leaseq.StatusDone || st.Owner != "B" || st.Token != 2 || st.Attempts != 2 {
		t.Errorf("kept row = %+v\nwant status=done owner=B token=2 attempts=2", st)
	}
}

// TestDemoTempFileRemoved checks that without -db the demo leaves nothing
// behind.
func TestDemoTempFileRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var out bytes.Buffer
	if err := run(t.Context(), []string{"demo"}, &out); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), filepath.Join(tmp, "leaseq-demo-")) {
		t.Errorf("header does not name a temporary file under %s:\n%s", tmp, out.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil || len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v (err %v), want nothing", left, err)
	}
}

// TestUsage checks that caller mistakes exit 2 with usage on stderr, and
// that a failing demo exits 1 without it.
func TestUsage(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(existing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{nil, 2, "no command given"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"demo", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"demo", "-nope"}, 2, "-nope"},
		{[]string{"demo", "-db", existing}, 1, "already exists"},
		{[]string{"demo", "-db", filepath.Join(existing+".d", "x.db")}, 1, "directory"},
	} {
		var out, stderr bytes.Buffer
		err := run(context.Background(), tc.args, &out)
		code := exitCode(err, &stderr)
		usage := strings.Contains(stderr.String(), "usage: leaseq demo")
		if code != tc.code || !strings.Contains(stderr.String(), tc.inStderr) || usage != (tc.code == 2) {
			t.Errorf("leaseq %q: exit %d, stderr:\n%s\nwant exit %d, stderr with %q, usage shown %v",
				tc.args, code, stderr.String(), tc.code, tc.inStderr, tc.code == 2)
		}
	}
}

// TestHelp checks that -h is an answer, not an error.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"demo", "-h"}, &out)
	if err != nil || !strings.HasPrefix(out.String(), "usage: leaseq demo") {
		t.Errorf("demo -h: err %v, stdout:\n%s\nwant nil and the usage", err, out.String())
	}
}
