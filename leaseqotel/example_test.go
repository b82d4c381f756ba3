package leaseqotel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqotel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// A pool with leaseqotel's middleware and outcome hook: every handler run
// is a Consumer span, ended once the queue decided what became of its
// result, and the run, the wait and the outcome are measured. A service
// passes its own providers (otel.GetTracerProvider(), say); this one
// records the spans in memory to print them.
func Example() {
	dir, err := os.MkdirTemp("", "leaseqotel-example")
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
	q, err := leaseq.New(ctx, db, leaseq.Options{Name: "emails"})
	if err != nil {
		panic(err)
	}
	defer q.Close()

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	onOutcome, err := leaseqotel.Outcomes(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
	if err != nil {
		panic(err)
	}

	if err := q.Enqueue(ctx, leaseq.Job{ID: "welcome-7", Kind: "email.welcome"}); err != nil {
		panic(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	err = q.Work(wctx, leaseq.WorkerOptions{
		Owner:      "mailer-1",
		Middleware: []func(leaseq.Handler) leaseq.Handler{leaseqotel.Middleware(tp)},
		OnOutcome:  func(o leaseq.Outcome) { onOutcome(o); stop() },
	}, func(ctx context.Context, c leaseq.Claim) error { return nil })
	if err != nil {
		panic(err)
	}

	for _, s := range spans.Ended() {
		fmt.Println(s.Name(), s.SpanKind())
		var lines []string
		for _, kv := range s.Attributes() {
			lines = append(lines, fmt.Sprintf("  %s=%s", kv.Key, kv.Value.Emit()))
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Println(l)
		}
	}
	// Output:
	// process emails consumer
	//   leaseq.attempt=1
	//   leaseq.kind=email.welcome
	//   leaseq.outcome=finished
	//   leaseq.owner=mailer-1
	//   leaseq.token=1
	//   messaging.destination.name=emails
	//   messaging.message.id=welcome-7
	//   messaging.operation.name=process
	//   messaging.operation.type=process
	//   messaging.system=leaseq
}
