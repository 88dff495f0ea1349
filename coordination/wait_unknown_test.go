package coordination

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// cutAfterContention returns a client of srv through a fault proxy that resets the
// connection under the next reply once a try has found the resource held: the try
// after it is written, runs on the server, and its reply never comes, so its outcome
// is unknown. The client has no tracking, so a waiter polls and nothing else of the
// client is in flight.
func cutAfterContention(t *testing.T, srv *testserver.Server) (*respire.Client, *faultproxy.Proxy) {
	t.Helper()
	p := faultproxy.Start(t, srv.Addr())
	obs := onFirstContention(func() { p.CutAfter(faultproxy.ToClient, 0) })
	return testclient.New(t, respire.Options{Addrs: []string{p.Addr()}, Observer: obs}), p
}

// onFirstContention returns an observer that calls fault when a try first finds the
// resource held.
func onFirstContention(fault func()) observe.Observer {
	rec := &recorder{}
	var once sync.Once
	rec.onLock(func(e observe.Lock) {
		if e.Kind == observe.LockContended {
			once.Do(fault)
		}
	})
	return rec
}

// A waiting try whose outcome is unknown (the connection broke after the script was
// written) ends the wait with its error, never "not acquired" (seed 001: "Preserve a
// bounded acquisition wait"): it may have taken the resource. The wait's budget is
// long; it is a try's outcome, not the budget or the caller's context, that ends it.
func TestWaitEndsOnUnknownOutcome(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	holder := New(plainClient(t, srv))
	waitOpts := []lock.Option{lock.WithWait(10 * time.Second), lock.WithRetryEvery(20 * time.Millisecond)}
	for _, tc := range []struct {
		name string
		hold func(t *testing.T) // takes the resource through holder
		wait func(co *Coordinator) (bool, error)
	}{{
		name: "fenced",
		hold: func(t *testing.T) {
			if _, ok, err := holder.TryAcquireFencedLock(ctx, "{unk}:lease", "{unk}:fence", time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
		},
		wait: func(co *Coordinator) (bool, error) {
			_, ok, err := co.TryAcquireFencedLock(ctx, "{unk}:lease", "{unk}:fence", time.Minute, waitOpts...)
			return ok, err
		},
	}, {
		name: "semaphore",
		hold: func(t *testing.T) {
			if _, ok, err := holder.Semaphore("unk:sem", 1).TryAcquire(ctx, time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
		},
		wait: func(co *Coordinator) (bool, error) {
			_, ok, err := co.Semaphore("unk:sem", 1).TryAcquire(ctx, time.Minute, waitOpts...)
			return ok, err
		},
	}, {
		name: "write",
		hold: func(t *testing.T) {
			if _, ok, err := holder.TryAcquireReadLock(ctx, "unk:rw:w", time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
		},
		wait: func(co *Coordinator) (bool, error) {
			_, ok, err := co.TryAcquireWriteLock(ctx, "unk:rw:w", time.Minute, waitOpts...)
			return ok, err
		},
	}, {
		name: "read",
		hold: func(t *testing.T) {
			if _, ok, err := holder.TryAcquireWriteLock(ctx, "unk:rw:r", time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
		},
		wait: func(co *Coordinator) (bool, error) {
			_, ok, err := co.TryAcquireReadLock(ctx, "unk:rw:r", time.Minute, waitOpts...)
			return ok, err
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hold(t)
			c, p := cutAfterContention(t, srv)
			ok, err := tc.wait(New(c))
			if ok || !errors.Is(err, conn.ErrOutcomeUnknown) {
				t.Fatalf("a wait whose try's outcome is unknown: %v %v; want an error matching conn.ErrOutcomeUnknown", ok, err)
			}
			// The proxy counts the reset once its pumps have stopped.
			testkit.WaitFor(t, "the proxy's cut", func() bool { return p.Stats().Resets > 0 })
		})
	}
}

// A Redlock attempt whose outcome is unknown on every server (their connections broke
// after the SETs were written) gives back what it may have taken and counts as failed,
// not as contention: a wait whose attempts fail so (the cut stays, so the later ones
// fail too) ends with ErrNoQuorum, never "not acquired".
func TestRedlockWaitEndsOnUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	srvs, direct := redlockNodes(t, 3)
	const key = "rl:unk"
	if _, ok, err := newGroup(t, direct).TryAcquire(ctx, key, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	proxies := make([]*faultproxy.Proxy, len(srvs))
	for i, srv := range srvs {
		proxies[i] = faultproxy.Start(t, srv.Addr())
	}
	obs := onFirstContention(func() {
		for _, p := range proxies {
			p.CutAfter(faultproxy.ToClient, 0)
		}
	})
	clients := make([]*respire.Client, len(srvs))
	for i, p := range proxies {
		opts := respire.Options{Addrs: []string{p.Addr()}}
		if i == 0 {
			opts.Observer = obs // the group's observer
		}
		clients[i] = testclient.New(t, opts)
	}
	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, key, time.Minute, lock.WithWait(3*time.Second), lock.WithRetryEvery(20*time.Millisecond))
	if ok || rl != nil || !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("a wait whose attempts' outcomes are unknown: %v %v; want an error matching ErrNoQuorum", ok, err)
	}
	for _, p := range proxies {
		testkit.WaitFor(t, "each proxy's cut", func() bool { return p.Stats().Resets > 0 })
	}
}
