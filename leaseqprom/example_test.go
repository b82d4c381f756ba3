package leaseqprom_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A service registers the collector of its queues and the outcome metrics
// of its pools, and serves them on /metrics. This pool runs three jobs,
// one of which fails for good; the scrape then shows the queue's counts,
// read from the database, and what the pool made of each run.
func Example() {
	dir, err := os.MkdirTemp("", "leaseqprom-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := leaseq.Open(filepath.Join(dir, "queue.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	q, err := leaseq.New(ctx, db, leaseq.Options{Name: "orders"})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(leaseqprom.NewCollector(q))
	onOutcome, err := leaseqprom.NewOutcomes(reg)
	if err != nil {
		panic(err)
	}

	err = q.EnqueueBatch(ctx, []leaseq.Job{{ID: "o1", Kind: "ship"}, {ID: "o2", Kind: "ship"}, {ID: "o3", Kind: "refund"}})
	if err != nil {
		panic(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	var seen atomic.Int32 // the calls of several runs may overlap
	err = q.Work(wctx, leaseq.WorkerOptions{Owner: "w1", OnOutcome: func(o leaseq.Outcome) {
		onOutcome(o)
		if seen.Add(1) == 3 {
			stop()
		}
	}}, func(ctx context.Context, c leaseq.Claim) error {
		if c.Kind == "refund" {
			return leaseq.Permanent(errors.New("card expired"))
		}
		return nil
	})
	if err != nil {
		panic(err)
	}

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "leaseq_jobs{") || strings.HasPrefix(line, "leaseq_outcomes_total{") ||
			strings.HasPrefix(line, "leaseq_wait_seconds_count{") {
			fmt.Println(line)
		}
	}
	// Output:
	// leaseq_jobs{queue="orders",status="done"} 2
	// leaseq_jobs{queue="orders",status="expired"} 0
	// leaseq_jobs{queue="orders",status="leased"} 0
	// leaseq_jobs{queue="orders",status="pending"} 0
	// leaseq_jobs{queue="orders",status="quarantined"} 1
	// leaseq_jobs{queue="orders",status="scheduled"} 0
	// leaseq_outcomes_total{kind="refund",outcome="failed",queue="orders"} 1
	// leaseq_outcomes_total{kind="ship",outcome="finished",queue="orders"} 2
	// leaseq_wait_seconds_count{kind="refund",queue="orders"} 1
	// leaseq_wait_seconds_count{kind="ship",queue="orders"} 2
}
