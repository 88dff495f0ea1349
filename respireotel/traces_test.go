package respireotel

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
