package coordination_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

// acquireRedlockWithin is a bounded retry written out, for a policy lock.WithWait does
// not give: attempts with full-jitter pauses, all under one wait budget. It tells the
// caller's own cancellation (returned as is) from the budget running out
// (lock.ErrNotAcquired), and gives up at once on an error no retry can fix (a refused
// group, a refused INFO).
func acquireRedlockWithin(ctx context.Context, g *coordination.RedlockGroup, key string, ttl, wait time.Duration) (*coordination.Redlock, error) {
	budget, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	const base, most = 10 * time.Millisecond, 500 * time.Millisecond
	for attempt := 0; ; attempt++ {
		rl, ok, err := g.TryAcquire(budget, key, ttl)
		switch {
		case ok:
			return rl, nil
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case budget.Err() != nil:
			return nil, fmt.Errorf("%w: %s within %v", lock.ErrNotAcquired, key, wait)
		case err != nil && !errors.Is(err, coordination.ErrNoQuorum):
			return nil, err
		}
		// Full jitter: contenders that failed together do not retry together.
		pause := time.Duration(rand.Int64N(int64(min(base<<min(attempt, 6), most)) + 1))
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-budget.Done():
			t.Stop()
		}
	}
}

// ExampleRedlockGroup_TryAcquire takes a lease on a majority of three independent
// servers, retrying for at most five seconds with a loop of its own, and renews it
// explicitly (lock.WithWait and KeepAlive do both: ExampleRedlockGroup_TryAcquire_wait).
func ExampleRedlockGroup_TryAcquire() {
	ctx := context.Background()
	var clients []*respire.Client
	for _, url := range []string{"redis://node-a:6379", "redis://node-b:6379", "redis://node-c:6379"} {
		c, err := respire.Connect(ctx, url)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close() // after the lease's Close below: the group does not own its clients
		clients = append(clients, c)
	}
	g, err := coordination.NewRedlockGroup(clients, coordination.RedlockOptions{NodeTimeout: 50 * time.Millisecond, DriftFactor: 0.01})
	if err != nil {
		log.Fatal(err)
	}

	rl, err := acquireRedlockWithin(ctx, g, "reports:daily", 30*time.Second, 5*time.Second)
	if errors.Is(err, lock.ErrNotAcquired) {
		return // busy, or too few servers reachable, for the whole budget
	}
	if err != nil {
		log.Fatal(err)
	}
	defer rl.Close()

	// Work in steps that fit the validity; renew well before it ends, and stop if
	// renewal fails.
	for step := range 3 {
		if rl.RemainingEstimate() < 10*time.Second {
			if ok, err := rl.ResetExpiry(ctx, 30*time.Second); !ok {
				log.Printf("lease lost at step %d: %v", step, err)
				return
			}
		}
		// ... one step of the protected work ...
	}
	if ok, err := rl.Release(ctx); !ok {
		log.Printf("release not confirmed by a quorum (the TTL frees the rest): %v", err)
	}
}
