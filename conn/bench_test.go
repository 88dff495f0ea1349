package conn

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/respire/respire/test/testserver"
)

func benchConn(b *testing.B) *Conn { return benchDial(b, testserver.Config{}, Options{}) }

// benchDial starts a server with cfg and dials it with o, with the key the benchmarks
// read set.
func benchDial(b *testing.B, cfg testserver.Config, o Options) *Conn {
	b.Helper()
	srv := testserver.Start(b, cfg)
	c, err := Dial(context.Background(), srv.Addr(), o)
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
	benchGets(b, benchConn(b), context.Background())
}

// benchGets reads the benchmarks' key on c, one GET at a time.
func benchGets(b *testing.B, c *Conn, ctx context.Context) {
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchGets(b, benchConn(b), ctx)
}

// BenchmarkConnGetParallel shows how well concurrent callers coalesce into batches.
func BenchmarkConnGetParallel(b *testing.B) {
	benchParallel(b, 32, "GET", "bench:key")
}

// BenchmarkConnGetParallel1024 is BenchmarkConnGetParallel with 1,024 goroutines, the
// sweep's top point, where batches hold hundreds of commands.
func BenchmarkConnGetParallel1024(b *testing.B) {
	benchParallel(b, max(1024/runtime.GOMAXPROCS(0), 1), "GET", "bench:key")
}

// BenchmarkConnSetParallel is respbench's set-par on one connection: 1 KiB values, so
// a batch of 64 passes maxBatch.
func BenchmarkConnSetParallel(b *testing.B) {
	benchParallel(b, 32, "SET", "bench:key", strings.Repeat("v", 1024))
}

// benchParallel runs args on one connection from parallelism goroutines per P, each
// with a context that can be cancelled, as most callers have.
func benchParallel(b *testing.B, parallelism int, args ...any) {
	c := benchConn(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Do(ctx, args...); err != nil {
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

// benchFollowing dials a connection that follows transactions and authentication
// (Options.Credentials), as every connection of a client with rotating credentials
// does.
func benchFollowing(b *testing.B) *Conn {
	return benchDial(b, testserver.Config{Users: []testserver.User{
		{Name: "u1", Password: "p1", Rules: []string{"+@all", "~*", "&*"}},
	}}, rotating(Options{}, cred1))
}

// BenchmarkConnGetFollowing is BenchmarkConnGet where transactions are followed: a
// command that opens or closes none must cost what it costs elsewhere.
func BenchmarkConnGetFollowing(b *testing.B) {
	benchGets(b, benchFollowing(b), context.Background())
}

// BenchmarkConnTxFollowing is a MULTI, GET, EXEC batch where transactions are
// followed: the batch is a request that the connection follows.
func BenchmarkConnTxFollowing(b *testing.B) {
	c := benchFollowing(b)
	ctx := context.Background()
	tx := [][]any{{"MULTI"}, {"GET", "bench:key"}, {"EXEC"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.DoMulti(ctx, tx...); err != nil {
			b.Fatal(err)
		}
	}
}
