// Rule numbers in the comments of the tests are those of docs/rules.md.

package dashboard_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
	"github.com/leaseq/leaseq/internal/pgtest"
)

// t0 is the instant every test's clock starts at.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// site is a dashboard served over real HTTP on loopback, on a real SQLite
// file or PostgreSQL database, with a manual clock shared by the queues and the dashboard.
type site struct {
	t      *testing.T
	ctx    context.Context
	clock  *leaseq.ManualClock
	q      *leaseq.Queue // the queue "default"
	srv    *httptest.Server
	base   string // the dashboard's URL, ending in "/"
	client *http.Client
}

// engine opens a fresh, empty database of one engine, closed when the test
// ends.
type engine func(t *testing.T) *sql.DB

// forEngines runs test on SQLite and on PostgreSQL, as parallel subtests.
func forEngines(t *testing.T, test func(t *testing.T, e engine)) {
	t.Parallel()
	for _, e := range []struct {
		name string
		open func(testing.TB) *sql.DB
	}{{"sqlite", sqliteDB}, {"postgres", pgtest.DB}} {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			test(t, func(t *testing.T) *sql.DB { return e.open(t) })
		})
	}
}

// sqliteDB is a new SQLite file in t.TempDir().
func sqliteDB(t testing.TB) *sql.DB {
	db, err := leaseq.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newSite serves the dashboard of a fresh database at the root of a test
// server.
func newSite(t *testing.T, e engine, opts dashboard.Options) *site {
	t.Helper()
	s := openSite(t, e, opts)
	s.serve(s.handler(opts), "/")
	return s
}

// openSite opens the database and the queue "default", without serving.
func openSite(t *testing.T, e engine, opts dashboard.Options) *site {
	t.Helper()
	db := e(t)
	s := &site{t: t, ctx: context.Background(), clock: leaseq.NewManualClock(t0)}
	var err error
	s.q, err = leaseq.New(s.ctx, db, leaseq.Options{Clock: s.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.q.Close() })
	return s
}

// handler is the dashboard of s's queue with opts, on s's clock.
func (s *site) handler(opts dashboard.Options) http.Handler {
	if opts.Clock == nil {
		opts.Clock = s.clock
	}
	return dashboard.New(s.q, opts)
}

// serve starts a loopback server with h; the dashboard is at path.
func (s *site) serve(h http.Handler, path string) {
	s.srv = httptest.NewServer(h)
	s.t.Cleanup(s.srv.Close)
	s.base = s.srv.URL + path
	s.client = &http.Client{
		Timeout: 10 * time.Second,
		// Redirects are checked by the tests, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// queue opens another queue on the site's database, on its clock.
func (s *site) queue(name string) *leaseq.Queue {
	s.t.Helper()
	q, err := leaseq.New(s.ctx, s.q.DB(), leaseq.Options{Name: name, Clock: s.clock})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { q.Close() })
	return q
}

// url resolves ref (relative, as the pages link) against the dashboard.
func (s *site) url(ref string) string {
	s.t.Helper()
	base, err := url.Parse(s.base)
	if err != nil {
		s.t.Fatal(err)
	}
	r, err := base.Parse(ref)
	if err != nil {
		s.t.Fatal(err)
	}
	return r.String()
}

// get fetches ref and returns the status and body.
func (s *site) get(ref string) (int, string) {
	s.t.Helper()
	resp, err := s.client.Get(s.url(ref))
	if err != nil {
		s.t.Fatal(err)
	}
	return s.read(resp)
}

// page fetches ref and fails the test unless it is a 200 HTML page.
func (s *site) page(ref string) string {
	s.t.Helper()
	code, body := s.get(ref)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s: %d\n%s", ref, code, body)
	}
	return body
}

// post submits form to ref with the extra headers, and returns the
// response's status, Location and body.
func (s *site) post(ref string, form url.Values, header http.Header) (int, string, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url(ref), strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	loc := resp.Header.Get("Location")
	code, body := s.read(resp)
	return code, loc, body
}

func (s *site) read(resp *http.Response) (int, string) {
	s.t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// enqueue adds jobs to q or fails the test.
func (s *site) enqueue(q *leaseq.Queue, jobs ...leaseq.Job) {
	s.t.Helper()
	if err := q.EnqueueBatch(s.ctx, jobs); err != nil {
		s.t.Fatal(err)
	}
}

// claim claims one job of q or fails the test.
func (s *site) claim(q *leaseq.Queue, lease time.Duration) leaseq.Claim {
	s.t.Helper()
	c, ok, err := q.Claim(s.ctx, "worker-1", lease)
	if err != nil || !ok {
		s.t.Fatalf("Claim: %v %v", ok, err)
	}
	return c
}

// quarantine claims and fails one job of q, which must be the next
// claimable, with reason.
func (s *site) quarantine(q *leaseq.Queue, id, reason string) {
	s.t.Helper()
	c := s.claim(q, time.Minute)
	if c.ID != id {
		s.t.Fatalf("claimed %q, want %q", c.ID, id)
	}
	if ok, err := q.Fail(s.ctx, c, reason); !ok || err != nil {
		s.t.Fatalf("Fail(%q): %v %v", id, ok, err)
	}
}

// status is the status of job id in q.
func (s *site) status(q *leaseq.Queue, id string) leaseq.Status {
	s.t.Helper()
	st, err := q.Get(s.ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Status
}

// counts reads the overview's count cells of one queue's row: status →
// the number shown.
func counts(t *testing.T, body, queue string) map[string]string {
	t.Helper()
	row := regexp.MustCompile(`(?s)<tr data-queue="` + regexp.QuoteMeta(queue) + `">(.*?)</tr>`).FindStringSubmatch(body)
	if row == nil {
		t.Fatalf("no row for queue %q in:\n%s", queue, body)
	}
	m := map[string]string{}
	for _, c := range regexp.MustCompile(`(?s)data-count="(\w+)">(.*?)</td>`).FindAllStringSubmatch(row[1], -1) {
		m[c[1]] = strings.TrimSpace(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(c[2], ""))
	}
	return m
}

func TestMain(m *testing.M) { pgtest.Main(m) }
