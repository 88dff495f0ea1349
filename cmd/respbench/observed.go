package main

import (
	"context"
	"errors"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/respire/respire"
	"github.com/respire/respire/respireotel"
)

// Respire observed: the default client with a respireotel Observer, every command a
// sampled span and a db.client.operation.duration point, so the row beside the plain
// one prices observation. The spans go through the SDK's batching processor to an
// exporter that drops them, as they would to a network exporter minus its I/O; the
// metrics are aggregated by the SDK into a manual reader that is never collected, so
// the row pays for recording, not for exporting.

type observedClient struct {
	respireClient
	shutdown func(context.Context) error
}

func openRespireObserved(ctx context.Context, ep endpoint) (dataClient, error) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	shutdown := func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }
	obs, err := respireotel.New(respireotel.WithTracerProvider(tp), respireotel.WithMeterProvider(mp))
	if err != nil {
		shutdown(ctx)
		return nil, err
	}
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster, Observer: obs})
	if err != nil {
		shutdown(ctx)
		return nil, err
	}
	return observedClient{respireClient{c}, shutdown}, nil
}

// close closes the client, then stops the span processor's goroutine.
func (o observedClient) close() {
	o.respireClient.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o.shutdown(ctx)
}

// discardSpans is a span exporter that keeps nothing.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
