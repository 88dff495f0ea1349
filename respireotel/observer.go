package respireotel

import (
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire/respire/observe"
)

// ScopeName is the instrumentation scope of the tracer and meter respireotel uses.
const ScopeName = "github.com/respire/respire/respireotel"

// Observer is an observe.Observer that records a client's events as spans and metrics.
// Set it as respire.Options.Observer.
type Observer struct {
	observe.Base // events added to observe later are ignored until handled here

	// tracer is nil when tracing is off.
	tracer trace.Tracer
	meter  metric.Meter
	inst   instruments
	ops    memo[opKey, *opAttrs]
	// starts holds each operation name's span start attributes.
	starts memo[string, trace.SpanStartOption]
}

// Option configures New.
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	tracing bool
}

// WithTracerProvider sets where spans go; the default is the global TracerProvider
// (otel.GetTracerProvider), read when New is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tp = tp }
}

// WithMeterProvider sets where metrics go; the default is the global MeterProvider
// (otel.GetMeterProvider), read when New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.mp = mp }
}

// WithTracing turns the spans on (the default) or off; metrics are recorded either way.
// Off, a command costs no span and no context.
func WithTracing(on bool) Option {
	return func(c *config) { c.tracing = on }
}

var (
	// ErrNilProvider is returned by New when an option passes a nil provider.
	ErrNilProvider = errors.New("respireotel: nil provider")
	// ErrInvalidArg is matched by the errors for other unusable arguments, such as
	// ObservePool's nil client.
	ErrInvalidArg = errors.New("respireotel: invalid argument")
)

// New returns an Observer recording into the providers the options name (the global
// ones by default). Its error is a provider's failure to create an instrument.
func New(opts ...Option) (*Observer, error) {
	cfg := config{tp: otel.GetTracerProvider(), mp: otel.GetMeterProvider(), tracing: true}
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.tp == nil || cfg.mp == nil {
		return nil, ErrNilProvider
	}
	o := &Observer{meter: cfg.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))}
	o.ops.make = newOpAttrs
	o.starts.make = startAttrs
	if cfg.tracing {
		o.tracer = cfg.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	var err error
	if o.inst, err = newInstruments(o.meter); err != nil {
		return nil, err
	}
	return o, nil
}
