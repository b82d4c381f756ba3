// Package leaseqotel traces and measures leaseq's handler runs with
// OpenTelemetry (rule 52 in docs/rules.md): a span per run, following the
// messaging conventions, and histograms and a counter of the runs'
// outcomes.
//
//	onOutcome, err := leaseqotel.Outcomes(otel.GetMeterProvider())
//	…
//	q.Work(ctx, leaseq.WorkerOptions{Owner: "w1",
//		Middleware: []func(leaseq.Handler) leaseq.Handler{leaseqotel.Middleware(otel.GetTracerProvider())},
//		OnOutcome:  onOutcome}, h)
//
// It is a module of its own, so that leaseq itself needs nothing but the
// standard library and its SQLite driver.
package leaseqotel

import (
	"context"
	"errors"
	"sync"

	"github.com/leaseq/leaseq"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/leaseq/leaseq/leaseqotel"

// The attributes' keys beyond the messaging conventions' own.
const (
	KindKey    = attribute.Key("leaseq.kind")
	TokenKey   = attribute.Key("leaseq.token")
	AttemptKey = attribute.Key("leaseq.attempt")
	OwnerKey   = attribute.Key("leaseq.owner")
	OutcomeKey = attribute.Key("leaseq.outcome")
)

// Middleware returns the WorkerOptions.Middleware that runs each handler in
// a span of tp's: kind Consumer, named "process " + the queue's name, with
// the attributes messaging.system=leaseq, messaging.operation.type=process,
// messaging.operation.name=process, messaging.destination.name (the
// queue), messaging.message.id (the job's ID), leaseq.kind, leaseq.token,
// leaseq.attempt and leaseq.owner. The handler's context carries the span,
// so the spans of what the handler does are its children.
//
// Inside Work the span ends once the queue decided what became of the
// run's result (leaseq.AfterOutcome), and says so in leaseq.outcome; its
// status is Error with the handler's error (but for a Snooze, which is
// no failure), or with the outcome when a nil
// result was refused or could not be written. Around a handler called
// otherwise (Process, by hand) it ends when the handler returns.
func Middleware(tp trace.TracerProvider) func(leaseq.Handler) leaseq.Handler {
	tracer := tp.Tracer(ScopeName)
	return func(next leaseq.Handler) leaseq.Handler {
		return func(ctx context.Context, c leaseq.Claim) error {
			ctx, span := tracer.Start(ctx, "process "+c.Queue, trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(spanAttributes(c)...))
			// The outcome is told on the goroutine the handler ran on,
			// after it returned (or panicked): no lock is needed.
			var err error
			returned := false
			hooked := leaseq.AfterOutcome(ctx, func(o leaseq.Outcome) {
				if !returned {
					err = o.Err // the handler panicked: Work's error for it
				}
				span.SetAttributes(OutcomeKey.String(o.Result))
				endSpan(span, err, o.Result)
			})
			defer func() {
				if !hooked {
					endSpan(span, err, "")
				}
			}()
			err = next(ctx, c)
			returned = true
			return err
		}
	}
}

// spanAttributes are the attributes of c's span.
func spanAttributes(c leaseq.Claim) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("messaging.system", "leaseq"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.operation.name", "process"),
		attribute.String("messaging.destination.name", c.Queue),
		attribute.String("messaging.message.id", c.ID),
		KindKey.String(c.Kind),
		TokenKey.Int64(c.Token),
		AttemptKey.Int(c.Attempt),
		OwnerKey.String(c.Owner),
	}
}

// endSpan ends span with the status of a run whose handler returned err
// and whose outcome was result ("" when unknown). A snooze comes back as
// the handler's error but is no failure: its span keeps the status Unset,
// as OpenTelemetry leaves a span that did not fail.
func endSpan(span trace.Span, err error, result string) {
	switch {
	case result == leaseq.OutcomeSnoozed:
	case err != nil:
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case result == leaseq.OutcomeRefused || result == leaseq.OutcomeUnrecorded:
		span.SetStatus(codes.Error, "result "+result)
	}
	span.End()
}

// outcomeKey is the attributes of one outcome's measurements.
type outcomeKey struct{ queue, kind, result string }

// Outcomes creates with mp's meter, and returns the WorkerOptions.OnOutcome
// that feeds, the instruments of handler runs:
//
//	messaging.process.duration  histogram, s: Outcome.Run
//	leaseq.wait.duration        histogram, s: Outcome.Wait
//	leaseq.outcomes             counter: one per run
//
// each with the attributes messaging.destination.name (the queue),
// leaseq.kind and leaseq.outcome (Outcome.Result: what the queue made of
// the result, so a refused finish counts as refused). One function may
// serve every pool of a process. An error is the meter's.
func Outcomes(mp metric.MeterProvider) (func(leaseq.Outcome), error) {
	m := mp.Meter(ScopeName)
	run, err1 := m.Float64Histogram("messaging.process.duration", metric.WithUnit("s"),
		metric.WithDescription("How long handlers ran."),
		metric.WithExplicitBucketBoundaries(.005, .01, .025, .05, .075, .1, .25, .5, .75, 1, 2.5, 5, 7.5, 10))
	wait, err2 := m.Float64Histogram("leaseq.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("From a job being claimable to its handler starting."),
		metric.WithExplicitBucketBoundaries(.001, .005, .01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600))
	outcomes, err3 := m.Int64Counter("leaseq.outcomes", metric.WithUnit("{run}"),
		metric.WithDescription("Handler runs by what the queue made of their result."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	var sets sync.Map // outcomeKey → metric.MeasurementOption, made once each
	return func(o leaseq.Outcome) {
		k := outcomeKey{o.Claim.Queue, o.Claim.Kind, o.Result}
		v, ok := sets.Load(k)
		if !ok {
			v, _ = sets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(
				attribute.String("messaging.destination.name", k.queue), KindKey.String(k.kind), OutcomeKey.String(k.result))))
		}
		set := v.(metric.MeasurementOption)
		ctx := context.Background()
		run.Record(ctx, o.Run.Seconds(), set)
		wait.Record(ctx, o.Wait.Seconds(), set)
		outcomes.Add(ctx, 1, set)
	}, nil
}
