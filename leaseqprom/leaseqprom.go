// Package leaseqprom exports a leaseq queue to Prometheus (rule 52 in
// docs/rules.md): a collector of each queue's jobs by status, read from the
// database on every scrape, and the outcome counter and histograms of the
// worker pools of this process, fed by WorkerOptions.OnOutcome.
//
//	prometheus.MustRegister(leaseqprom.NewCollector(q))
//	onOutcome, err := leaseqprom.NewOutcomes(prometheus.DefaultRegisterer)
//	…
//	q.Work(ctx, leaseq.WorkerOptions{Owner: "w1", OnOutcome: onOutcome}, h)
//
// It is a module of its own, so that leaseq itself needs nothing but the
// standard library and its SQLite driver.
package leaseqprom

import (
	"context"
	"sync"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/prometheus/client_golang/prometheus"
)

// ScrapeTimeout bounds the reads of one scrape, for every queue together:
// a queue not read by then is reported as leaseq_scrape_error 1. It is
// half of Prometheus's default scrape_timeout (10 s), so that the page
// reaches the server before it gives up on the whole target.
const ScrapeTimeout = 5 * time.Second

// scrapeTimeout is ScrapeTimeout, shortened by tests.
var scrapeTimeout = ScrapeTimeout

var jobsDesc = prometheus.NewDesc("leaseq_jobs",
	"Jobs of the queue by status, as Queue.Stats counts them at the scrape.",
	[]string{"queue", "status"}, nil)

var pausedDesc = prometheus.NewDesc("leaseq_paused",
	"1 while the queue is paused (Queue.Pause), else 0.",
	[]string{"queue"}, nil)

var scrapeErrorDesc = prometheus.NewDesc("leaseq_scrape_error",
	"1 when the scrape could not read the queue's counts (its leaseq_jobs and leaseq_paused are then absent), else 0.",
	[]string{"queue"}, nil)

// collector reads each queue's Stats on every scrape.
type collector struct{ qs []*leaseq.Queue }

// NewCollector returns a collector of the jobs of each of qs by status:
// leaseq_jobs{queue, status} with the statuses of leaseq.Stats (pending,
// scheduled, leased, expired, done, quarantined), and leaseq_paused{queue},
// 1 while the queue is paused (Stats.Paused). Each scrape runs one
// Queue.Stats per queue, a read that takes no write lock and whose cost
// does not grow with the done and quarantined jobs kept (rule 35).
//
// leaseq_scrape_error{queue} is 1 when the queue's read failed or did not
// end within [ScrapeTimeout] (the database closed, down, or locked by
// another connection), else 0. Such a queue's leaseq_jobs and
// leaseq_paused are left out of that scrape, not made up, while the rest
// of the page — other queues, outcome counters, the Go runtime's metrics —
// is served as usual: a scrape error would fail the whole page, so
// Prometheus would lose every metric of the process just when the
// database is in trouble.
func NewCollector(qs ...*leaseq.Queue) prometheus.Collector { return &collector{qs: qs} }

// Describe sends the collector's descriptors.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobsDesc
	ch <- pausedDesc
	ch <- scrapeErrorDesc
}

// Collect reads and sends each queue's counts.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	for _, q := range c.qs {
		st, err := q.Stats(ctx)
		failed := 0.0
		if err != nil {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed, q.Name())
		if err == nil {
			sendCounts(ch, q.Name(), st)
		}
	}
}

// sendCounts sends the gauges of queue's Stats st.
func sendCounts(ch chan<- prometheus.Metric, queue string, st leaseq.Stats) {
	for _, s := range []struct {
		status string
		n      int
	}{{"pending", st.Pending}, {"scheduled", st.Scheduled}, {"leased", st.Leased}, {"expired", st.Expired},
		{"done", st.Done}, {"quarantined", st.Quarantined}} {
		ch <- prometheus.MustNewConstMetric(jobsDesc, prometheus.GaugeValue, float64(s.n), queue, s.status)
	}
	paused := 0.0
	if st.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, paused, queue)
}

// Buckets are the histograms' bucket bounds in seconds: from a millisecond
// to an hour, since a job's wait may be long.
var Buckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// NewOutcomes registers with reg, and returns the WorkerOptions.OnOutcome
// that feeds, the metrics of handler runs:
//
//	leaseq_outcomes_total{queue, kind, outcome}  counter
//	leaseq_run_seconds{queue, kind}              histogram of Outcome.Run
//	leaseq_wait_seconds{queue, kind}             histogram of Outcome.Wait
//
// outcome is Outcome.Result (finished, released, snoozed, failed,
// quarantined, refused, unrecorded): what the queue made of the result,
// so a refused finish is counted as refused. One function may serve every
// pool of a process. An error is reg's (say, the metrics are registered
// already).
func NewOutcomes(reg prometheus.Registerer) (func(leaseq.Outcome), error) {
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leaseq_outcomes_total",
		Help: "Handler runs by what the queue made of their result."}, []string{"queue", "kind", "outcome"})
	run := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leaseq_run_seconds",
		Help: "How long handlers ran.", Buckets: Buckets}, []string{"queue", "kind"})
	wait := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leaseq_wait_seconds",
		Help: "From a job being claimable to its handler starting.", Buckets: Buckets}, []string{"queue", "kind"})
	for _, c := range []prometheus.Collector{outcomes, run, wait} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var series sync.Map // seriesKey → *seriesOf, looked up once each
	return func(o leaseq.Outcome) {
		k := seriesKey{o.Claim.Queue, o.Claim.Kind, o.Result}
		v, ok := series.Load(k)
		if !ok {
			v, _ = series.LoadOrStore(k, &seriesOf{outcomes.WithLabelValues(k.queue, k.kind, k.result),
				run.WithLabelValues(k.queue, k.kind), wait.WithLabelValues(k.queue, k.kind)})
		}
		s := v.(*seriesOf)
		s.outcomes.Inc()
		s.run.Observe(o.Run.Seconds())
		s.wait.Observe(o.Wait.Seconds())
	}, nil
}

// seriesKey is the labels of one outcome's series.
type seriesKey struct{ queue, kind, result string }

// seriesOf is the series an outcome of one seriesKey adds to.
type seriesOf struct {
	outcomes  prometheus.Counter
	run, wait prometheus.Observer
}
