package respireotel

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/respire/respire"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// Secrets the spans must never carry: a key and a value.
const (
	secretKey   = "otel:secret-key"
	secretValue = "secret-value-42"
)

// A GET that succeeds and one refused with WRONGTYPE: a client span each, children of
// the caller's span, with the conventions' attributes, the error's prefix and status on
// the failure, no key or value anywhere; and db.client.operation.duration points for
// both, with the conventions' buckets.
func TestCommandSpansAndDuration(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{})
	ctx, parent := h.tp.Tracer("test").Start(context.Background(), "parent")

	if _, err := c.Do(ctx, "SET", secretKey, secretValue); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "GET", secretKey); err != nil || !isText(v, secretValue) {
		t.Fatalf("GET: %v %v", v, err)
	}
	if _, err := c.Do(ctx, "RPUSH", "otel:list", secretValue); err != nil {
		t.Fatal(err)
	}
	var se *resp.ServerError
	if _, err := c.Do(ctx, "GET", "otel:list"); !errors.As(err, &se) || se.Code != "WRONGTYPE" {
		t.Fatalf("GET of a list: %v", err)
	}
	parent.End()

	gets := h.ended("GET")
	if len(gets) != 2 {
		t.Fatalf("%d GET spans, want 2 (spans: %v)", len(gets), spanNames(h.spans.Ended()))
	}
	ok, failed := gets[0], gets[1]
	for _, s := range gets {
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span kind %v", s.SpanKind())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("GET span is not a child of the caller's span")
		}
		if !s.EndTime().After(s.StartTime()) {
			t.Errorf("span from %v to %v", s.StartTime(), s.EndTime())
		}
		for _, kv := range []attribute.KeyValue{
			semconv.DBSystemNameRedis,
			semconv.DBOperationName("GET"),
			semconv.ServerAddress("127.0.0.1"),
			semconv.ServerPort(srv.Port()),
		} {
			if v, found := attr(s, kv.Key); !found || v != kv.Value {
				t.Errorf("%s = %v (%v), want %v", kv.Key, v.Emit(), found, kv.Value.Emit())
			}
		}
	}
	if ok.Status().Code != codes.Unset {
		t.Errorf("successful GET has status %v", ok.Status())
	}
	if v, _ := attr(ok, outcomeKey); v.AsString() != "ok" {
		t.Errorf("respire.outcome %q on the successful GET", v.AsString())
	}
	if _, found := attr(ok, semconv.ErrorTypeKey); found {
		t.Errorf("successful GET has error.type")
	}
	if failed.Status().Code != codes.Error || failed.Status().Description != "WRONGTYPE" {
		t.Errorf("failed GET has status %+v", failed.Status())
	}
	for key, want := range map[attribute.Key]string{
		semconv.ErrorTypeKey:            "WRONGTYPE",
		semconv.DBResponseStatusCodeKey: "WRONGTYPE",
		outcomeKey:                      "server_error",
	} {
		if v, _ := attr(failed, key); v.AsString() != want {
			t.Errorf("%s = %q, want %q", key, v.AsString(), want)
		}
	}
	assertNoSecrets(t, h.spans.Ended())

	bounds := []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}
	points := h.histogram(t, "db.client.operation.duration", semconv.DBOperationName("GET"), semconv.DBSystemNameRedis)
	var okCount, wrongType uint64
	for _, p := range points {
		if !slices.Equal(p.Bounds, bounds) {
			t.Errorf("bucket boundaries %v, want %v", p.Bounds, bounds)
		}
		switch v, found := p.Attributes.Value(semconv.ErrorTypeKey); {
		case !found:
			okCount += p.Count
		case v.AsString() == "WRONGTYPE":
			wrongType += p.Count
		}
	}
	if okCount != 1 || wrongType != 1 {
		t.Errorf("GET durations: %d ok and %d WRONGTYPE, want 1 and 1", okCount, wrongType)
	}
	if n := h.sum(t, "respire.connection.events", connEventKey.String("dialed")); n < 1 {
		t.Errorf("%d connections dialled", n)
	}
	if n := h.count(t, "db.client.connection.create_time"); n < 1 {
		t.Errorf("%d dial durations", n)
	}
}

