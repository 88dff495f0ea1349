package respireotel

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire/respire/observe"
)

// Two Observers joined with observe.Join each end the span they began: neither takes
// the other's from the context.
func TestJoinedObserversEndTheirOwnSpans(t *testing.T) {
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tpA := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recA))
	tpB := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recB))
	mp := sdkmetric.NewMeterProvider()
	t.Cleanup(func() {
		tpA.Shutdown(context.Background())
		tpB.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	a, err := New(WithTracerProvider(tpA), WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(WithTracerProvider(tpB), WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	j := observe.Join(a, b)
	now := time.Now()
	ctx := j.CommandStart(context.Background(), observe.CommandStart{Name: "GET", Start: now})
	j.CommandEnd(ctx, observe.CommandEnd{Name: "GET", Start: now, Duration: time.Millisecond})
	ctx = j.BatchStart(context.Background(), observe.BatchStart{Kind: observe.Pipeline, Len: 2, Start: now})
	j.BatchEnd(ctx, observe.BatchEnd{Kind: observe.Pipeline, Len: 2, Start: now, Duration: time.Millisecond})
	for name, rec := range map[string]*tracetest.SpanRecorder{"A": recA, "B": recB} {
		if s, e := len(rec.Started()), len(rec.Ended()); s != 2 || e != 2 {
			t.Errorf("observer %s: %d spans started, %d ended, want 2 and 2", name, s, e)
		}
	}
}

// dropByName samples out the spans named name and samples every other.
type dropByName struct{ name string }

func (d dropByName) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	r := sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	if p.Name == d.name {
		r.Decision = sdktrace.Drop
	}
	return r
}

func (d dropByName) Description() string { return "dropByName(" + d.name + ")" }

// A command or batch started inside another command's context, whose own span is
// sampled out, ends nothing: the outer command's span is left for the outer CommandEnd.
func TestUnsampledInnerOperationLeavesOuterSpan(t *testing.T) {
	for _, tc := range []struct {
		inner string
		run   func(o *Observer, ctx context.Context, now time.Time)
	}{
		{"PING", func(o *Observer, ctx context.Context, now time.Time) {
			ctx = o.CommandStart(ctx, observe.CommandStart{Name: "PING", Start: now})
			o.CommandEnd(ctx, observe.CommandEnd{Name: "PING", Start: now, Duration: time.Millisecond})
		}},
		{pipelineName, func(o *Observer, ctx context.Context, now time.Time) {
			ctx = o.BatchStart(ctx, observe.BatchStart{Kind: observe.Pipeline, Len: 2, Start: now})
			o.BatchEnd(ctx, observe.BatchEnd{Kind: observe.Pipeline, Len: 2, Start: now, Duration: time.Millisecond})
		}},
	} {
		t.Run(tc.inner, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(dropByName{tc.inner}), sdktrace.WithSpanProcessor(rec))
			mp := sdkmetric.NewMeterProvider()
			t.Cleanup(func() {
				tp.Shutdown(context.Background())
				mp.Shutdown(context.Background())
			})
			o, err := New(WithTracerProvider(tp), WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			outer := o.CommandStart(context.Background(), observe.CommandStart{Name: "GET", Start: now})
			tc.run(o, outer, now)
			if ended := rec.Ended(); len(ended) != 0 {
				t.Fatalf("the inner %s ended spans %v, want none", tc.inner, spanNames(ended))
			}
			o.CommandEnd(outer, observe.CommandEnd{Name: "GET", Start: now, Duration: 2 * time.Millisecond})
			if ended := rec.Ended(); len(ended) != 1 || ended[0].Name() != "GET" {
				t.Errorf("after the outer GET's end, ended spans %v, want [GET]", spanNames(ended))
			}
		})
	}
}
