package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// One release wakes one waiter, the longest waiting first, and a key without waiters
// leaves nothing behind.
func TestHandoffsWakeTheOldestWaiter(t *testing.T) {
	var h handoffs
	h.released("k") // nobody waits: nothing happens
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	h.enter("k", a)
	h.enter("k", b)
	h.enter("other", make(chan struct{}, 1))
	h.released("k")
	if len(a) != 1 || len(b) != 0 {
		t.Fatalf("first release: %d wake-ups for the oldest, %d for the next; want 1 and 0", len(a), len(b))
	}
	if h.leave("k", a) {
		t.Error("the woken waiter is still listed")
	}
	h.released("k")
	if len(b) != 1 || h.waiters("k") != 0 {
		t.Fatalf("second release: %d wake-ups, %d waiters left", len(b), h.waiters("k"))
	}
	if _, ok := h.waiting["k"]; ok {
		t.Error("a key without waiters keeps its entry")
	}
	if h.waiters("other") != 1 {
		t.Error("a release of k woke a waiter of another key")
	}
}

// A waiter polling for a key held by another goroutine of the same Locker gets it as
// soon as that goroutine releases it, not at its next retry an hour later; one whose
// context ends leaves no registration behind.
func TestReleaseHandsTheKeyToAPollingWaiter(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	const key = "locks:handoff"

	held, ok, err := locks.TryAcquire(ctx, key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	type result struct {
		mu  *Lock
		err error
	}
	got := make(chan result, 1)
	go func() {
		mu, ok, err := locks.TryAcquire(ctx, key, time.Minute, WithWait(time.Hour), WithRetryEvery(time.Hour))
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		got <- result{mu, err}
	}()
	testkit.WaitFor(t, "the waiter to find the key held and pause", func() bool { return locks.handoff.waiters(key) == 1 })
	if _, err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
		if owner := srv.Do(t, "GET", key); owner != r.mu.Token().b {
			t.Fatalf("the key holds %q, not the waiter's token", owner)
		}
		if _, err := r.mu.Release(ctx); err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Wait):
		t.Fatalf("the waiter did not take the released key within %v: it waits out its retry pause", testkit.Wait)
	}

	// A waiter that gives up is no longer listed.
	held, ok, err = locks.TryAcquire(ctx, key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	short, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, _, err := locks.TryAcquire(short, key, time.Minute, WithWait(time.Hour), WithRetryEvery(time.Hour))
		gaveUp <- err
	}()
	testkit.WaitFor(t, "the second waiter to pause", func() bool { return locks.handoff.waiters(key) == 1 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled waiter: %v, want context.Canceled", err)
	}
	if n := locks.handoff.waiters(key); n != 0 {
		t.Fatalf("%d waiters listed after the only one gave up", n)
	}
	if _, err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
