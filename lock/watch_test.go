package lock

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// TestWaitWokenByInvalidation: on a client with tracking, a waiting TryAcquire sleeps on
// the key's invalidation, not on its retry interval, so the hand-off is quick even
// with a retry interval longer than the test.
func TestWaitWokenByInvalidation(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	holder := New(testclient.At(t, srv.Addr(), respire.Options{}))
	tracked := New(testclient.At(t, srv.Addr(), respire.Options{ClientSideCache: &cache.Options{}}))
	polling := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()

	handOff := func(t *testing.T, waiter *Locker, opts ...Option) time.Duration {
		t.Helper()
		h, ok, err := holder.TryAcquire(ctx, "wake", 30*time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		tries, armed := srv.CommandStat(t, "set", "calls"), srv.CommandStat(t, "pttl", "calls")
		type result struct {
			mu *Lock
			at time.Time
		}
		got := make(chan result, 1)
		go func() {
			mu, ok, err := waiter.TryAcquire(ctx, "wake", 30*time.Second, opts...)
			if err != nil || !ok {
				t.Error(ok, err)
			}
			got <- result{mu, time.Now()}
		}()
		// The waiter has tried once SET was called again, and armed its watch (tracked
		// waiters) once PTTL was.
		testkit.WaitFor(t, "the waiter to try", func() bool {
			return srv.CommandStat(t, "set", "calls") > tries && (!waiter.ln.CanWatchKeys || srv.CommandStat(t, "pttl", "calls") > armed)
		})
		start := time.Now()
		h.Release(ctx)
		r := <-got
		if r.mu == nil {
			t.FailNow()
		}
		r.mu.Release(ctx)
		return r.at.Sub(start)
	}

	t.Run("Tracking", func(t *testing.T) {
		// A retry interval of a minute: only the invalidation can explain a quick wake.
		var lat []time.Duration
		for range 50 {
			lat = append(lat, handOff(t, tracked, WithWait(time.Minute), WithRetryEvery(time.Minute)))
		}
		slices.Sort(lat)
		t.Logf("lock.WithWait hand-off with tracking: median %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
		if lat[len(lat)/2] > time.Second {
			t.Fatal("the waiter was not woken by the invalidation")
		}
	})
	t.Run("Polling", func(t *testing.T) {
		var lat []time.Duration
		for range 20 {
			lat = append(lat, handOff(t, polling, WithWait(time.Minute), WithRetry(ExponentialRetry(time.Millisecond, 20*time.Millisecond))))
		}
		slices.Sort(lat)
		t.Logf("lock.WithWait hand-off polling (exponential 1-20 ms, full jitter): median %v, max %v", lat[len(lat)/2], lat[len(lat)-1])
	})
}

// TestWaitContendedInTurn: 16 goroutines of one tracking client wait for one lock.
// Watches are armed in turn, so a release wakes one of them; none may be left asleep
// until the budget (the retry interval is a minute, so only a wake can explain
// progress).
func TestWaitContendedInTurn(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{ClientSideCache: &cache.Options{}}))
	ctx := context.Background()
	const workers, each = 16, 40
	var holders, overlaps atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for range each {
				mu, ok, err := locks.TryAcquire(ctx, "contended", 30*time.Second, WithWait(time.Minute), WithRetryEvery(time.Minute))
				if err != nil || !ok {
					t.Error(ok, err)
					return
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				holders.Add(-1)
				if out, err := mu.Release(ctx); out != Released || err != nil {
					t.Error(out, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d acquisitions by %d waiters in %v; overlaps %d", workers*each, workers, elapsed, overlaps.Load())
	if overlaps.Load() != 0 {
		t.Fatal("two holders at once")
	}
	if elapsed > 25*time.Second {
		t.Fatal("a waiter slept until the lease's TTL: a wake was lost")
	}
}
