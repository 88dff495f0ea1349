package respireotel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/lock"
)

// A lock whose key is deleted under its keep-alive is lost with ErrLeaseLost: counted
// in respire.lock.losses as lease_lost, after an acquisition counted as acquired with
// its wait time, and the acquisition is an event on the caller's span.
func TestLockLoss(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{})
	ctx, parent := h.tp.Tracer("test").Start(context.Background(), "parent")
	const key = "otel:lock:lost"

	// A lease long enough that its first renewal, after half of it, comes well before
	// it runs out even on a loaded machine: the loss is the deleted key, not expiry.
	mu, err := lock.New(c).Acquire(ctx, key, 2*time.Second, lock.WithKeepAlive())
	if err != nil {
		t.Fatal(err)
	}
	defer mu.Close()
	parent.End()
	srv.Do(t, "DEL", key)
	select {
	case <-mu.KeepAliveContext().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the keep-alive did not notice the deleted key")
	}
	if cause := context.Cause(mu.KeepAliveContext()); !errors.Is(cause, lock.ErrLeaseLost) {
		t.Fatalf("keep-alive ended with %v, want ErrLeaseLost", cause)
	}
	testkit.WaitWithin(t, 5*time.Second, "a lease_lost loss", func() bool {
		return h.sum(t, "respire.lock.losses", lossCauseKey.String(causeLeaseLost)) == 1
	})
	if n := h.sum(t, "respire.lock.losses"); n != 1 {
		t.Errorf("%d losses, want 1", n)
	}
	if n := h.sum(t, "respire.lock.acquisitions", resultKey.String(resultAcquired)); n != 1 {
		t.Errorf("%d acquisitions, want 1", n)
	}
	if n := h.sum(t, "respire.lock.attempts"); n < 1 {
		t.Errorf("%d attempts", n)
	}
	if n := h.count(t, "respire.lock.wait_time", resultKey.String(resultAcquired)); n != 1 {
		t.Errorf("%d acquisition waits, want 1", n)
	}
	spans := h.ended("parent")
	if len(spans) != 1 || !hasEvent(spans[0].Events(), "respire.lock.acquired") {
		t.Errorf("the caller's span has no respire.lock.acquired event")
	}
}

// A lock held by another owner: the waiter's tries are contentions, and an acquisition
// that runs out of wait is counted as gave_up.
func TestLockContention(t *testing.T) {
	_, h, c := standalone(t, respire.Options{})
	ctx := context.Background()
	locks := lock.New(c)
	const key = "otel:lock:held"

	mu, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locks.Acquire(ctx, key, time.Minute, lock.WithWait(50*time.Millisecond)); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("second acquisition: %v, want ErrNotAcquired", err)
	}
	if out, err := mu.Release(ctx); out != lock.Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
	if n := h.sum(t, "respire.lock.contentions"); n < 1 {
		t.Errorf("%d contentions", n)
	}
	if n := h.sum(t, "respire.lock.acquisitions", resultKey.String(resultGaveUp)); n != 1 {
		t.Errorf("%d acquisitions gave up, want 1", n)
	}
	if n := h.sum(t, "respire.lock.releases", releaseKey.String("released")); n != 1 {
		t.Errorf("%d releases, want 1", n)
	}
}

// A renewal stuck behind CLIENT PAUSE WRITE until its context ends may have been
// written: the lock cuts off its connection with CLIENT KILL, counted in
// respire.lock.cutoffs, and the lock is lost as ownership_uncertain.
func TestCutoff(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{})
	ctx := context.Background()
	const key = "otel:lock:cutoff"

	mu, err := lock.New(c).Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer mu.Close()
	cut := false
	for attempt := 0; attempt < 20 && !cut; attempt++ {
		srv.Do(t, "CLIENT", "PAUSE", "60000", "WRITE")
		tctx, cancel := context.WithTimeout(ctx, 15*time.Millisecond)
		_, err := mu.ResetExpiry(tctx, time.Minute)
		cancel()
		srv.Do(t, "CLIENT", "UNPAUSE")
		switch {
		case errors.Is(err, conn.ErrNotSent):
			// The context ended before the renewal was written: nothing to cut off.
		case errors.Is(err, lock.ErrOwnershipUncertain):
			cut = true
		default:
			t.Fatalf("renewal stuck behind the pause: %v", err)
		}
	}
	if !cut {
		t.Fatal("no renewal was written before its context ended in 20 tries")
	}
	testkit.WaitWithin(t, 5*time.Second, "a cut-off", func() bool {
		return h.sum(t, "respire.lock.cutoffs", resultKey.String(resultOK)) == 1
	})
	testkit.WaitWithin(t, 5*time.Second, "an ownership_uncertain loss", func() bool {
		return h.sum(t, "respire.lock.losses", lossCauseKey.String(causeUncertain)) == 1
	})
}
