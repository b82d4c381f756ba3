package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
)

// copyOldSchema copies the root package's testdata/NAME (a database of an
// earlier schema) into a directory of the test's own.
func copyOldSchema(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	must(t, err)
	path := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(path, b, 0o600))
	return path
}

// dirState is every file of dir with its bytes, to show that a command
// changed nothing (no byte of the database, no journal left behind).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	m := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		must(t, err)
		m[e.Name()] = string(b)
	}
	return m
}

// TestCLIOlderSchemaRefused (issue: read-only commands wrote): on a copy
// of a version-1 and a version-2 file, stats, list, show and serve (and
// the writing commands too) exit 1 with a message that names the version
// and leaseq migrate, and leave every byte of the directory as it was —
// before, stats upgraded a version-2 file and failed on a version-1 one
// with "no such column: queue". leaseq migrate then upgrades it, and
// stats reads it.
func TestCLIOlderSchemaRefused(t *testing.T) {
	for v, c := range map[int]struct{ file, id string }{1: {"schema-v1.db", "v1-done"}, 2: {"schema-v2.db", "default-done1"}} {
		t.Run(c.file, func(t *testing.T) {
			path := copyOldSchema(t, c.file)
			before := dirState(t, filepath.Dir(path))
			want := fmt.Sprintf("schema version is %d, older than this leaseq's %d", v, leaseq.SchemaVersion)
			for _, args := range [][]string{
				{"stats"}, {"stats", "-json"}, {"list"}, {"show", c.id}, {"serve", "-addr", "127.0.0.1:0"},
				{"requeue", c.id}, {"cancel", c.id}, {"purge", "-older-than", "0s"},
			} {
				r := leaseqRun(t, path, []string{"LEASEQ_DB=" + path}, args...)
				if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "leaseq migrate") || r.stdout != "" {
					t.Errorf("leaseq %q: exit %d, stdout %q, stderr:\n%s\nwant exit 1 saying %q and leaseq migrate", args, r.code, r.stdout, r.stderr, want)
				}
				if !reflect.DeepEqual(dirState(t, filepath.Dir(path)), before) {
					t.Fatalf("leaseq %q changed the database's directory", args)
				}
			}
			r := leaseqRun(t, path, nil, "migrate", "-db", path)
			if r.code != 0 || r.stdout != fmt.Sprintf("upgraded the schema from version %d to %d\n", v, leaseq.SchemaVersion) {
				t.Fatalf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = leaseqRun(t, path, nil, "stats", "-db", path)
			if r.code != 0 || !strings.Contains(r.stdout, "QUEUE") {
				t.Fatalf("stats after migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = leaseqRun(t, path, nil, "migrate", "-db", path, "-json")
			if r.code != 0 || r.stdout != fmt.Sprintf("{\n  \"from\": %d,\n  \"to\": %d\n}\n", leaseq.SchemaVersion, leaseq.SchemaVersion) {
				t.Fatalf("migrate -json again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestCLINewerSchemaRefusedWhenEmpty: a database of a newer schema is
// refused by every command even when it holds no job (stats said "no jobs
// in any queue" and exited 0), and by migrate, on both engines.
func TestCLINewerSchemaRefusedWhenEmpty(t *testing.T) {
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		// The engine's own current version (PostgreSQL numbers its schema
		// on its own).
		_, current, err := leaseq.Migrate(t.Context(), db)
		must(t, err)
		later := current + 1
		query := fmt.Sprintf("PRAGMA user_version = %d", later)
		if isPostgresURL(dbArg) {
			query = fmt.Sprintf("UPDATE leaseq_schema SET version = %d", later)
		}
		_, err = db.Exec(query)
		must(t, err)
		want := fmt.Sprintf("schema version is %d, this leaseq knows version %d and older", later, current)
		for _, args := range [][]string{{"stats"}, {"list"}, {"show", "a"}, {"serve", "-addr", "127.0.0.1:0"}, {"purge", "-older-than", "0s"}, {"migrate"}} {
			r := leaseqRun(t, dbArg, []string{"LEASEQ_DB=" + dbArg}, args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) || r.stdout != "" {
				t.Errorf("leaseq %q on a newer, empty schema: exit %d, stdout %q, stderr:\n%s\nwant exit 1 saying %q", args, r.code, r.stdout, r.stderr, want)
			}
		}
	})
}

// TestCLIPostgresReadOnlyRunsNoDDL: on PostgreSQL, stats, list, show and a
// read-only serve run no DDL: an event trigger that fails every DDL
// statement stays silent.
func TestCLIPostgresReadOnlyRunsNoDDL(t *testing.T) {
	dbArg, db := postgresDB(t)
	scene(t, db)
	for _, stmt := range []string{
		`CREATE FUNCTION no_ddl() RETURNS event_trigger LANGUAGE plpgsql AS
			$$ BEGIN RAISE EXCEPTION 'DDL: %', tg_tag; END $$`,
		`CREATE EVENT TRIGGER no_ddl ON ddl_command_start EXECUTE FUNCTION no_ddl()`,
	} {
		_, err := db.Exec(stmt)
		must(t, err)
	}
	for _, args := range [][]string{{"stats"}, {"list"}, {"show", "order-3"}} {
		if r := leaseqRun(t, dbArg, atNow(dbArg), args...); r.code != 0 {
			t.Errorf("leaseq %q: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	srv := startServe(t, dbArg, "-queue", "emails")
	for _, ref := range []string{"", "jobs?queue=default", "job?queue=default&id=order-3"} {
		if code, body := srv.get(t, ref, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", ref, code, body)
		}
	}
	srv.stop(t)
}

// TestCLIReadOnlyServeWritesNothing: a read-only serve on SQLite opens the
// file read-only: after pages of every queue were served, not a byte of
// the directory changed.
func TestCLIReadOnlyServeWritesNothing(t *testing.T) {
	dbArg, db := sqliteDB(t)
	scene(t, db)
	must(t, db.Close())
	before := dirState(t, filepath.Dir(dbArg))
	srv := startServe(t, dbArg, "-queue", "orders")
	for _, ref := range []string{"", "live", "jobs?queue=emails", "job?queue=default&id=order-6"} {
		if code, body := srv.get(t, ref, ""); code != http.StatusOK {
			t.Errorf("GET %s: %d\n%s", ref, code, body)
		}
	}
	srv.stop(t)
	if !reflect.DeepEqual(dirState(t, filepath.Dir(dbArg)), before) {
		t.Fatal("a read-only serve changed the database's directory")
	}
}

// served is a running leaseq serve.
type served struct {
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:PORT/
	port   string
	exited chan error
	stderr *bytes.Buffer
	client *http.Client
}

// startServe runs leaseq serve on dbArg on a free loopback port, with the
// extra flags, and returns once it listens; it is killed when the test
// ends if stop did not stop it.
func startServe(t *testing.T, dbArg string, flags ...string) *served {
	t.Helper()
	s := &served{exited: make(chan error, 1), stderr: &bytes.Buffer{},
		client: &http.Client{Timeout: waitLimit, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	s.cmd = exec.Command(binary, append([]string{"serve", "-db", dbArg, "-addr", "127.0.0.1:0"}, flags...)...)
	s.cmd.Stderr = s.stderr
	stdout, err := s.cmd.StdoutPipe()
	must(t, err)
	must(t, s.cmd.Start())
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
	s.url = servedURL(t, stdout, s.exited, s.stderr)
	u, err := url.Parse(s.url)
	must(t, err)
	s.port = u.Port()
	return s
}

// request sends method to ref with the Host host ("": the URL's) and the
// headers, and returns the status and body.
func (s *served) request(t *testing.T, method, ref, host string, header http.Header, form url.Values) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.url+ref, strings.NewReader(form.Encode()))
	must(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if host != "" {
		req.Host = host
	}
	resp, err := s.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

func (s *served) get(t *testing.T, ref, host string) (int, string) {
	t.Helper()
	return s.request(t, http.MethodGet, ref, host, nil, nil)
}

// stop interrupts the server and waits for it to exit 0.
func (s *served) stop(t *testing.T) {
	t.Helper()
	must(t, s.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("after an interrupt: %v\nstderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(waitLimit):
		t.Fatalf("still running %s after an interrupt", waitLimit)
	}
}

// secretPayload is the job payload TestServeRefusesOtherHosts must not
// show to another host.
const secretPayload = "card 4111-1111"

// TestServeRefusesOtherHosts (DNS rebinding): leaseq serve on loopback
// with writes allowed answers a request for another host name with 421 —
// the overview, a job's page with its payload, and a POST shaped like a
// rebinding page's (Host and Origin both its name, Sec-Fetch-Site
// same-origin), which changes nothing — and answers its own address,
// localhost, [::1] and the -allow-host names.
func TestServeRefusesOtherHosts(t *testing.T) {
	// Looked for whole: the 421's text names the host asked for, whose
	// port (a free one) may hold the digits of the card number.
	forEachEngine(t, func(t *testing.T, dbArg string, db *sql.DB) {
		seedServeDB(t, db)
		q, err := leaseq.New(t.Context(), db, leaseq.Options{Name: "orders"})
		must(t, err)
		defer q.Close()
		must(t, q.Enqueue(t.Context(), leaseq.Job{ID: "secret", Payload: []byte(secretPayload)}))
		before, err := q.Get(t.Context(), "b")
		must(t, err)
		s := startServe(t, dbArg, "-queue", "orders", "-writes", "-allow-host", "dash.example, ops.example", "-allow-host", "third.example")
		evil := "rebind.evil.example:" + s.port
		for _, ref := range []string{"", "job?queue=orders&id=secret"} {
			if code, body := s.get(t, ref, evil); code != http.StatusMisdirectedRequest || strings.Contains(body, secretPayload) {
				t.Errorf("GET %q with Host %s: %d, want 421 without the page\n%s", ref, evil, code, body)
			}
		}
		form := url.Values{"queue": {"orders"}, "id": {"b"}, "reason": {"rebound"}}
		rebound := http.Header{"Origin": {"http://" + evil}, "Sec-Fetch-Site": {"same-origin"}}
		if code, _ := s.request(t, http.MethodPost, "cancel", evil, rebound, form); code != http.StatusMisdirectedRequest {
			t.Errorf("rebound POST cancel: %d, want 421", code)
		}
		if after, err := q.Get(t.Context(), "b"); err != nil || !reflect.DeepEqual(after, before) {
			t.Fatalf("after the rebound POST job b is\n%+v (%v), want\n%+v", after, err, before)
		}
		for _, host := range []string{"", "localhost:" + s.port, "[::1]:" + s.port, "dash.example:" + s.port, "ops.example", "THIRD.example:1"} {
			if code, body := s.get(t, "job?queue=orders&id=secret", host); code != http.StatusOK || !strings.Contains(body, secretPayload) {
				t.Errorf("GET the job with Host %q: %d, want 200 with the payload", host, code)
			}
		}
		own := "localhost:" + s.port
		code, _ := s.request(t, http.MethodPost, "cancel", own, http.Header{"Origin": {"http://" + own}, "Sec-Fetch-Site": {"same-origin"}}, form)
		if st, _ := q.Get(t.Context(), "b"); code != http.StatusSeeOther || st.Status != leaseq.StatusQuarantined {
			t.Errorf("POST cancel with Host %s: %d, job %s; want 303 and quarantined", own, code, st.Status)
		}
		s.stop(t)
	})
}

// TestCLIPasswordsNeverShown: a PostgreSQL password in the URL's userinfo
// or in a password or sslpassword parameter is shown as xxxxx in every
// error and in serve's banner, and a URL that does not parse is not
// shown at all — nor is the driver's message about it, which quotes part
// of it.
func TestCLIPasswordsNeverShown(t *testing.T) {
	const secret = "s3cretpw"
	for _, c := range []struct{ db, want string }{
		{"postgres://ops:" + secret + "@127.0.0.1:1/jobs?sslmode=disable", "database postgres://ops:xxxxx@127.0.0.1:1/jobs?sslmode=disable: "},
		{"postgres://ops@127.0.0.1:1/jobs?password=" + secret + "&sslmode=disable", "database postgres://ops@127.0.0.1:1/jobs?password=xxxxx&sslmode=disable: "},
		{"postgresql://ops@127.0.0.1:1/jobs?sslpassword=" + secret + "&sslmode=disable", "sslpassword=xxxxx"},
		{"postgres://ops@127.0.0.1:1/jobs?PassWord=" + secret + "&sslmode=bogus", "PassWord=xxxxx"},
		{"postgres://ops:" + secret + "@127.0.0.1:1/jobs?sslmode=bogus", "ops:xxxxx@"},
		{"postgres://ops:s3c%ret" + secret[3:] + "@127.0.0.1/jobs", "database URL does not parse (it is not shown"},
		{"postgres://ops:s3c/ret" + secret[3:] + "@127.0.0.1/jobs", "database URL does not parse (it is not shown"},
	} {
		for _, args := range [][]string{{"stats", "-db", c.db}, {"requeue", "-db", c.db, "a"}, {"migrate", "-db", c.db}, {"serve", "-db", c.db, "-addr", "127.0.0.1:0"}} {
			r := leaseqRun(t, "", nil, args...)
			if r.code != 1 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr+r.stdout, "cret") {
				t.Errorf("leaseq %q: exit %d, stderr:\n%s\nwant exit 1 saying %q, and no part of the password", args, r.code, r.stderr, c.want)
			}
		}
	}
	dbArg, _ := postgresDB(t)
	sep := "?"
	if strings.Contains(dbArg, "?") {
		sep = "&"
	}
	withSecret := dbArg + sep + "password=" + secret
	cmd := exec.Command(binary, "serve", "-db", withSecret, "-addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { cmd.Process.Kill(); <-exited }()
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 4096)
		n, _ := stdout.Read(b)
		line <- string(b[:n])
	}()
	select {
	case l := <-line:
		if strings.Contains(l, secret) || !strings.Contains(l, "password=xxxxx") {
			t.Errorf("serve's banner: %q, want the password shown as xxxxx", l)
		}
	case err := <-exited:
		t.Fatalf("serve exited: %v\n%s", err, stderr.String())
	case <-time.After(waitLimit):
		t.Fatalf("serve printed no banner within %s", waitLimit)
	}
}

// TestServeTimeouts: serve's server bounds reading a request's headers and
// body, writing the answer, and an idle connection (it set only
// ReadHeaderTimeout), each long enough for any page of the dashboard.
func TestServeTimeouts(t *testing.T) {
	srv := newServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout,
		"WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d < 5*time.Second || d > 5*time.Minute {
			t.Errorf("%s is %s, want a bound from 5s to 5m", name, d)
		}
	}
}

// TestCLIWALFileRefused: every command on a SQLite file in WAL mode exits
// 1 saying so, and leaves the file as it was, still in WAL mode (leaseq.Open
// used to convert it to a rollback journal).
func TestCLIWALFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := sql.Open("sqlite", "file:"+path)
	must(t, err)
	for _, stmt := range []string{"PRAGMA journal_mode=WAL", "CREATE TABLE leaseq_jobs (x)"} {
		_, err := db.Exec(stmt)
		must(t, err)
	}
	must(t, db.Close())
	before := dirState(t, filepath.Dir(path))
	for _, args := range [][]string{{"stats"}, {"requeue", "a"}, {"migrate"}} {
		r := leaseqRun(t, path, []string{"LEASEQ_DB=" + path}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "the database is in WAL mode") {
			t.Errorf("leaseq %q on a WAL file: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
		if !reflect.DeepEqual(dirState(t, filepath.Dir(path)), before) {
			t.Fatalf("leaseq %q changed the WAL file's directory", args)
		}
	}
}
