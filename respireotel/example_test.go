package respireotel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/respire/respire"
	"github.com/respire/respire/observe"
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

	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	obs, err := respireotel.New(respireotel.WithTracerProvider(tp), respireotel.WithMeterProvider(mp),
		respireotel.WithDB(opts.DB)) // db.namespace, which the Observer cannot read from the client
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

// slowCommands counts the commands slower than over: what a go-redis ProcessHook that
// times each call does, written as an observer. It sees names, servers, durations and
// outcomes, never arguments, and cannot change or stop a command.
type slowCommands struct {
	observe.Base // the events it does not handle
	over         time.Duration
	n            atomic.Int64
}

func (s *slowCommands) CommandEnd(_ context.Context, e observe.CommandEnd) {
	if e.Duration > s.over {
		s.n.Add(1)
	}
}

// An observer of one's own beside respireotel, as go-redis users add hooks beside
// redisotel: observe.Join passes every event to both.
func Example_goRedisHooks() {
	ctx := context.Background()
	tracing, err := respireotel.New() // the global TracerProvider and MeterProvider
	if err != nil {
		log.Fatal(err)
	}
	slow := &slowCommands{over: time.Minute}
	opts, err := respire.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	opts.Observer = observe.Join(tracing, slow)
	c, err := respire.NewClient(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctx, "PING"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("commands slower than a minute:", slow.n.Load())
	// Output: commands slower than a minute: 0
}
