package respireotel

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/respire/respire/observe"
)

// discardSpans is a span exporter that keeps nothing.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkCommand is the observer's cost for one successful command, without the
// client: metrics only, and with a sampled span sent through the SDK's batching
// processor to an exporter that drops it (respbench's respire-observed row).
func BenchmarkCommand(b *testing.B) {
	for _, bc := range []struct {
		name    string
		tracing bool
	}{{"metrics", false}, {"metrics+spans", true}} {
		b.Run(bc.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer tp.Shutdown(context.Background())
			defer mp.Shutdown(context.Background())
			o, err := New(WithTracerProvider(tp), WithMeterProvider(mp), WithTracing(bc.tracing))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			start := time.Now()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					cctx := o.CommandStart(ctx, observe.CommandStart{Name: "GET", Start: start})
					o.CommandEnd(cctx, observe.CommandEnd{Name: "GET", Addr: "127.0.0.1:6379", Start: start, Duration: time.Microsecond})
				}
			})
		})
	}
}
