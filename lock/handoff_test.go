package lock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
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

// pausedBriefly runs w.pause(ctx, time.Hour) in a bubble and reports whether it returned
// without waiting out the hour.
func pausedBriefly(t *testing.T, w *handoffWait) bool {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.pause(ctx, time.Hour) }()
	synctest.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pause: %v", err)
		}
		return true
	default:
		cancel()
		<-done
		return false
	}
}

// No release is lost to a waiter that was trying the key when it came: one during the
// acquisition's first try, before the waiter registered, is seen by the count it read
// before that try; one during a later try finds it still registered.
func TestHandoffDuringATryIsNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h handoffs
		w := &handoffWait{handoffKey: handoffKey{h: &h, key: "k", seen: h.count()}}
		h.released("k") // during the first try: nobody is registered yet
		if !pausedBriefly(t, w) {
			t.Fatal("the first pause slept although the key was released during the first try")
		}
		if pausedBriefly(t, w) {
			t.Fatal("a pause with no release since ended early")
		}
		h.released("k") // wakes the pause
		// ... and w is registered again at once: a release during the next try
		// waits for the pause after it.
		h.released("k")
		if !pausedBriefly(t, w) {
			t.Fatal("a release during a try between pauses was lost")
		}
		w.leave()
		if n := h.waiters("k"); n != 0 {
			t.Fatalf("%d waiters listed after the only one left", n)
		}
	})
}

// A waiter that leaves with a wake-up it was handed passes it on to the next waiter.
func TestHandoffLeavingPassesTheWakeUpOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h handoffs
		a := &handoffWait{handoffKey: handoffKey{h: &h, key: "k"}}
		b := &handoffWait{handoffKey: handoffKey{h: &h, key: "k"}}
		if pausedBriefly(t, a) || pausedBriefly(t, b) {
			t.Fatal("a pause with no release ended early")
		}
		h.released("k") // a's: a is the longest waiting
		a.leave()       // a gives up without trying
		if !pausedBriefly(t, b) {
			t.Fatal("the wake-up a gave up did not reach b")
		}
		b.leave()
		if len(a.ch) != 0 || len(b.ch) != 0 || h.waiters("k") != 0 {
			t.Fatalf("left over: %d and %d wake-ups, %d waiters", len(a.ch), len(b.ch), h.waiters("k"))
		}
	})
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
