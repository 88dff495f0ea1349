package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/conn"
)

// fakeLease is a Renewable kept by a Keeper, as package coordination's leases are,
// with no server: it renews in memory on the bubble's clock.
type fakeLease struct {
	kp Keeper
	d  time.Duration

	mu         sync.Mutex
	expiresAt  time.Time
	renewals   []time.Time   // when each renewal that succeeded ran
	gone       bool          // deleted behind the handle's back
	hold       chan struct{} // when not nil, a renewal waits for it to close
	released   bool          // a release's delete ran
	deleting   chan struct{} // when not nil, a release waits for it to close after Halt
	failDelete error         // when not nil, a release's delete fails with it, unsent
	late       int           // renewals that ran with or after the delete
	reported   []error       // what ReportLost was told
}

func newFakeLease(d time.Duration) *fakeLease {
	return &fakeLease{d: d, expiresAt: time.Now().Add(d)}
}

func (f *fakeLease) Duration() time.Duration { return f.d }
func (f *fakeLease) Lost() error             { return f.kp.Lost() }

func (f *fakeLease) ExpiresAtEstimate() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expiresAt
}

func (f *fakeLease) ReportLost(_ context.Context, cause error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reported = append(f.reported, cause)
}

func (f *fakeLease) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return false, &conn.CallError{Err: ctx.Err()} // not sent: the lease ran out first
		}
	}
	f.mu.Lock()
	if f.released {
		f.late++
	}
	if f.gone {
		f.mu.Unlock()
		f.kp.Lose(ErrLeaseLost)
		return false, nil
	}
	f.expiresAt = time.Now().Add(d)
	f.renewals = append(f.renewals, time.Now())
	f.mu.Unlock()
	f.kp.Moved(f)
	return true, nil
}

// release is a release as package coordination's handles run it: halt, delete, settle.
func (f *fakeLease) release(ctx context.Context) error {
	if err := f.kp.Halt(ctx); err != nil {
		f.kp.Settle(nil, err)
		return err
	}
	f.mu.Lock()
	deleting, fail := f.deleting, f.failDelete
	f.mu.Unlock()
	if deleting != nil {
		<-deleting
	}
	if fail != nil {
		f.kp.Settle(nil, fail)
		return fail
	}
	f.mu.Lock()
	f.released = true
	f.mu.Unlock()
	f.kp.Settle(ErrReleased, nil)
	return nil
}

// holdDelete makes the next release wait, after Halt, for the returned channel to
// close.
func (f *fakeLease) holdDelete() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleting = make(chan struct{})
	return f.deleting
}

func (f *fakeLease) since(start time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return since(start, f.renewals)
}

func (f *fakeLease) holdRenewals() (resume func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
	return sync.OnceFunc(func() { close(f.hold) })
}

// A Keeper's keep-alive is lock.Lock's: it renews at half the lease, follows a
// renewal made elsewhere (a shorter lease is renewed at once), and its context ends at
// the lease's safe deadline when a renewal hangs, whether or not its goroutine runs.
func TestKeeperSchedule(t *testing.T) {
	const lease = 10 * time.Second
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := newFakeLease(lease)
		ka, err := f.kp.Start(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := f.kp.Start(ctx, f); again != ka || err != nil {
			t.Fatalf("a second Start: %p %v; want the running one %p", again, err, ka)
		}
		time.Sleep(time.Second)
		// A shorter lease set by hand leaves less than half a lease: renewed at once.
		if ok, err := f.ResetExpiry(ctx, 3*time.Second); !ok || err != nil {
			t.Fatal(ok, err)
		}
		time.Sleep(lease + lease/4)
		synctest.Wait()
		want := []time.Duration{time.Second, time.Second, 6 * time.Second, 11 * time.Second}
		if got := f.since(start); len(got) != len(want) || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
			t.Fatalf("renewals at %v, want at %v", got, want)
		}
		if ka.Context().Err() != nil || f.kp.Context(f) != ka.Context() {
			t.Fatalf("the keep-alive's context: %v", context.Cause(ka.Context()))
		}
		// A renewal that hangs: the context ends at the safe deadline (a twentieth of
		// the lease before its end), not when the renewal gives up.
		f.holdRenewals()
		end := f.ExpiresAtEstimate()
		time.Sleep(time.Until(end.Add(-lease/20)) - time.Nanosecond)
		synctest.Wait()
		if ka.Context().Err() != nil {
			t.Fatalf("ended before the safe deadline: %v", context.Cause(ka.Context()))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrLeaseExpired) {
			t.Fatalf("at the safe deadline: %v", cause)
		}
		<-ka.Done()
		if len(f.reported) == 0 || !errors.Is(f.reported[0], ErrLeaseExpired) {
			t.Fatalf("reported %v", f.reported)
		}
	})
}

