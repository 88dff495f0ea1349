package respireotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire/respire/observe"
)

// spanContext carries the span a CommandStart or BatchStart of one Observer began. The
// End methods take only this span, never one the caller's context already had: ending
// the caller's span would be worse than losing ours. The key names the Observer, so
// Observers joined with observe.Join each find their own span. A nil span masks an
// outer span of the same Observer, for a command whose own span does not record.
type spanContext struct {
	context.Context
	key  spanKey
	span trace.Span
}

// spanKey is the context key of one Observer's spans.
type spanKey struct{ o *Observer }

func (c spanContext) Value(key any) any {
	if k, ok := key.(spanKey); ok && k == c.key {
		return c.span
	}
	return c.Context.Value(key)
}

// ownSpan returns the span the matching Start of o began, if it records.
func (o *Observer) ownSpan(ctx context.Context) (trace.Span, bool) {
	s, ok := ctx.Value(spanKey{o}).(trace.Span)
	return s, ok
}

// clientKind makes a span of kind client.
var clientKind = trace.WithSpanKind(trace.SpanKindClient)

// startAttrs are the attributes a span of operation k.name, about to go to k.addr,
// starts with: server.address and server.port are among them, for samplers.
func (o *Observer) startAttrs(k opKey) trace.SpanStartOption {
	server := serverAttrs(k.addr)
	return trace.WithAttributes(append(o.opBase(k.name, len(server)), server...)...)
}

// start begins a client span named name, for the server at addr ("" if not known yet),
// at start. A span that does not record
// (sampled out, or a no-op provider) is not kept: nothing runs under a command that
// could be its child. But if ctx holds a span of o's (a command started inside
// another's context), the context returned masks it, or this command's End would end
// that outer span.
func (o *Observer) start(ctx context.Context, name, addr string, start time.Time, more ...trace.SpanStartOption) context.Context {
	opts := append([]trace.SpanStartOption{clientKind, o.starts.get(opKey{name, addr}), trace.WithTimestamp(start)}, more...)
	ctx2, span := o.tracer.Start(ctx, name, opts...)
	key := spanKey{o}
	if span.IsRecording() {
		return spanContext{Context: ctx2, key: key, span: span}
	}
	if _, outer := o.ownSpan(ctx); outer {
		return spanContext{Context: ctx, key: key}
	}
	return ctx
}

// end finishes span at end with the server's attributes (those of the server that
// answered, which replace the ones it started with), the outcome and, for a failure,
// the error status, in one SetAttributes so the span's attributes grow once.
// The status description is the error type alone: error messages can quote
// arguments.
func end(span trace.Span, server []attribute.KeyValue, outcome observe.Outcome, f failure, end time.Time, extra ...attribute.KeyValue) {
	var buf [8]attribute.KeyValue
	kv := append(buf[:0], server...)
	kv = append(kv, outcomeKey.String(outcome.String()))
	kv = append(kv, extra...)
	if f.errType != "" {
		kv = append(kv, f.attrs()...)
	}
	span.SetAttributes(kv...)
	if f.errType != "" {
		span.SetStatus(codes.Error, f.errType)
	}
	span.End(trace.WithTimestamp(end))
}

// CommandStart starts the command's span, if tracing is on.
func (o *Observer) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	if o.tracer == nil {
		return ctx
	}
	return o.start(ctx, e.Name, e.Addr, e.Start)
}

// CommandEnd records the command's duration and ends its span.
func (o *Observer) CommandEnd(ctx context.Context, e observe.CommandEnd) {
	f := classify(e.Outcome, e.Err)
	a := o.recordOperation(ctx, e.Name, e.Addr, e.Duration, f)
	if span, ok := o.ownSpan(ctx); ok {
		end(span, a.server, e.Outcome, f, e.Start.Add(e.Duration))
	}
}

// BatchStart starts the batch's span, if tracing is on.
func (o *Observer) BatchStart(ctx context.Context, e observe.BatchStart) context.Context {
	if o.tracer == nil {
		return ctx
	}
	kind := batchKindKey.String(e.Kind.String())
	name := o.batchName(e.Kind, e.Len, e.Name)
	// The conventions count only batches of two or more (or none) as batches.
	if e.Len == 1 {
		return o.start(ctx, name, e.Addr, e.Start, trace.WithAttributes(kind))
	}
	return o.start(ctx, name, e.Addr, e.Start, trace.WithAttributes(kind, semconv.DBOperationBatchSize(e.Len)))
}

// BatchEnd records the batch's duration, as one operation, and ends its span.
func (o *Observer) BatchEnd(ctx context.Context, e observe.BatchEnd) {
	f := classify(e.Outcome, e.Err)
	a := o.recordOperation(ctx, o.batchName(e.Kind, e.Len, e.Name), e.Addr, e.Duration, f)
	if span, ok := o.ownSpan(ctx); ok {
		end(span, a.server, e.Outcome, f, e.Start.Add(e.Duration), batchFailedKey.Int(e.Failed))
	}
}

// Lock adds the step as an event to the span current in ctx (the caller's, around its
// Acquire or Release) and records it in the lock metrics.
func (o *Observer) Lock(ctx context.Context, e observe.Lock) {
	o.recordLock(ctx, e)
	if o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{elapsedKey.Float64(e.Wait.Seconds())}
	switch e.Kind {
	case observe.LockLost:
		attrs = append(attrs, lossCauseKey.String(lossCause(e.Err)))
	case observe.LockReleased:
		attrs = append(attrs, releaseKey.String(e.Release.String()))
	}
	span.AddEvent("respire.lock."+e.Kind.String(), trace.WithAttributes(attrs...))
}
