//go:build !race

package lock

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// A cycle without options allocates the handle and nothing else: not the options, not
// the lock connection's look-up, not the release.
func TestAllocCycle(t *testing.T) {
	if n := cycleAllocs(t, respire.Options{}); n > 1 {
		t.Errorf("an acquire+release cycle allocates %.1f times, want 1 (the handle)", n)
	}
}

// With an observer, the cycle's events (attempt, acquired, released, and the client's
// command events) add no allocation.
func TestAllocCycleObserved(t *testing.T) {
	if n := cycleAllocs(t, respire.Options{Observer: observe.Base{}}); n > 1 {
		t.Errorf("an observed acquire+release cycle allocates %.1f times, want 1 (the handle)", n)
	}
}

// cycleAllocs returns the allocations of an acquire+release cycle on a client made
// with opts.
func cycleAllocs(t *testing.T, opts respire.Options) float64 {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), opts))
	ctx := context.Background()
	cycle := func() {
		mu, ok, err := locks.TryAcquire(ctx, "alloc", time.Minute)
		if err != nil || !ok {
			t.Fatalf("acquire: %v %v", ok, err)
		}
		if out, err := mu.Release(ctx); err != nil || out != Released {
			t.Fatalf("release: %v %v", out, err)
		}
	}
	cycle() // dials the connection and learns the release command
	return testing.AllocsPerRun(200, cycle)
}
