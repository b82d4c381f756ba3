package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqotel"
	"github.com/leaseq/leaseq/leaseqprom"
	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The hooks mode runs the work mode's Work(16) with the observability of
// rules 51 and 52 on and off, in alternating rounds: on, every handler run
// is a span of leaseqotel's middleware (an SDK tracer provider whose batch
// processor hands the spans to an exporter that drops them), and every
// outcome goes to leaseqotel's instruments (an SDK meter provider) and
// leaseqprom's (a registry).

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// observed sets opts up with both modules' middleware and outcome hooks.
func observed(opts *leaseq.WorkerOptions) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	otelOutcome, err := leaseqotel.Outcomes(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	check(err)
	promOutcome, err := leaseqprom.NewOutcomes(prometheus.NewRegistry())
	check(err)
	opts.Middleware = []func(leaseq.Handler) leaseq.Handler{leaseqotel.Middleware(tp)}
	opts.OnOutcome = func(o leaseq.Outcome) { otelOutcome(o); promOutcome(o) }
}

// hooksRate runs k jobs through Work with concurrency g on a fresh file,
// with set applied to the options (nil: none), and returns jobs/s and the
// process CPU time per job.
func hooksRate(name string, g, k int, set func(*leaseq.WorkerOptions)) (float64, time.Duration) {
	q := newLeaseq(name, "FULL", leaseq.Options{})
	defer q.DB().Close()
	fillLeaseq(q, k)
	opts := leaseq.WorkerOptions{Owner: "bench", Concurrency: g, Logger: quiet}
	if set != nil {
		set(&opts)
	}
	var done atomic.Int64
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	cpu0 := cpuTime()
	start := time.Now()
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, opts, func(context.Context, leaseq.Claim) error {
			if done.Add(1) == int64(k) {
				close(all)
			}
			return nil
		})
	}()
	<-all
	cancel()
	check(<-returned)
	return float64(k) / time.Since(start).Seconds(), (cpuTime() - cpu0) / time.Duration(k)
}

func hooksMode() {
	k := n(20000)
	var cpuOff, cpuOn []time.Duration
	rate := func(name string, set func(*leaseq.WorkerOptions), cpu *[]time.Duration) func() float64 {
		return func() float64 {
			r, c := hooksRate(name, 16, k, set)
			*cpu = append(*cpu, c)
			return r
		}
	}
	runRounds("hooks: Work(16) with leaseqotel's middleware and both modules' outcome hooks, and without", []measure{
		{"leaseq Work, Concurrency 16", "jobs/s", rate("hooks-off.db", nil, &cpuOff)},
		{"leaseq Work, Concurrency 16, traced and measured", "jobs/s", rate("hooks-on.db", observed, &cpuOn)},
	}, []ratio{
		{"with / without", 1, 0, "≥ 0.9"},
	})
	fmt.Printf("  CPU per job: median %v without, %v with\n", time.Duration(median(durations(cpuOff))),
		time.Duration(median(durations(cpuOn))))
	fmt.Println("  (spans: an SDK tracer provider, batch processor, exporter that drops them; metrics: an SDK meter provider and a Prometheus registry)")
}
