package coordination

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

// occupancy is the protected resource of the contention test: it counts who is inside
// and remembers the most ever at once.
type occupancy struct {
	inside, most atomic.Int64
}

func (o *occupancy) enter() {
	n := o.inside.Add(1)
	for m := o.most.Load(); n > m && !o.most.CompareAndSwap(m, n); m = o.most.Load() {
	}
}

func (o *occupancy) leave() { o.inside.Add(-1) }

func TestSemaphoreNeverExceedsCapacity(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	sem := co.Semaphore("sem:contended", 5)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var res occupancy
	var entries atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			for {
				p, ok, err := sem.TryAcquire(ctx, 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					// Contention is the workload here, not synchronisation: back off briefly.
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
					continue
				}
				res.enter()
				entries.Add(1)
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // some work inside
				res.leave()
				out, err := p.Release(ctx)
				if err == nil && out != lock.Released {
					err = errors.New("release: " + out.String())
				}
				if err != nil {
					errs <- err
				}
				return
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if entries.Load() != 64 {
		t.Fatalf("%d of 64 contenders got in", entries.Load())
	}
	if m := res.most.Load(); m > 5 || m < 2 {
		t.Fatalf("occupancy reached %d with capacity 5", m)
	}
	if srv.Do(t, "EXISTS", "sem:contended") != "0" {
		t.Fatal("the semaphore's key outlived its last permit")
	}
}

func TestSemaphoreReclaimsExpiredPermits(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	sem := co.Semaphore("sem:expiry", 2)
	var held []*Permit
	for range 2 {
		p, ok, err := sem.TryAcquire(ctx, 300*time.Millisecond)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		held = append(held, p)
	}
	if _, ok, err := sem.TryAcquire(ctx, time.Minute); ok || err != nil {
		t.Fatal("a third permit of two:", ok, err)
	}
	// Renewal keeps one permit; the other expires on the server's clock and is reclaimed.
	if ok, err := held[0].ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	var third *Permit
	testkit.WaitFor(t, "the expired permit to be reclaimed", func() bool {
		p, ok, err := sem.TryAcquire(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		third = p
		return ok
	})
	defer third.Close()
	if _, ok, _ := sem.TryAcquire(ctx, time.Minute); ok {
		t.Fatal("the renewed permit was reclaimed too")
	}
	if ok, err := held[1].ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatal("an expired permit came back:", ok, err)
	}
	if out, err := held[1].Release(ctx); out != lock.NotOwned || err != nil {
		t.Fatal(out, err)
	}
	if out, err := held[0].Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	if out, err := held[0].Release(ctx); out != lock.AlreadyReleased || err != nil {
		t.Fatal(out, err)
	}
	// Every permit has a TTL on the server: the key expires with the last of them.
	if pttl, _ := strconv.Atoi(srv.Do(t, "PTTL", "sem:expiry")); pttl <= 0 {
		t.Fatalf("the semaphore's key has PTTL %d", pttl)
	}
}

func TestSemaphoreCapacityMismatch(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	p, ok, err := co.Semaphore("sem:agree", 5).TryAcquire(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer p.Close()
	_, ok, err = co.Semaphore("sem:agree", 3).TryAcquire(ctx, time.Minute)
	var mm *CapacityMismatchError
	if ok || !errors.Is(err, ErrCapacityMismatch) || !errors.As(err, &mm) || mm.Stored != 5 || mm.Capacity != 3 {
		t.Fatal(ok, err)
	}
	if srv.Do(t, "HLEN", "sem:agree") != "2" {
		t.Fatal("a refused participant changed the semaphore")
	}
}

// A capacity stored beside expired permits alone binds nobody: once a shortened
// renewal lets the last live permit expire before the key does, a participant with
// another capacity gets in.
func TestSemaphoreCapacityOfExpiredPermitsOnly(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	p, ok, err := co.Semaphore("sem:gone", 5).TryAcquire(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := p.ResetExpiry(ctx, 20*time.Millisecond); !ok || err != nil {
		t.Fatal(ok, err)
	}
	testkit.WaitWithin(t, 5*time.Second, "a permit of capacity 3 once the capacity-5 permit expired", func() bool {
		q, ok, err := co.Semaphore("sem:gone", 3).TryAcquire(ctx, time.Minute)
		if ok {
			q.Close()
		}
		return ok && err == nil
	})
}

func TestEntriesRefuseBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	before := srv.Calls(t, "evalsha")
	for _, tc := range []struct {
		name string
		try  func() error
	}{
		{"empty semaphore key", func() error { _, _, err := co.Semaphore("", 1).TryAcquire(ctx, time.Second); return err }},
		{"capacity 0", func() error { _, _, err := co.Semaphore("s", 0).TryAcquire(ctx, time.Second); return err }},
		{"negative capacity", func() error { _, _, err := co.Semaphore("s", -1).TryAcquire(ctx, time.Second); return err }},
		{"permit ttl 0", func() error { _, _, err := co.Semaphore("s", 1).TryAcquire(ctx, 0); return err }},
		{"permit ttl < 0", func() error { _, _, err := co.Semaphore("s", 1).TryAcquire(ctx, -time.Second); return err }},
		{"nil semaphore", func() error { var s *Semaphore; _, _, err := s.TryAcquire(ctx, time.Second); return err }},
		{"empty read key", func() error { _, _, err := co.TryAcquireReadLock(ctx, "", time.Second); return err }},
		{"empty write key", func() error { _, _, err := co.TryAcquireWriteLock(ctx, "", time.Second); return err }},
		{"read ttl 0", func() error { _, _, err := co.TryAcquireReadLock(ctx, "rw", 0); return err }},
		{"write ttl < 0", func() error { _, _, err := co.TryAcquireWriteLock(ctx, "rw", -1); return err }},
		{"no client", func() error { _, _, err := (&Coordinator{}).TryAcquireReadLock(ctx, "rw", time.Second); return err }},
	} {
		if err := tc.try(); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	p, ok, err := co.Semaphore("s", 1).TryAcquire(ctx, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := p.ResetExpiry(ctx, 0); ok || !errors.Is(err, ErrInvalidArg) {
		t.Error("renewal for 0:", ok, err)
	}
	if after := srv.Calls(t, "evalsha"); after != before+1 {
		t.Errorf("refused input reached the server: %d scripts run, want 1", after-before)
	}
	var nilPermit *Permit
	var nilLease *RWLease
	var nilRedlock *Redlock
	if nilPermit.Close() != nil || nilLease.Close() != nil || nilRedlock.Close() != nil || p.Close() != nil {
		t.Fatal("Close")
	}
}
