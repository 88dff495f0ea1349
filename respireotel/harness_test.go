package respireotel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// TestMain (main_test.go) checks for leaked goroutines.

// harness is an Observer recording into an SDK TracerProvider with a SpanRecorder and
// an SDK MeterProvider with a ManualReader.
type harness struct {
	obs    *Observer
	tp     *sdktrace.TracerProvider
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	h := &harness{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	t.Cleanup(func() {
		h.tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	obs, err := New(append([]Option{WithTracerProvider(h.tp), WithMeterProvider(mp)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	h.obs = obs
	return h
}

// client opens a client on o with the harness's observer, closed when the test ends.
func (h *harness) client(t *testing.T, o respire.Options) *respire.Client {
	t.Helper()
	o.Observer = h.obs
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := respire.NewClient(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (h *harness) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// find returns the instrument name from rm.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// has says whether set holds every one of want.
func has(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// sum adds up the points of the counter or up-down counter name whose attributes
// include want.
func (h *harness) sum(t *testing.T, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := find(h.collect(t), name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
	}
	var n int64
	for _, p := range s.DataPoints {
		if has(p.Attributes, want) {
			n += p.Value
		}
	}
	return n
}

// histogram returns the points of the histogram name whose attributes include want.
func (h *harness) histogram(t *testing.T, name string, want ...attribute.KeyValue) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := find(h.collect(t), name)
	if !ok {
		return nil
	}
	hist, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
	}
	var out []metricdata.HistogramDataPoint[float64]
	for _, p := range hist.DataPoints {
		if has(p.Attributes, want) {
			out = append(out, p)
		}
	}
	return out
}

// count is how many measurements the matching points of histogram name hold.
func (h *harness) count(t *testing.T, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	var n uint64
	for _, p := range h.histogram(t, name, want...) {
		n += p.Count
	}
	return n
}

// ended returns the ended spans named name.
func (h *harness) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range h.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of key on span.
func attr(span sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range span.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func hasEvent(events []sdktrace.Event, name string) bool {
	for _, e := range events {
		if e.Name == name {
			return true
		}
	}
	return false
}

// standalone starts a server and returns it with a harness (made with opts) and a
// client of it configured by o, whose Addrs it sets.
func standalone(t *testing.T, o respire.Options, opts ...Option) (*testserver.Server, *harness, *respire.Client) {
	t.Helper()
	srv := testserver.Start(t, testserver.Config{})
	h := newHarness(t, opts...)
	o.Addrs = []string{srv.Addr()}
	return srv, h, h.client(t, o)
}