// A script's error reply whose first word is data (here a key) leaves that word out
// of the span's error.type, db.response.status_code and status, and out of the
// metric's attributes: they say server_error instead.
func TestScriptErrorWordNotRecorded(t *testing.T) {
	_, h, c := standalone(t, respire.Options{})
	var se *resp.ServerError
	_, err := c.Do(context.Background(), "EVAL", "return redis.error_reply(KEYS[1] .. ' not found')", "1", secretKey)
	if !errors.As(err, &se) || !strings.Contains(se.Code, secretKey) {
		t.Fatalf("EVAL: %v, want an error reply whose code holds the key", err)
	}
	evals := h.ended("EVAL")
	if len(evals) != 1 {
		t.Fatalf("%d EVAL spans, want 1", len(evals))
	}
	s := evals[0]
	if v, _ := attr(s, semconv.ErrorTypeKey); v.AsString() != "server_error" {
		t.Errorf("error.type = %q, want server_error", v.AsString())
	}
	if v, found := attr(s, semconv.DBResponseStatusCodeKey); found {
		t.Errorf("db.response.status_code = %q, want none", v.AsString())
	}
	if s.Status().Code != codes.Error || s.Status().Description != "server_error" {
		t.Errorf("status %+v, want Error server_error", s.Status())
	}
	assertNoSecrets(t, evals)
	points := h.histogram(t, "db.client.operation.duration", semconv.DBOperationName("EVAL"))
	if len(points) != 1 {
		t.Fatalf("%d EVAL duration points, want 1", len(points))
	}
	if v, _ := points[0].Attributes.Value(semconv.ErrorTypeKey); v.AsString() != "server_error" {
		t.Errorf("metric error.type = %q, want server_error", v.AsString())
	}
	if v, found := points[0].Attributes.Value(semconv.DBResponseStatusCodeKey); found {
		t.Errorf("metric db.response.status_code = %q, want none", v.AsString())
	}
}

// Without tracing the commands still get their metric points, and no span.
func TestTracingOff(t *testing.T) {
	_, h, c := standalone(t, respire.Options{}, WithTracing(false))
	if _, err := c.Do(context.Background(), "GET", "otel:none"); err != nil {
		t.Fatal(err)
	}
	if spans := h.spans.Ended(); len(spans) != 0 {
		t.Errorf("spans with tracing off: %v", spanNames(spans))
	}
	if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName("GET")); n != 1 {
		t.Errorf("%d GET durations, want 1", n)
	}
}

// A batch is one span and one operation: PIPELINE for Pipeline.Exec and DoMulti, MULTI
// for a transaction, with db.operation.batch.size, and an error reply inside a batch
// counted in respire.batch.failed without failing the batch.
func TestBatchSpans(t *testing.T) {
	_, h, c := standalone(t, respire.Options{})
	ctx := context.Background()
	if _, err := c.Do(ctx, "RPUSH", "otel:list", "x"); err != nil {
		t.Fatal(err)
	}
	h.spans.Reset()

	res, err := c.Pipeline().Do("SET", secretKey, secretValue).Do("GET", secretKey).Do("GET", "otel:list").Exec(ctx)
	if err != nil || len(res) != 3 || res[2].Err == nil {
		t.Fatalf("pipeline: %v %v", res, err)
	}
	if _, err := c.DoMulti(ctx, []any{"GET", secretKey}, []any{"GET", secretKey}); err != nil {
		t.Fatal(err)
	}
	err = c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx, []any{"SET", secretKey, "2"}, []any{"INCR", secretKey})
		return err
	}, secretKey)
	if err != nil {
		t.Fatal(err)
	}

	byKind := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range slices.Concat(h.ended(pipelineName), h.ended(pipelineName+" GET"), h.ended(transactionName)) {
		v, _ := attr(s, batchKindKey)
		byKind[v.AsString()] = s
	}
	for _, want := range []struct {
		kind, name string
		size       int
		failed     int
	}{
		{"pipeline", pipelineName, 3, 1},
		{"multi", pipelineName + " GET", 2, 0}, // the commands share a name
		{"transaction", transactionName, -1, 0},
	} {
		s, ok := byKind[want.kind]
		if !ok {
			t.Errorf("no %s span (spans: %v)", want.kind, spanNames(h.spans.Ended()))
			continue
		}
		if s.Name() != want.name || s.SpanKind() != trace.SpanKindClient || s.Status().Code != codes.Unset {
			t.Errorf("%s span: name %q, kind %v, status %v", want.kind, s.Name(), s.SpanKind(), s.Status())
		}
		if v, _ := attr(s, semconv.DBOperationNameKey); v.AsString() != want.name {
			t.Errorf("%s span: db.operation.name %q", want.kind, v.AsString())
		}
		size, found := attr(s, semconv.DBOperationBatchSizeKey)
		if want.size >= 0 && (!found || size.AsInt64() != int64(want.size)) {
			t.Errorf("%s span: db.operation.batch.size %v (%v), want %d", want.kind, size.AsInt64(), found, want.size)
		}
		if found && size.AsInt64() == 1 {
			t.Errorf("%s span: a batch size of 1", want.kind)
		}
		if v, _ := attr(s, batchFailedKey); v.AsInt64() != int64(want.failed) {
			t.Errorf("%s span: respire.batch.failed %d, want %d", want.kind, v.AsInt64(), want.failed)
		}
	}
	assertNoSecrets(t, h.spans.Ended())
	if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(pipelineName)); n != 1 {
		t.Errorf("%d PIPELINE durations, want 1", n)
	}
	if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(pipelineName+" GET")); n != 1 {
		t.Errorf("%d PIPELINE GET durations, want 1", n)
	}
	if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(transactionName)); n != 1 {
		t.Errorf("%d MULTI durations, want 1", n)
	}
}

