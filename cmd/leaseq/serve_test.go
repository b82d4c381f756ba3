package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// waitLimit bounds every wait on the served process: it answers loopback
// requests in milliseconds, so a wait this long means it never will.
const waitLimit = 30 * time.Second

// seedServeDB gives db's queue "orders" two pending jobs and one
// quarantined.
func seedServeDB(t *testing.T, db *sql.DB) {
	t.Helper()
	q, err := leaseq.New(t.Context(), db, leaseq.Options{Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.EnqueueBatch(t.Context(), []leaseq.Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}); err != nil {
		t.Fatal(err)
	}
	if err := q.Cancel(t.Context(), "a", "not wanted"); err != nil {
		t.Fatal(err)
	}
}

// TestServeBinary starts the built binary on a free loopback port, fetches
// the overview over real HTTP, and stops it with an interrupt, after which
// it exits 0.
func TestServeBinary(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) { testServeBinary(t, dbArg, db) })
}

func testServeBinary(t *testing.T, dbArg string, db *sql.DB) {
	seedServeDB(t, db)
	cmd := exec.Command(binary, "serve", "-db", dbArg, "-queue", "orders", "-addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
	}()

	url := servedURL(t, stdout, exited, &stderr)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("serving on %s, want loopback", url)
	}
	client := &http.Client{Timeout: waitLimit}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`<tr data-queue="orders">`,
		`data-count="pending"><a href="jobs?queue=orders&amp;status=pending">2</a>`,
		`data-count="quarantined"><a href="jobs?queue=orders&amp;status=quarantined" class="alert">1</a>`,
		`<span class="mode readonly"`,
	} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %s, body lacks %s:\n%s", url, resp.Status, want, body)
		}
	}
	// Read-only by default: the Requeue POST is refused.
	resp, err = client.Post(url+"requeue", "application/x-www-form-urlencoded", strings.NewReader("queue=orders&id=a"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST requeue without -writes: %s, want 403", resp.Status)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after an interrupt: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(waitLimit):
		t.Fatalf("still running %s after an interrupt", waitLimit)
	}
}

// servedURL reads the line in which serve says where it listens.
func servedURL(t *testing.T, stdout io.Reader, exited <-chan error, stderr *bytes.Buffer) string {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if m := regexp.MustCompile(`on (http://\S+/)$`).FindStringSubmatch(s.Text()); m != nil {
				line <- m[1]
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-line:
		return u
	case err := <-exited:
		t.Fatalf("serve exited before listening: %v\nstderr:\n%s", err, stderr.String())
	case <-time.After(waitLimit):
		t.Fatalf("serve did not say where it listens within %s", waitLimit)
	}
	return ""
}

// TestServeUsage: a usage mistake is exit 2, a missing database exit 1,
// and -h an answer.
func TestServeUsage(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.db")
	for _, tc := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"serve", "-db", missing, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"serve", "-nope"}, 2, "-nope"},
		{[]string{"serve", "-db", missing}, 1, "does not exist"},
	} {
		var out, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &out, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.inStderr) {
			t.Errorf("leaseq %q: exit %d, stderr:\n%s\nwant exit %d with %q", tc.args, code, stderr.String(), tc.code, tc.inStderr)
		}
	}
	var out bytes.Buffer
	if code := run(t.Context(), []string{"serve", "-h"}, &out, io.Discard); code != 0 || !strings.HasPrefix(out.String(), "usage: leaseq serve") {
		t.Errorf("serve -h: exit %d\n%s", code, out.String())
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve created the missing database: %v", err)
	}
}

// TestServeListsOnlyQueuesThatExist: without -queue, serve on a database
// that holds only the queue "orders" lists that queue and no empty
// "default" beside it.
func TestServeListsOnlyQueuesThatExist(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		seedServeDB(t, db)
		code, body := startServe(t, dbArg).request(t, http.MethodGet, "", "", nil, nil)
		if code != http.StatusOK || !strings.Contains(body, `<tr data-queue="orders">`) {
			t.Fatalf("GET /: %d, no row of queue orders:\n%s", code, body)
		}
		if strings.Contains(body, "queue=default") || strings.Contains(body, `data-queue="default"`) {
			t.Errorf("the overview shows a queue \"default\" that the database does not hold:\n%s", body)
		}
	})
}
