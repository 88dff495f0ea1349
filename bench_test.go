package respire

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire/test/testserver"
)

func benchClient(b *testing.B) *Client {
	b.Helper()
	srv := testserver.Start(b, testserver.Config{})
	c, err := NewClient(context.Background(), Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	if _, err := c.Do(context.Background(), "SET", "bench:key", strings.Repeat("v", 16)); err != nil {
		b.Fatal(err)
	}
	return c
}

func BenchmarkClientGet(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientGetParallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
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

func BenchmarkClientSetParallel(b *testing.B) {
	c := benchClient(b)
	ctx := context.Background()
	val := strings.Repeat("x", 1024)
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Do(ctx, "SET", "bench:set", val); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkClientPipeline100(b *testing.B) {
	c := benchClient(b)
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
