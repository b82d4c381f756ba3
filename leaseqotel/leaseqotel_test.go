package leaseqotel_test

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/leaseq/leaseq"
	"github.com/leaseq/leaseq/leaseqotel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The module's tests run on SQLite with the SDKs' in-memory readers: the
// outcomes they see are Work's, checked on each engine by leaseq's suite.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func open(t *testing.T) (*leaseq.ManualClock, *leaseq.Queue) {
	t.Helper()
	db, err := leaseq.Open(filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := leaseq.NewManualClock(t0)
	q, err := leaseq.New(context.Background(), db, leaseq.Options{Name: "mail", Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return clock, q
}

// work runs a pool with both of the module's hooks until n outcomes came.
func work(t *testing.T, q *leaseq.Queue, tp trace.TracerProvider, onOutcome func(leaseq.Outcome), n int, h leaseq.Handler) {
	t.Helper()
	done := make(chan struct{}, n)
	ctx, stop := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() {
		returned <- q.Work(ctx, leaseq.WorkerOptions{Owner: "w", Concurrency: 4, Lease: time.Hour,
			Backoff:    func(int) time.Duration { return time.Hour },
			Middleware: []func(leaseq.Handler) leaseq.Handler{leaseqotel.Middleware(tp)},
			OnOutcome:  func(o leaseq.Outcome) { onOutcome(o); done <- struct{}{} }}, h)
	}()
	for range n {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("no outcome within 30 s")
		}
	}
	stop()
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
}

// attrs is a span's attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// TestSpans: one Consumer span per handler run, named for the queue, with
// the messaging attributes and the job's; it ends once the queue decided
// the outcome, which it carries; an error, a panic and a refused finish
// make its status Error. A span the handler starts is its child.
func TestSpans(t *testing.T) {
	clock, q := open(t)
	ctx := context.Background()
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "ok", Kind: "email"}, {ID: "err"}, {ID: "panic"}, {ID: "refused"}, {ID: "snooze"}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(time.Second))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	noop := func(leaseq.Outcome) {}
	work(t, q, tp, noop, 5, func(ctx context.Context, c leaseq.Claim) error {
		switch c.ID {
		case "ok":
			_, child := tp.Tracer("app").Start(ctx, "send")
			child.End()
		case "err":
			return errors.New("smtp down")
		case "panic":
			panic("oops")
		case "refused":
			return q.Cancel(ctx, c.ID, "operator")
		case "snooze":
			return leaseq.Snooze(time.Hour)
		}
		return nil
	})
	spans := map[string]sdktrace.ReadOnlySpan{}
	var child sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "send" {
			child = s
			continue
		}
		spans[attrs(s.Attributes())["messaging.message.id"]] = s
	}
	if len(spans) != 5 {
		t.Fatalf("%d spans of runs, want 5", len(spans))
	}
	for id, want := range map[string]struct {
		outcome string
		code    codes.Code
		desc    string
	}{
		"ok":      {leaseq.OutcomeFinished, codes.Unset, ""},
		"err":     {leaseq.OutcomeReleased, codes.Error, "smtp down"},
		"panic":   {leaseq.OutcomeReleased, codes.Error, "panic: oops"},
		"refused": {leaseq.OutcomeRefused, codes.Error, "result refused"},
		"snooze":  {leaseq.OutcomeSnoozed, codes.Unset, ""},
	} {
		s := spans[id]
		a := attrs(s.Attributes())
		wantAttrs := map[string]string{"messaging.system": "leaseq", "messaging.operation.type": "process",
			"messaging.operation.name": "process", "messaging.destination.name": "mail", "messaging.message.id": id,
			"leaseq.kind": map[bool]string{true: "email", false: ""}[id == "ok"], "leaseq.token": "1",
			"leaseq.attempt": "1", "leaseq.owner": "w", "leaseq.outcome": want.outcome}
		for k, v := range wantAttrs {
			if a[k] != v {
				t.Errorf("span of %s: %s=%q, want %q (all: %v)", id, k, a[k], v, a)
			}
		}
		if s.Name() != "process mail" || s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("span of %s: %q kind %v, want \"process mail\", consumer", id, s.Name(), s.SpanKind())
		}
		if s.Status().Code != want.code || s.Status().Description != want.desc {
			t.Errorf("span of %s: status %v %q, want %v %q", id, s.Status().Code, s.Status().Description, want.code, want.desc)
		}
	}
	if child == nil || child.Parent().SpanID() != spans["ok"].SpanContext().SpanID() {
		t.Fatalf("the handler's own span is not a child of its run's span")
	}
}

// TestSpanOutsideWork: around a handler Process calls, the span ends when
// the handler returns, with no outcome attribute.
func TestSpanOutsideWork(t *testing.T) {
	_, q := open(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, leaseq.Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	h := leaseqotel.Middleware(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)))(
		func(context.Context, leaseq.Claim) error { return errors.New("no") })
	if _, err := q.Process(ctx, "w", time.Minute, h); err == nil {
		t.Fatal("Process returned nil for a handler that failed")
	}
	ended := sr.Ended()
	if len(ended) != 1 || ended[0].Status().Code != codes.Error {
		t.Fatalf("spans: %v", ended)
	}
	if _, ok := attrs(ended[0].Attributes())["leaseq.outcome"]; ok {
		t.Fatalf("a span outside Work says an outcome: %v", ended[0].Attributes())
	}
}

// TestOutcomeMetrics: the three instruments, read with the SDK's manual
// reader, count each run once by queue, kind and outcome; the waits are the
// queue clock's.
func TestOutcomeMetrics(t *testing.T) {
	clock, q := open(t)
	ctx := context.Background()
	if err := q.EnqueueBatch(ctx, []leaseq.Job{{ID: "a", Kind: "email"}, {ID: "b", Kind: "email"}, {ID: "c", Kind: "sms"}}); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(3 * time.Second))
	reader := sdkmetric.NewManualReader()
	onOutcome, err := leaseqotel.Outcomes(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	work(t, q, sdktrace.NewTracerProvider(), onOutcome, 3, func(ctx context.Context, c leaseq.Claim) error {
		if c.Kind == "sms" {
			return leaseq.Permanent(errors.New("no number"))
		}
		return nil
	})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != leaseqotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point(p.Attributes, float64(p.Value)))
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					got[m.Name] = append(got[m.Name], point(p.Attributes, float64(p.Count)))
					if m.Name == "leaseq.wait.duration" && p.Sum != 3*float64(p.Count) {
						t.Errorf("wait sum %v over %d runs, want 3 s each", p.Sum, p.Count)
					}
				}
			}
		}
	}
	want := []string{"email finished mail: 2", "sms failed mail: 1"}
	for _, name := range []string{"leaseq.outcomes", "messaging.process.duration", "leaseq.wait.duration"} {
		sort.Strings(got[name])
		if len(got[name]) != 2 || got[name][0] != want[0] || got[name][1] != want[1] {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
}

// point prints a data point's attributes and value.
func point(set attribute.Set, v float64) string {
	get := func(k string) string { val, _ := set.Value(attribute.Key(k)); return val.Emit() }
	return get("leaseq.kind") + " " + get("leaseq.outcome") + " " + get("messaging.destination.name") + ": " +
		attribute.Float64Value(v).Emit()
}
