package conn

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire/test/testserver"
)

func benchConn(b *testing.B) *Conn {
	b.Helper()
	srv := testserver.Start(b, testserver.Config{})
	c, err := Dial(context.Background(), srv.Addr(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Do(context.Background(), "SET", "bench:key", strings.Repeat("v", 16)); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkConnGet is the latency-bound case: one caller, one command at a time.
func BenchmarkConnGet(b *testing.B) {
	c := benchConn(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConnGetCancellable is BenchmarkConnGet with a context that can be
// cancelled, as most callers have.
func BenchmarkConnGetCancellable(b *testing.B) {
	c := benchConn(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConnGetParallel shows how well concurrent callers coalesce into batches.
func BenchmarkConnGetParallel(b *testing.B) {
	c := benchConn(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkConnDoMulti100(b *testing.B) {
	c := benchConn(b)
	ctx := context.Background()
	cmds := make([][]any, 100)
	for i := range cmds {
		cmds[i] = []any{"GET", "bench:key"}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.DoMulti(ctx, cmds...); err != nil {
			b.Fatal(err)
		}
	}
}
