//go:build !race

package coordination

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkRedlockCycle measures one TryAcquire+Release of a lease on three servers,
// respbench's redlock scenario on one goroutine.
func BenchmarkRedlockCycle(b *testing.B) {
	benchCycle(b, redlockCycle(b, redlockBenchGroup(b)))
}

// BenchmarkRedlockCycleParallel is respbench's redlock scenario in miniature: 16
// goroutines (2 CPUs × 8), each cycling on a key of its own.
func BenchmarkRedlockCycleParallel(b *testing.B) {
	g := redlockBenchGroup(b)
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := "bench:rl:" + strconv.FormatInt(id.Add(1), 10)
		for pb.Next() {
			rl, ok, err := g.TryAcquire(ctx, key, time.Minute)
			if err != nil || !ok {
				b.Error(ok, err)
				return
			}
			if ok, err := rl.Release(ctx); !ok || err != nil {
				b.Error(ok, err)
				return
			}
		}
	})
}

// BenchmarkFencedCycle measures one TryAcquireFencedLock+Release.
func BenchmarkFencedCycle(b *testing.B) {
	benchCycle(b, fencedCycle(b, benchCoordinator(b)))
}

// BenchmarkSemaphoreCycle measures one permit's TryAcquire+Release.
func BenchmarkSemaphoreCycle(b *testing.B) {
	benchCycle(b, semaphoreCycle(b, benchCoordinator(b)))
}

// A fenced-lock cycle allocates the handle, the lease it wraps (package lock's) and
// the token's text: not the script's arguments, not the wait, not the release.
func TestAllocFencedCycle(t *testing.T) {
	cycle := fencedCycle(t, benchCoordinator(t))
	cycle() // dials the connections and loads the script
	if n := testing.AllocsPerRun(200, cycle); n > 3 {
		t.Errorf("a fenced-lock cycle allocates %.1f times, want at most 3 (the handle, its lease, its token)", n)
	}
}

// A semaphore cycle allocates the permit's entry, which holds its field and token,
// and the Permit that wraps it: not the release turn, not the grant's reply.
func TestAllocSemaphoreCycle(t *testing.T) {
	cycle := semaphoreCycle(t, benchCoordinator(t))
	cycle()
	if n := testing.AllocsPerRun(200, cycle); n > 2 {
		t.Errorf("a semaphore cycle allocates %.1f times, want at most 2 (the entry, the Permit)", n)
	}
}

// redlockCycleAllocs is what a Redlock cycle (TryAcquire+Release on three servers)
// allocates: the handle, which holds the servers' states and the three leases of
// package lock (adopted in place) with the state of their commands in flight. It was 5
// before the acquisition and the release sent every server's command from the
// caller's goroutine (a goroutine per server but the last, 2 each); 67 (5179 B) before
// the handle kept the servers' states, its token and its release turn; 34 (3298 B)
// before each server's part was bounded by a deadline handed to the connection
// instead of a derived context, which every connection watched with a
// context.AfterFunc (26 of them), and before the three leases were adopted in place
// (3).
const redlockCycleAllocs = 1

// redlockCycleSlack is the variation the budget allows: a garbage collection that
// empties the connections' call pools mid-run. A regression to a goroutine per server
// costs 4 more, to a derived context per operation 10 more, its watches 16 more.
const redlockCycleSlack = 2

// A Redlock cycle allocates only its handle.
func TestAllocRedlockCycle(t *testing.T) {
	g := redlockBenchGroup(t)
	r := testing.Benchmark(func(b *testing.B) { benchCycle(b, redlockCycle(b, g)) })
	if n := r.AllocsPerOp(); n > redlockCycleAllocs+redlockCycleSlack {
		t.Errorf("a Redlock cycle allocates %d times (%d B), want at most %d (+%d)", n, r.AllocedBytesPerOp(), redlockCycleAllocs, redlockCycleSlack)
	}
	t.Logf("a Redlock cycle: %d allocations, %d B", r.AllocsPerOp(), r.AllocedBytesPerOp())
}

func benchCycle(b *testing.B, cycle func()) {
	cycle() // dials the connections and loads the scripts
	b.ReportAllocs()
	for b.Loop() {
		cycle()
	}
}

func benchCoordinator(tb testing.TB) *Coordinator {
	srv := testserver.Start(tb, testserver.Config{})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return New(c)
}

func redlockCycle(tb testing.TB, g *RedlockGroup) func() {
	ctx := context.Background()
	return func() {
		rl, ok, err := g.TryAcquire(ctx, "bench:rl", time.Minute)
		if err != nil || !ok {
			tb.Fatal(ok, err)
		}
		if ok, err := rl.Release(ctx); !ok || err != nil {
			tb.Fatal(ok, err)
		}
	}
}

func fencedCycle(tb testing.TB, co *Coordinator) func() {
	ctx := context.Background()
	return func() {
		fl, ok, err := co.TryAcquireFencedLock(ctx, "{bench}:lease", "{bench}:fence", time.Minute)
		if err != nil || !ok {
			tb.Fatal(ok, err)
		}
		if _, err := fl.Release(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

func semaphoreCycle(tb testing.TB, co *Coordinator) func() {
	ctx := context.Background()
	s := co.Semaphore("bench:sem", 4)
	return func() {
		p, ok, err := s.TryAcquire(ctx, time.Minute)
		if err != nil || !ok {
			tb.Fatal(ok, err)
		}
		if _, err := p.Release(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}
