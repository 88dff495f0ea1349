//go:build unix

package cmds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// benchClient is a client on a server of its own, with bench:key set.
func benchClient(tb testing.TB) *respire.Client {
	tb.Helper()
	srv := testserver.Start(tb, testserver.Config{})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "bench:key", strings.Repeat("v", 16)); err != nil {
		tb.Fatal(err)
	}
	if _, err := c.Do(ctx, "HSET", "bench:hash", "f", strings.Repeat("v", 16)); err != nil {
		tb.Fatal(err)
	}
	return c
}

// The benchmarks come in pairs, the typed command and the same command by Client.Do,
// so that benchstat or a glance compares their time and allocations.

func BenchmarkTypedGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := Get("bench:key").Do(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		v, err := c.Do(ctx, "GET", "bench:key")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Text(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTypedSet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	val := strings.Repeat("v", 16)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := Set("bench:key", val).Do(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoSet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	val := strings.Repeat("v", 16)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		v, err := c.Do(ctx, "SET", "bench:key", val)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Text(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTypedHGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := HGet("bench:hash", "f").Do(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoHGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		v, err := c.Do(ctx, "HGET", "bench:hash", "f")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Text(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTypedIncr(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if _, err := Incr("bench:n").Do(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoIncr(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		v, err := c.Do(ctx, "INCR", "bench:n")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Int(); err != nil {
			b.Fatal(err)
		}
	}
}

// pipelined is how many GETs the pipeline benchmarks send at once.
const pipelined = 100

func BenchmarkTypedPipelineGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	p := NewPipeline(c)
	replies := make([]Reply[string], pipelined)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		for i := range replies {
			replies[i] = Get("bench:key").In(p)
		}
		if err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		for _, r := range replies {
			if _, err := r.Result(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDoPipelineGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	p := c.Pipeline()
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		for range pipelined {
			p.Do("GET", "bench:key")
		}
		res, err := p.Exec(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
			if _, err := r.Value.Text(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTypedLayer measures what the typed layer adds to a command, apart from the
// round trip: building the command, laying out its arguments and decoding its reply.
func BenchmarkTypedLayer(b *testing.B) {
	key, val := strings.Clone("bench:key"), strings.Repeat("v", 16)
	reply := resp.BulkString(val)
	b.Run("GET", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := Get(key)
			v := c.argv()
			if len(v.args()) != 2 {
				b.Fatal("layout")
			}
			if _, err := decodeString(reply, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SET EX", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c := Set(key, val).Expire(time.Minute)
			v := c.argv()
			if len(v.args()) != 5 {
				b.Fatal("layout")
			}
		}
	})
}

// BenchmarkQueueGet measures what a pipelined GET costs the client apart from the
// round trip, whose time on a shared machine varies by more than the typed layer
// adds: each operation queues pipelined GETs, typed and by Client.Pipeline's Do,
// ends the batch with an empty command so that Exec fails without sending (and
// recycles the batch's buffers as a sent one does), and reads as many replies, as the
// typed Reply and as the Value.
func BenchmarkQueueGet(b *testing.B) {
	c, ctx := benchClient(b), context.Background()
	key := strings.Clone("bench:key")
	results := make([]respire.Result, pipelined)
	for i := range results {
		results[i].Value = resp.BulkString(strings.Repeat("v", 16))
	}
	b.Run("typed", func(b *testing.B) {
		p := NewPipeline(c)
		replies := make([]Reply[string], pipelined)
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			for i := range replies {
				replies[i] = Get(key).In(p)
			}
			p.p.Do()
			if err := p.Exec(ctx); err == nil {
				b.Fatal("an empty command was sent")
			}
			p.results, p.err = results, nil
			for _, r := range replies {
				if _, err := r.Result(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Do", func(b *testing.B) {
		p := c.Pipeline()
		b.ReportAllocs()
		defer cpuPerOp(b)()
		for b.Loop() {
			for range pipelined {
				p.Do("GET", key)
			}
			p.Do()
			if _, err := p.Exec(ctx); err == nil {
				b.Fatal("an empty command was sent")
			}
			for _, r := range results {
				if r.Err != nil {
					b.Fatal(r.Err)
				}
				if _, err := r.Value.Text(); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
