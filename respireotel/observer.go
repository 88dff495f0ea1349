package respireotel

import (
	"errors"
	"fmt"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
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
	// system is db.system.name, and db.namespace when WithDB gave it.
	system []attribute.KeyValue
	ops    memo[opKey, *opAttrs]
	// starts holds the span start attributes of each operation name and server.
	starts memo[opKey, trace.SpanStartOption]
	// batchNames holds the names of batches whose commands share a name.
	batchNames memo[batchKey, string]
}

// Option configures New.
type Option func(*config)

type config struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	tracing bool
	db      int
	hasDB   bool
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

// WithDB records n, the database index the client selects (respire.Options.DB), as
// db.namespace on every span and operation duration, as the conventions ask when the
// index is known. The Observer cannot read it from the client: without WithDB it
// records no db.namespace. Give it only when every command runs on database n; a
// SELECT sent through Do or on a dedicated connection would make it wrong. A negative
// n makes New fail with ErrInvalidArg.
func WithDB(n int) Option {
	return func(c *config) { c.db, c.hasDB = n, true }
}

var (
	// ErrNilProvider is returned by New when an option passes a nil provider.
	ErrNilProvider = errors.New("respireotel: nil provider")
	// ErrInvalidArg is matched by the errors for other unusable arguments: a negative
	// WithDB, ObservePool's nil client or empty name.
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
	o.system = []attribute.KeyValue{semconv.DBSystemNameRedis}
	if cfg.hasDB {
		if cfg.db < 0 {
			return nil, fmt.Errorf("%w: negative database index %d", ErrInvalidArg, cfg.db)
		}
		o.system = append(o.system, semconv.DBNamespace(strconv.Itoa(cfg.db)))
	}
	o.ops.make = o.newOpAttrs
	o.starts.make = o.startAttrs
	o.batchNames.make = joinBatchName
	if cfg.tracing {
		o.tracer = cfg.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	var err error
	if o.inst, err = newInstruments(o.meter); err != nil {
		return nil, err
	}
	return o, nil
}