// A Pipeline.Exec or DoMulti of one command is a span and an operation named after the
// command, with its batch kind and no batch size; a transaction of one is MULTI and its
// command's name, as a longer one whose commands share that name.
func TestBatchOfOneSpan(t *testing.T) {
	_, h, c := standalone(t, respire.Options{})
	ctx := context.Background()
	if _, err := c.Pipeline().Do("SET", secretKey, secretValue).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DoMulti(ctx, []any{"GET", secretKey}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ name, kind string }{{"SET", "pipeline"}, {"GET", "multi"}} {
		spans := h.ended(want.name)
		if len(spans) != 1 {
			t.Errorf("%d %s spans, want 1 (spans: %v)", len(spans), want.name, spanNames(h.spans.Ended()))
			continue
		}
		s := spans[0]
		if v, _ := attr(s, batchKindKey); v.AsString() != want.kind {
			t.Errorf("%s span: respire.batch.kind %q, want %q", want.name, v.AsString(), want.kind)
		}
		if v, _ := attr(s, semconv.DBOperationNameKey); v.AsString() != want.name {
			t.Errorf("%s span: db.operation.name %q", want.name, v.AsString())
		}
		if _, found := attr(s, semconv.DBOperationBatchSizeKey); found {
			t.Errorf("%s span: db.operation.batch.size set for a batch of one", want.name)
		}
		if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(want.name)); n != 1 {
			t.Errorf("%d %s durations, want 1", n, want.name)
		}
	}
	if n := len(h.ended(pipelineName)); n != 0 {
		t.Errorf("%d PIPELINE spans for batches of one", n)
	}
	err := c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx, []any{"INCR", "otel:n"})
		return err
	}, "otel:n")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.ended(transactionName + " INCR")); n != 1 {
		t.Errorf("%d MULTI INCR spans for a transaction of one INCR, want 1 (spans: %v)", n, spanNames(h.spans.Ended()))
	}
	assertNoSecrets(t, h.spans.Ended())
}

// CommandEnd ends only the span its CommandStart began, never one the caller's context
// carried.
func TestCommandEndLeavesCallersSpan(t *testing.T) {
	h := newHarness(t)
	ctx, parent := h.tp.Tracer("test").Start(context.Background(), "parent")
	defer parent.End()
	now := time.Now()
	h.obs.CommandEnd(ctx, observe.CommandEnd{Name: "GET", Start: now, Duration: time.Millisecond})
	h.obs.BatchEnd(ctx, observe.BatchEnd{Kind: observe.Pipeline, Len: 2, Start: now, Duration: time.Millisecond})
	if !parent.IsRecording() {
		t.Fatal("the caller's span was ended")
	}
	if spans := h.spans.Ended(); len(spans) != 0 {
		t.Fatalf("ended spans: %v", spanNames(spans))
	}
}

// assertNoSecrets fails if any attribute or event of spans carries the test's key or
// value.
func assertNoSecrets(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	check := func(where string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			if s := kv.Value.Emit(); strings.Contains(s, secretKey) || strings.Contains(s, secretValue) {
				t.Errorf("%s: %s = %q carries a key or value", where, kv.Key, s)
			}
		}
	}
	for _, s := range spans {
		check(s.Name(), s.Attributes())
		for _, e := range s.Events() {
			check(s.Name()+" event "+e.Name, e.Attributes)
		}
		if d := s.Status().Description; strings.Contains(d, secretKey) || strings.Contains(d, secretValue) {
			t.Errorf("%s: status %q", s.Name(), d)
		}
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func isText(v resp.Value, want string) bool {
	s, err := v.Text()
	return err == nil && s == want
}

// WithDB puts the database index in db.namespace on spans and operation durations,
// failed ones included; without it there is none, and a negative index is refused.
func TestDBNamespace(t *testing.T) {
	_, h, c := standalone(t, respire.Options{DB: 3}, WithDB(3))
	ctx := context.Background()
	if _, err := c.Do(ctx, "RPUSH", "otel:list", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "GET", "otel:list"); err == nil {
		t.Fatal("GET of a list succeeded")
	}
	ns := semconv.DBNamespace("3")
	for _, name := range []string{"RPUSH", "GET"} {
		spans := h.ended(name)
		if len(spans) != 1 {
			t.Fatalf("%d %s spans, want 1", len(spans), name)
		}
		if v, _ := attr(spans[0], ns.Key); v != ns.Value {
			t.Errorf("%s span: db.namespace %q, want %q", name, v.Emit(), ns.Value.Emit())
		}
		if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(name), ns); n != 1 {
			t.Errorf("%d %s durations with db.namespace 3, want 1", n, name)
		}
	}

	_, h, c = standalone(t, respire.Options{})
	if _, err := c.Do(ctx, "GET", "otel:none"); err != nil {
		t.Fatal(err)
	}
	for _, s := range h.ended("GET") {
		if v, found := attr(s, ns.Key); found {
			t.Errorf("db.namespace %q without WithDB", v.Emit())
		}
	}
	for _, p := range h.histogram(t, "db.client.operation.duration") {
		if v, found := p.Attributes.Value(ns.Key); found {
			t.Errorf("duration with db.namespace %q without WithDB", v.Emit())
		}
	}

	if _, err := New(WithDB(-1)); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("New(WithDB(-1)): %v, want ErrInvalidArg", err)
	}
}

