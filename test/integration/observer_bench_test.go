package integration

import (
	"context"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/observe"
)

// noopObserver is an Observer that does nothing: what the client itself costs when it
// reports events.
type noopObserver struct{ observe.Base }

// BenchmarkClientGetObserved is BenchmarkClientGet with an observer that does nothing:
// what building and passing the events costs.
func BenchmarkClientGetObserved(b *testing.B) {
	c := benchClientWith(b, respire.Options{Observer: &noopObserver{}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
			b.Fatal(err)
		}
	}
}
