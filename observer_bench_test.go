package respire

import (
	"context"
	"testing"
)

// BenchmarkClientGetObserved is BenchmarkClientGet with an observer that does nothing:
// what building and passing the events costs.
func BenchmarkClientGetObserved(b *testing.B) {
	c := benchClientWith(b, Options{Observer: &noopObserver{}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
			b.Fatal(err)
		}
	}
}
