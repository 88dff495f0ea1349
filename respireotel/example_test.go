package respireotel_test

import (
	"context"
	"fmt"
	"log"
	"os"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/respire/respire"
	"github.com/respire/respire/respireotel"
)

// Traces and metrics of a client in a few lines. A service passes its own SDK providers
// (with an OTLP exporter and a periodic reader), or none, to use the global ones
// otel.SetTracerProvider and otel.SetMeterProvider set; here a span recorder and a
// manual reader stand in for them, to show what is recorded.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	obs, err := respireotel.New(respireotel.WithTracerProvider(tp), respireotel.WithMeterProvider(mp))
	if err != nil {
		log.Fatal(err)
	}
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	opts.Observer = obs
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	stop, err := obs.ObservePool(c, opts.Addrs[0])
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	if _, err := c.Do(ctx, "SET", "example:otel", "hello"); err != nil {
		log.Fatal(err)
	}
	if _, err := c.Do(ctx, "GET", "example:otel"); err != nil {
		log.Fatal(err)
	}

	for _, s := range spans.Ended() {
		fmt.Println("span", s.Name(), s.SpanKind())
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "db.client.operation.duration" {
				fmt.Println("metric", m.Name, "series:", len(h.DataPoints))
			}
		}
	}
	// Output:
	// span SET client
	// span GET client
	// metric db.client.operation.duration series: 2
}
