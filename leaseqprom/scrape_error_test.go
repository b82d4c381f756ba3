package leaseqprom_test

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scrapeErrorText is the exposition of leaseq_scrape_error for queue
// default at v.
func scrapeErrorText(v int) string {
	return "# HELP leaseq_scrape_error 1 when the scrape could not read the queue's counts (its leaseq_jobs and leaseq_paused are then absent), else 0.\n" +
		"# TYPE leaseq_scrape_error gauge\n" +
		"leaseq_scrape_error{queue=\"default\"} " + string(rune('0'+v)) + "\n"
}

// TestScrapeDatabaseDown: a scrape over HTTP of a process whose database
// cannot be read — its *sql.DB closed, or the SQLite file under another
// connection's EXCLUSIVE lock — still answers 200 with the outcome
// counters and the Go runtime's metrics; the queue's gauges are absent and
// leaseq_scrape_error is 1, where it is 0 while the database answers. The
// locked read ends with the collector's timeout (set short here).
func TestScrapeDatabaseDown(t *testing.T) {
	leaseqprom.SetScrapeTimeout(t, 200*time.Millisecond)
	for _, down := range []string{"closed *sql.DB", "EXCLUSIVE lock"} {
		t.Run(down, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.db")
			db, err := leaseq.Open(path)
			must(t, err)
			defer db.Close()
			q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: "default", Clock: leaseq.NewManualClock(t0)})
			must(t, err)
			defer q.Close()
			must(t, q.Enqueue(context.Background(), leaseq.Job{ID: "a"}))

			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), leaseqprom.NewCollector(q))
			onOutcome, err := leaseqprom.NewOutcomes(reg)
			must(t, err)
			onOutcome(leaseq.Outcome{Claim: leaseq.Claim{Queue: "default", Kind: "ship"}, Result: "finished"})
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			defer srv.Close()

			page := scrape(t, srv.URL)
			for _, want := range []string{`leaseq_jobs{queue="default",status="pending"} 1`, `leaseq_paused{queue="default"} 0`,
				`leaseq_scrape_error{queue="default"} 0`, "leaseq_outcomes_total{", "go_goroutines "} {
				if !strings.Contains(page, want) {
					t.Fatalf("healthy scrape lacks %q:\n%s", want, page)
				}
			}

			switch down {
			case "closed *sql.DB":
				must(t, db.Close())
			case "EXCLUSIVE lock":
				other, err := sql.Open("sqlite", "file:"+path)
				must(t, err)
				defer other.Close()
				conn, err := other.Conn(context.Background())
				must(t, err)
				defer conn.Close()
				_, err = conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
				must(t, err)
				defer conn.ExecContext(context.Background(), "ROLLBACK")
			}
			page = scrape(t, srv.URL)
			for _, want := range []string{`leaseq_scrape_error{queue="default"} 1`,
				`leaseq_outcomes_total{kind="ship",outcome="finished",queue="default"} 1`, "go_goroutines ", "go_memstats_alloc_bytes "} {
				if !strings.Contains(page, want) {
					t.Errorf("scrape with the database %s lacks %q", down, want)
				}
			}
			for _, gone := range []string{"leaseq_jobs{", "leaseq_paused{"} {
				if strings.Contains(page, gone) {
					t.Errorf("scrape with the database %s reports %s, which it could not read", down, gone)
				}
			}
			if t.Failed() {
				t.Logf("page:\n%s", page)
			}
		})
	}
}

// scrape GETs url's /metrics and returns the page, failing t unless the
// answer is 200 within 30 s.
func scrape(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	return string(body)
}

// TestScrapeErrorGauge: the collector alone, through testutil: 0 while
// the queue reads, 1 once it does not.
func TestScrapeErrorGauge(t *testing.T) {
	_, qs := open(t, "default")
	col := leaseqprom.NewCollector(qs[0])
	if err := testutil.CollectAndCompare(col, strings.NewReader(scrapeErrorText(0)), "leaseq_scrape_error"); err != nil {
		t.Fatal(err)
	}
	must(t, qs[0].Close())
	if err := testutil.CollectAndCompare(col, strings.NewReader(scrapeErrorText(1)), "leaseq_scrape_error"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "leaseq_jobs", "leaseq_paused"); n != 0 {
		t.Fatalf("%d series of leaseq_jobs and leaseq_paused for a queue that could not be read, want 0", n)
	}
}