// startSampler samples every span and keeps, by span name, the attributes each one
// started with: what a sampler can decide by.
type startSampler struct {
	mu   sync.Mutex
	seen map[string][]attribute.KeyValue
}

func (s *startSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.mu.Lock()
	s.seen[p.Name] = slices.Clone(p.Attributes)
	s.mu.Unlock()
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (s *startSampler) Description() string { return "startSampler" }

func (s *startSampler) attrs(name string) ([]attribute.KeyValue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.seen[name]
	return kv, ok
}

// newSampledHarness is newHarness with a startSampler.
func newSampledHarness(t *testing.T) (*harness, *startSampler) {
	t.Helper()
	sampler := &startSampler{seen: map[string][]attribute.KeyValue{}}
	h := &harness{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	t.Cleanup(func() {
		h.tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	obs, err := New(WithTracerProvider(h.tp), WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	h.obs = obs
	return h, sampler
}

// Issue #24 point 6: a batch whose commands share a name is named after it ("PIPELINE
// GET", "MULTI INCR"; a mixed one stays "PIPELINE" or "MULTI"), on its span and its
// operation duration.
func TestBatchNames(t *testing.T) {
	_, h, c := standalone(t, respire.Options{})
	ctx := context.Background()
	if _, err := c.Pipeline().Do("GET", "a").Do("GET", "b").Do("GET", "c").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipeline().Do("SET", "a", "1").Do("GET", "a").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DoMulti(ctx, []any{"SET", "a", "1"}, []any{"set", "b", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx, []any{"INCR", "n"}, []any{"INCR", "n"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx, []any{"INCR", "n"}, []any{"GET", "n"})
		return err
	}, "n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name string
		size int64
	}{
		{"PIPELINE GET", 3},
		{"PIPELINE", 2},
		{"PIPELINE SET", 2},
		{"MULTI INCR", 2},
		{"MULTI", 2},
	} {
		spans := h.ended(want.name)
		if len(spans) != 1 {
			t.Errorf("%d %q spans, want 1 (spans: %v)", len(spans), want.name, spanNames(h.spans.Ended()))
			continue
		}
		if v, _ := attr(spans[0], semconv.DBOperationNameKey); v.AsString() != want.name {
			t.Errorf("%q span: db.operation.name %q", want.name, v.AsString())
		}
		if v, _ := attr(spans[0], semconv.DBOperationBatchSizeKey); v.AsInt64() != want.size {
			t.Errorf("%q span: db.operation.batch.size %d, want %d", want.name, v.AsInt64(), want.size)
		}
		if n := h.count(t, "db.client.operation.duration", semconv.DBOperationName(want.name)); n != 1 {
			t.Errorf("%d %q durations, want 1", n, want.name)
		}
	}
}

// Issue #24 point 6: a command's or a batch's span starts with server.address and
// server.port, so that a sampler sees them.
func TestSpansStartWithServer(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	h, sampler := newSampledHarness(t)
	c := h.client(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	if _, err := c.Do(ctx, "GET", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipeline().Do("SET", "a", "1").Do("GET", "a").Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(ctx, func(tx *respire.Tx) error {
		_, err := tx.Exec(ctx, []any{"INCR", "n"}, []any{"GET", "n"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(srv.Addr(), ":")
	p, _ := strconv.Atoi(port)
	for _, name := range []string{"GET", "PIPELINE", "MULTI"} {
		kv, ok := sampler.attrs(name)
		if !ok {
			t.Errorf("the sampler saw no %q span", name)
			continue
		}
		if !has(attribute.NewSet(kv...), []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(p), semconv.DBOperationName(name)}) {
			t.Errorf("%q span started with %v, want server.address %s, server.port %d", name, kv, host, p)
		}
	}
}