// A release halts the renewals and waits for one in progress before its delete, and
// the keep-alive's context ends before the release returns, with the release's cause;
// a release that gives up first leaves the lease held and the stopping keep-alive in
// place. Loss found elsewhere and Stop end it too.
func TestKeeperRelease(t *testing.T) {
	const lease = 10 * time.Second
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLease(lease)
		ka, err := f.kp.Start(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		resume := f.holdRenewals()
		time.Sleep(lease/2 + time.Millisecond) // a renewal is in progress, held
		synctest.Wait()

		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		if err := f.release(short); !errors.Is(err, conn.ErrNotSent) {
			t.Fatalf("a release behind a held renewal: %v; want not sent", err)
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrKeepAliveStopped) {
			t.Fatalf("after a release that gave up: %v", cause)
		}
		if again, err := f.kp.Start(ctx, f); again != ka || err != nil {
			t.Fatalf("Start while the last renewal runs: %p %v; want the stopping one", again, err)
		}
		released := make(chan error, 1)
		go func() { released <- f.release(ctx) }()
		synctest.Wait()
		select {
		case err := <-released:
			t.Fatalf("the release did not wait for the renewal in progress: %v", err)
		default:
		}
		resume()
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		if f.late != 0 {
			t.Fatalf("%d renewals ran with or after the delete", f.late)
		}
		if _, err := f.kp.Start(ctx, f); !errors.Is(err, ErrReleased) {
			t.Fatalf("Start after the release: %v", err)
		}
		if f.kp.Context(f).Err() == nil {
			t.Fatal("Context after the release has not ended")
		}

		// A loss found by another call ends the keep-alive at once.
		g := newFakeLease(lease)
		ka, err = g.kp.Start(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		g.mu.Lock()
		g.gone = true
		g.mu.Unlock()
		if ok, err := g.ResetExpiry(ctx, lease); ok || err != nil {
			t.Fatal(ok, err)
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrLeaseLost) {
			t.Fatalf("after a loss found elsewhere: %v", cause)
		}
		<-ka.Done()

		// Stop leaves the lease held; a keep-alive can start again.
		h := newFakeLease(lease)
		ka, err = h.kp.Start(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		ka.Stop()
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrKeepAliveStopped) {
			t.Fatalf("after Stop: %v", cause)
		}
		if work := h.kp.Context(h); work == ka.Context() || work.Err() != nil {
			t.Fatalf("Context after Stop: %v", context.Cause(work))
		}
		again, err := h.kp.Start(ctx, h)
		if err != nil || again == ka {
			t.Fatalf("Start after Stop: %p %v", again, err)
		}
		again.Stop()
	})
}

// A keep-alive asked for while a release is in flight (from Halt to Settle) never
// renews: Start returns the keep-alive the release halted, or one that never renews,
// and its context ends with the release's cause when the release settles. After a
// release that failed with the lease still held, a keep-alive starts again.
func TestKeeperStartDuringRelease(t *testing.T) {
	const lease = 10 * time.Second
	ctx := context.Background()
	synctest.Test(t, func(t *testing.T) {
		// No keep-alive runs when the release starts; one started during it would
		// renew at once (past half the lease) and its renewal, held, would land
		// after the delete.
		f := newFakeLease(lease)
		time.Sleep(lease/2 + time.Millisecond)
		resume := f.holdRenewals()
		defer resume()
		deleting := f.holdDelete()
		released := make(chan error, 1)
		go func() { released <- f.release(ctx) }()
		synctest.Wait() // halted, the delete held

		ka, err := f.kp.Start(ctx, f)
		if err != nil {
			t.Fatalf("Start during the release: %v", err)
		}
		if again, err := f.kp.Start(ctx, f); again != ka || err != nil {
			t.Fatalf("a second Start during the release: %p %v; want %p", again, err, ka)
		}
		synctest.Wait()
		close(deleting)
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrReleased) {
			t.Fatalf("the keep-alive's cause when the release returned: %v", cause)
		}
		resume()
		<-ka.Done()
		synctest.Wait()
		if f.late != 0 || len(f.renewals) != 0 || len(f.reported) != 0 {
			t.Fatalf("%d renewals after the delete, %d in all, reported %v; want none", f.late, len(f.renewals), f.reported)
		}

		// A keep-alive runs when the release starts: once Halt has stopped it, Start
		// returns it, not a fresh one, and it ends with the release's cause.
		g := newFakeLease(lease)
		running, err := g.kp.Start(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		deleting = g.holdDelete()
		go func() { released <- g.release(ctx) }()
		synctest.Wait()
		<-running.Done() // halted
		if again, err := g.kp.Start(ctx, g); again != running || err != nil {
			t.Fatalf("Start after Halt: %p %v; want the halted one %p", again, err, running)
		}
		close(deleting)
		if err := <-released; err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(running.Context()); !errors.Is(cause, ErrReleased) {
			t.Fatalf("the halted keep-alive's cause: %v", cause)
		}

		// A release that fails with the lease held: the keep-alive started during it
		// ends as a running one would (stopped, with the release's error), and one
		// started afterwards renews.
		h := newFakeLease(lease)
		deleting = h.holdDelete()
		h.failDelete = conn.ErrNotSent
		go func() { released <- h.release(ctx) }()
		synctest.Wait()
		during, err := h.kp.Start(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		close(deleting)
		if err := <-released; !errors.Is(err, conn.ErrNotSent) {
			t.Fatalf("the failed release: %v", err)
		}
		if cause := context.Cause(during.Context()); !errors.Is(cause, ErrKeepAliveStopped) || !errors.Is(cause, conn.ErrNotSent) {
			t.Fatalf("the keep-alive started during a failed release: %v", cause)
		}
		after, err := h.kp.Start(ctx, h)
		if err != nil || after == during {
			t.Fatalf("Start after the failed release: %p %v", after, err)
		}
		time.Sleep(lease/2 + time.Millisecond)
		synctest.Wait()
		if n := len(h.since(time.Time{})); n != 1 {
			t.Fatalf("%d renewals after the failed release; want 1", n)
		}
		after.Stop()
	})
}
