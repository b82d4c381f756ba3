package browsertest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/dashboard"
)

// chromium is Debian's Chromium, which CI installs with apt; a test
// tool's own browser download cannot work where there is no network.
const chromium = "/usr/bin/chromium"

// stepTimeout bounds every wait on the page: a page of this dashboard
// renders in milliseconds, so a wait this long means it never will.
const stepTimeout = 20 * time.Second

// rebindName is an attacker's host name that the browser resolves to
// 127.0.0.1, the dashboard's address (TestRebindingRefused).
const rebindName = "rebind.evil.example"

var shots = flag.String("shots", "", "save screenshots of the overview and of a job page in this directory")

// The browser and the seeded database every test of the process shares.
var (
	browser   context.Context // a chromedp context whose browser is started
	seedPath  string          // the seeded database; each test works on a copy
	seedNow   time.Time       // the seeded clock's last instant
	dialogSaw atomic.Int64    // JavaScript dialogs opened in any tab
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

// run seeds the database and starts the browser, runs the tests, and
// stops the browser and removes its profile and the database.
func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "leaseq-browsertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	seedPath = filepath.Join(dir, "seed.db")
	if seedNow, err = seed(context.Background(), seedPath); err != nil {
		fmt.Fprintln(os.Stderr, "seeding the database:", err)
		return 1
	}
	if _, err := os.Stat(chromium); err != nil {
		fmt.Fprintf(os.Stderr, "no browser: %v (install Debian's chromium: apt-get install -y chromium)\n", err)
		return 1
	}
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // root in a container has no user namespace to sandbox in
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Every page is on 127.0.0.1; no host name may resolve, so
		// nothing the browser does on its own leaves the machine, except
		// rebindName, which resolves to 127.0.0.1 as an attacker's name
		// does after DNS rebinding.
		chromedp.Flag("host-resolver-rules", "MAP "+rebindName+" 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(1280, 900),
	)...)
	defer stopAlloc()
	var stopBrowser context.CancelFunc
	browser, stopBrowser = chromedp.NewContext(alloc)
	defer stopBrowser()
	if err := chromedp.Do(browser); err != nil {
		fmt.Fprintln(os.Stderr, "starting", chromium+":", err)
		return 1
	}
	return m.Run()
}

// site is the dashboard on a copy of the seeded database, served on
// loopback under the prefix /ops/, and a browser tab to look at it with.
type site struct {
	t     *testing.T
	ctx   context.Context
	clock *leaseq.ManualClock
	q     *leaseq.Queue // "default"
	mail  *leaseq.Queue
	base  string // the dashboard's URL
	port  int    // the port it is served on
	tab   context.Context
}

// newSite serves the dashboard with opts and opens a tab.
func newSite(t *testing.T, opts dashboard.Options) *site {
	t.Helper()
	path := filepath.Join(t.TempDir(), "q.db")
	copyFile(t, seedPath, path)
	db, err := leaseq.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := &site{t: t, ctx: context.Background(), clock: leaseq.NewManualClock(seedNow)}
	if s.q, err = leaseq.New(s.ctx, db, leaseq.Options{Clock: s.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.q.Close() })
	if s.mail, err = leaseq.New(s.ctx, db, leaseq.Options{Name: "mail", Clock: s.clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.mail.Close() })
	opts.Clock = s.clock
	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", dashboard.New(s.q, opts)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.base = srv.URL + "/ops/"
	s.port = srv.Listener.Addr().(*net.TCPAddr).Port

	tab, closeTab := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogSaw.Add(1)
		}
	}))
	t.Cleanup(closeTab)
	if err := chromedp.Do(tab); err != nil { // opens the tab, with no timeout (see chromedp.Run)
		t.Fatal(err)
	}
	s.tab = tab
	return s
}

// do runs the steps in the tab, bounded by stepTimeout.
func (s *site) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.tab, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the tab and returns its value.
func eval[T any](s *site, expr string, opts ...chromedp.EvaluateOption) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.tab, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		s.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression is true in the tab.
func (s *site) waitFor(what, expr string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.tab, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(stepTimeout),
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		s.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// screenshot saves the whole page as DIR/name.png when -shots DIR is given.
func (s *site) screenshot(name string) {
	s.t.Helper()
	if *shots == "" {
		return
	}
	ctx, cancel := context.WithTimeout(s.tab, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*shots, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// status is the status of job id in q, read from the database.
func (s *site) status(q *leaseq.Queue, id string) leaseq.Status {
	s.t.Helper()
	st, err := q.Get(s.ctx, id)
	if err != nil {
		s.t.Fatal(err)
	}
	return st.Status
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
