package coordination

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

// Permits and read/write leases wait with package lock's options, with tracking and by
// polling: a release wakes the waiter; an entry that expires without a release (the
// key does not change, and its TTL is the longest entry's) wakes it at that entry's
// expiry; a budget that ends with the entry held is "not acquired"; the caller's own
// cancellation is an error; bad options are refused before anything is sent.
func TestEntriesWait(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		client func(*testing.T, *testserver.Server) *respire.Client
		// The pause between tries while waiting for a release: with tracking a
		// minute, longer than the budget, so that only the key's invalidation can
		// wake the waiter in time.
		retry time.Duration
	}{{"tracking", trackingClient, time.Minute}, {"polling", plainClient, 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			co := New(tc.client(t, srv))
			scripts := func() int { return srv.Calls(t, "eval") + srv.Calls(t, "evalsha") }
			sem := co.Semaphore("wait:sem:"+tc.name, 2)
			short, ok, err := sem.TryAcquire(ctx, 300*time.Millisecond)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			long, ok, err := sem.TryAcquire(ctx, time.Minute)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			// The short permit expires unseen: the waiter must not sleep until the key's
			// TTL (a minute) but try again at that permit's expiry.
			const budget = 10 * time.Second
			began := time.Now()
			p, ok, err := sem.TryAcquire(ctx, time.Minute, lock.WithWait(budget), lock.WithRetryEvery(time.Minute))
			if err != nil || !ok {
				t.Fatalf("waiting past an expiring permit: %v %v", ok, err)
			}
			// Not a speed figure: a wait that did not know the permit's expiry sleeps
			// the whole budget (the key's TTL and the retry pause are both longer) and
			// acquires only with its last try.
			if waited := time.Since(began); waited >= budget {
				t.Fatalf("waited the whole budget (%v) for a permit that expired after 300 ms", waited)
			}
			if short.RemainingEstimate() > 0 {
				t.Fatal("acquired while every permit was live")
			}
			// Every permit held: a budget that ends is "not acquired", not an error.
			if q, ok, err := sem.TryAcquire(ctx, time.Minute, lock.WithWait(100*time.Millisecond), lock.WithRetryEvery(20*time.Millisecond)); ok || err != nil || q != nil {
				t.Fatalf("budget spent: %v %v %v", q, ok, err)
			}
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			_, ok, err = sem.TryAcquire(dctx, time.Minute, lock.WithWait(time.Minute))
			cancel()
			if ok || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("caller's deadline: %v %v", ok, err)
			}
			for _, opt := range []lock.Option{lock.WithWait(-time.Second), nil} {
				if _, ok, err := sem.TryAcquire(ctx, time.Minute, opt); ok || !errors.Is(err, lock.ErrInvalidArg) && !errors.Is(err, ErrInvalidArg) {
					t.Fatalf("bad option: %v %v", ok, err)
				}
			}
			// A release wakes a waiter: released once the waiter has found every permit
			// held.
			began = time.Now()
			before := scripts()
			var q *Permit
			acquired := make(chan struct{})
			go func() {
				defer close(acquired)
				q, ok, err = sem.TryAcquire(ctx, time.Minute, lock.WithWait(budget), lock.WithRetryEvery(tc.retry))
			}()
			testkit.WaitFor(t, "the waiter's first attempt", func() bool { return scripts() > before })
			long.Release(ctx)
			<-acquired
			if err != nil || !ok {
				t.Fatalf("waiting for a release: %v %v", ok, err)
			}
			// Not a speed figure either: a waiter nothing woke sleeps the whole budget.
			if waited := time.Since(began); waited >= budget {
				t.Fatalf("waited the whole budget (%v) for a permit released once it waited", waited)
			}
			p.Close()
			q.Close()

			// A writer waits for a reader's expiry, and a reader for a writer's release.
			key := "wait:rw:" + tc.name
			r1, ok, err := co.TryAcquireReadLock(ctx, key, 300*time.Millisecond)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			w, ok, err := co.TryAcquireWriteLock(ctx, key, time.Minute, lock.WithWait(budget), lock.WithRetryEvery(time.Minute))
			if err != nil || !ok {
				t.Fatalf("writer waiting for a reader's expiry: %v %v", ok, err)
			}
			if r1.RemainingEstimate() > 0 {
				t.Fatal("a writer acquired beside a live reader")
			}
			began = time.Now()
			before = scripts()
			var r2 *RWLease
			acquired = make(chan struct{})
			go func() {
				defer close(acquired)
				r2, ok, err = co.TryAcquireReadLock(ctx, key, time.Minute, lock.WithWait(budget), lock.WithRetryEvery(tc.retry))
			}()
			testkit.WaitFor(t, "the reader's first attempt", func() bool { return scripts() > before })
			w.Release(ctx)
			<-acquired
			if err != nil || !ok {
				t.Fatalf("reader waiting for a writer's release: %v %v", ok, err)
			}
			if waited := time.Since(began); waited >= budget {
				t.Fatalf("waited the whole budget (%v) for a write lease released once it waited", waited)
			}
			r2.Close()
		})
	}
}
