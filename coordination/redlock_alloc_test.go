//go:build !race

package coordination

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkRedlockRelease measures one Release of a lease held on three servers (the
// acquisition is outside the timing and the allocation count).
func BenchmarkRedlockRelease(b *testing.B) {
	benchRedlockRelease(b, redlockBenchGroup(b))
}

// redlockReleaseAllocs is what a Release of a lease held on three servers allocates:
// nothing. It was 2 (the goroutines of a parallel run) before the release sent every
// server's delete from the caller's goroutine; 39 (2718 B) before the servers' states
// and errors were kept in the handle; 17 before the parallel run used the handle's
// WaitGroup and no closure of its own; 15 before each server's delete was bounded by
// a deadline handed to the connection instead of the one NodeTimeout context (4),
// which each connection watched (3 per server).
const redlockReleaseAllocs = 0

// redlockReleaseSlack is the variation the budget allows. The release follows an
// acquisition made with the timer stopped, so its connections have often been idle
// for a millisecond or more, and such a connection looks at its socket before it
// writes (conn's peekIdle), which on plain TCP allocates nothing since it reuses the
// connection's raw socket (it cost about 3 a server before). The rest is a garbage
// collection emptying the connections' call pools mid-run. A regression to a
// goroutine per server costs 2 more, to a NodeTimeout context 13 more.
const redlockReleaseSlack = 1

// A Redlock release allocates nothing.
func TestAllocRedlockRelease(t *testing.T) {
	g := redlockBenchGroup(t)
	r := testing.Benchmark(func(b *testing.B) { benchRedlockRelease(b, g) })
	if n := r.AllocsPerOp(); n > redlockReleaseAllocs+redlockReleaseSlack {
		t.Errorf("a Redlock release allocates %d times (%d B), want at most %d (+%d)", n, r.AllocedBytesPerOp(), redlockReleaseAllocs, redlockReleaseSlack)
	}
	t.Logf("a Redlock release: %d allocations, %d B", r.AllocsPerOp(), r.AllocedBytesPerOp())
}

func redlockBenchGroup(tb testing.TB) *RedlockGroup {
	clients := make([]*respire.Client, 3)
	for i := range clients {
		srv := testserver.Start(tb, testserver.Config{})
		clients[i] = testclient.At(tb, srv.Addr(), respire.Options{})
	}
	g, err := NewRedlockGroup(clients, RedlockOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func benchRedlockRelease(b *testing.B, g *RedlockGroup) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		rl, ok, err := g.TryAcquire(ctx, "bench:rl", time.Minute)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.StartTimer()
		if ok, err := rl.Release(ctx); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
