package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/test/testserver"
)

func benchClient(b *testing.B) *respire.Client { return benchClientWith(b, respire.Options{}) }

// benchClientWith is benchClient with opts (Addrs set here).
func benchClientWith(b *testing.B, opts respire.Options) *respire.Client {
	b.Helper()
	srv := testserver.Start(b, testserver.Config{})
	opts.Addrs = []string{srv.Addr()}
	c, err := respire.NewClient(context.Background(), opts)
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

// BenchmarkClientDoCachedParallel is the client-side cache's hit path under load.
func BenchmarkClientDoCachedParallel(b *testing.B) {
	srv := testserver.Start(b, testserver.Config{})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "bench:cached", strings.Repeat("v", 16)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.DoCached(ctx, time.Minute, "GET", "bench:cached"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
