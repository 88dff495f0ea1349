package coordination

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
)

var (
	//go:embed scripts/acquire_fenced.lua
	acquireFencedSource string
	acquireFencedScript = respire.NewScript(acquireFencedSource)
)

// giveBackTimeout bounds the delete of a fenced lease whose acquisition came back too
// late.
const giveBackTimeout = 5 * time.Second

// notSentRetry spaces a fenced wait's tries that were never sent (a reset connection,
// a dial refused): short at first, as a reconnect is often quick, and no more than a
// tenth of a second apart, with jitter so the waiters of a client spread out.
var notSentRetry = lock.ExponentialRetry(time.Millisecond, 100*time.Millisecond)

// FencedLock is a held lease with a fencing token: a number the fence counter gave this
// acquisition, above every token given before, which the protected resource checks on
// every write (see Resource). Renewal, keep-alive and release are package lock's, with
// its fencing of uncertain commands. It is safe for concurrent use.
type FencedLock struct {
	lease *lock.Lock
	fence string
	token int64
}

// TryAcquireFencedLock takes the lease at leaseKey for ttl with a fresh owner token and,
// in the same script, advances the counter at fenceKey; the counter's new value is the
// lock's FencingToken. ok is false, and nothing changes, when another owner holds the
// lease. ok is false too when the reply came too late for the lease to be of use (the
// lease would be Expired on arrival, as lock.Lock's Expired says): the lease is then
// released on a best-effort basis, and the counter has advanced.
//
// Options are package lock's. lock.WithWait(d) makes it a bounded wait (DistributedLock's
// TryAcquireAsync(timeout)): it tries again while another owner holds the lease until d
// has passed, and ok is false, with a nil error, when the budget ends with the lease
// still held; the caller's own cancellation is an error (ctx's cause), never "not
// acquired"; a zero budget is one immediate attempt and a negative one is refused
// (lock.ErrInvalidArg). The budget never interrupts a try: a try whose outcome is
// unknown ends the wait with its error, since it may have taken the lease. Between
// tries the wait sleeps until the server reports a change of the lease key where the
// client tracks keys (RESP3 with Options.ClientSideCache), and otherwise polls with the
// retry strategy (lock.WithRetry, lock.WithRetryEvery, lock.WithMaxAttempts).
// lock.WithKeepAlive starts the lock's keep-alive once it is acquired (see KeepAlive);
// without it acquiring does not start renewal: call KeepAlive or ResetExpiry.
//
// Both keys must hash to one Cluster slot once the client's key prefix is applied
// (give them one {hash tag}), on every deployment; a pair that does not is refused
// before anything is sent (ErrCrossSlot). The counter is never expired, reset or
// deleted by this package; nothing else may do so either (see the package doc).
//
// Cancellation interrupts the reply wait; it cannot recall a script already written,
// so a cancelled acquisition (its error matches conn.ErrOutcomeUnknown) may have taken
// the lease, which then stays until ttl ends, and advanced the counter.
func (co *Coordinator) TryAcquireFencedLock(ctx context.Context, leaseKey, fenceKey string, ttl time.Duration, opts ...lock.Option) (*FencedLock, bool, error) {
	ms, err := co.checkFenced(leaseKey, fenceKey, ttl)
	if err != nil {
		return nil, false, err
	}
	w, err := lock.NewWaiting(opts...)
	if err != nil {
		return nil, false, err
	}
	start := began(co.obs)
	var fl *FencedLock
	var late bool
	_, err = co.locks.Wait(ctx, w, leaseKey, func(ctx context.Context) (bool, time.Duration, error) {
		fl, late, err = co.tryAcquire(ctx, leaseKey, fenceKey, ttl, ms, start)
		return fl != nil, 0, err
	})
	switch {
	case fl != nil:
		report(ctx, co.obs, observe.LockAcquired, start, nil)
		if w.KeepAlive() {
			// The acquisition's context does not bound the keep-alive: Stop, Release
			// or Close do, as for lock.WithKeepAlive. It fails only for a lease found
			// lost already, whose KeepAliveContext has ended with the cause.
			_, _ = fl.KeepAlive(context.WithoutCancel(ctx))
		}
	case err != nil:
		report(ctx, co.obs, observe.LockGaveUp, start, err)
	case late:
		report(ctx, co.obs, observe.LockGaveUp, start, lock.ErrLeaseExpired)
	}
	return fl, fl != nil, err
}

func (co *Coordinator) checkFenced(leaseKey, fenceKey string, ttl time.Duration) (int64, error) {
	if err := co.check(); err != nil {
		return 0, err
	}
	ms, err := checkTTL(ttl)
	if err != nil {
		return 0, err
	}
	return ms, co.checkPair("lease", leaseKey, "fence", fenceKey)
}

// tryAcquire is one try of a fenced acquisition that began at began (for the events'
// Wait). It returns the lock; or late when the reply came too late and the lease was
// given back; or nil, false and nil when another owner holds the lease.
func (co *Coordinator) tryAcquire(ctx context.Context, leaseKey, fenceKey string, ttl time.Duration, ms int64, began time.Time) (fl *FencedLock, late bool, err error) {
	report(ctx, co.obs, observe.LockAttempt, time.Time{}, nil)
	owner := lock.NewToken()
	start := time.Now()
	ownerText, _ := owner.Text() // a new token is hexadecimal text: its own bytes, not a copy
	v, err := acquireFencedScript.Run(ctx, co.c, []string{leaseKey, fenceKey}, ownerText, ms)
	if err != nil {
		return nil, false, err
	}
	if v.IsNull() {
		report(ctx, co.obs, observe.LockContended, began, nil)
		return nil, false, nil
	}
	n, err := v.Int()
	if err != nil {
		// The lease is held now, without a usable token; the TTL frees it.
		return nil, false, fmt.Errorf("coordination: fenced acquisition answered %v: %w", v, err)
	}
	lease, err := co.locks.Adopt(leaseKey, owner, ttl, start)
	if err != nil {
		return nil, false, err
	}
	if lease.Expired() {
		// Slow replies ate the TTL: a lease with no time left for work is given back
		// rather than left for its TTL, by the raw compare-and-delete, which is never
		// fenced (a fence would fail other locks' commands), within the lease, after
		// which the key is gone anyway. The counter has advanced, which only skips a
		// token.
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(ttl, giveBackTimeout))
		defer cancel()
		co.locks.Release(gctx, leaseKey, owner) // what it cannot reach ends with its TTL
		return nil, true, nil
	}
	return &FencedLock{lease: lease, fence: fenceKey, token: n}, false, nil
}

// AcquireFencedLock is TryAcquireFencedLock that waits while another owner holds the
// lease, until it acquires or ctx ends. It does not poll: between tries it waits for
// the server's tracking invalidation of the lease key (a release, an expiry, an
// eviction, an overwrite), with a timer at the lease's remaining TTL in case the push
// is lost, and tracks the key again after every wake (the server forgets a key it has
// invalidated). It needs a client with RESP3 and Options.ClientSideCache and returns
// an error matching ErrNoTracking otherwise, before sending anything.
//
// A try, or a watch, that was never sent (its error matches conn.ErrNotSent: the
// connection was reset, a dial failed) changed nothing, so the wait goes on after a
// short pause that grows with each such failure in a row; an error whose outcome is
// unknown ends the wait, since that try may have taken the lease.
//
// For a bounded wait, give ctx a deadline. Cancellation returns promptly, but an
// attempt already written may have taken the lease and advanced the counter without
// returning the lock: never take cancellation as proof that nothing was acquired.
func (co *Coordinator) AcquireFencedLock(ctx context.Context, leaseKey, fenceKey string, ttl time.Duration) (*FencedLock, error) {
	ms, err := co.checkFenced(leaseKey, fenceKey, ttl)
	if err != nil {
		return nil, err
	}
	if !co.ln.CanWatchKeys {
		return nil, ErrNoTracking
	}
	// Watches are armed in turn: one change of the lease wakes one waiter of this
	// client, which either looks again (arming the next watch tracks the key for all)
	// or, stopping its watch when it acquires or gives up, wakes the next.
	var w link.KeyWatch
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	unsent := 0 // tries and watches in a row that were never sent
	start := began(co.obs)
	for {
		fl, err := co.tryOrWatch(ctx, leaseKey, fenceKey, ttl, ms, start, &w)
		switch {
		case fl != nil:
			report(ctx, co.obs, observe.LockAcquired, start, nil)
			return fl, nil
		case err == nil:
			unsent = 0
			continue
		case ctx.Err() != nil || !errors.Is(err, conn.ErrNotSent):
			report(ctx, co.obs, observe.LockGaveUp, start, err)
			return nil, err
		}
		// Not watching while paused: another waiter of this client takes the turn.
		if w != nil {
			w.Stop()
			w = nil
		}
		unsent++
		if err := notSentRetry.Pause(ctx, unsent); err != nil {
			report(ctx, co.obs, observe.LockGaveUp, start, err)
			return nil, err
		}
	}
}

// tryOrWatch makes one try and, when another owner holds the lease, arms the next
// watch in *w (the previous one is retired) and waits for it. It returns the lock, or
// nil and nil when it is time to try again.
func (co *Coordinator) tryOrWatch(ctx context.Context, leaseKey, fenceKey string, ttl time.Duration, ms int64, began time.Time, w *link.KeyWatch) (*FencedLock, error) {
	fl, _, err := co.tryAcquire(ctx, leaseKey, fenceKey, ttl, ms, began)
	if err != nil || fl != nil {
		return fl, err
	}
	// Armed after the failed try: a release in between shows as a missing key, one
	// after it as an invalidation.
	next, err := co.ln.WatchInTurn(ctx, leaseKey, *w)
	if err != nil {
		if errors.Is(err, respire.ErrNoTracking) || errors.Is(err, respire.ErrNoCache) {
			return nil, fmt.Errorf("%w: %w", ErrNoTracking, err)
		}
		return nil, err
	}
	*w = next
	return nil, next.Wait(ctx, 0)
}

// LeaseKey returns the lease key as given, without the client's key prefix.
func (fl *FencedLock) LeaseKey() string { return fl.lease.Key() }

// FenceKey returns the fence counter's key as given, without the client's key prefix.
func (fl *FencedLock) FenceKey() string { return fl.fence }

// FencingToken returns the counter's value this acquisition produced: strictly above
// the token of every earlier acquisition with the same fence key, for as long as the
// counter's history survives (see the package doc). Present it with every protected
// write; the resource must refuse a token below the highest it has accepted.
func (fl *FencedLock) FencingToken() int64 { return fl.token }

// Token returns the owner token stored in the lease key.
func (fl *FencedLock) Token() lock.Token { return fl.lease.Token() }

// Duration returns the TTL the lease was acquired with.
func (fl *FencedLock) Duration() time.Duration { return fl.lease.Duration() }

// ExpiresAtEstimate returns when the lease ends if nothing renews it: a local estimate,
// not an ownership check (use VerifyStillHeld).
func (fl *FencedLock) ExpiresAtEstimate() time.Time { return fl.lease.ExpiresAtEstimate() }

// RemainingEstimate returns the time left until ExpiresAtEstimate, or 0.
func (fl *FencedLock) RemainingEstimate() time.Duration { return fl.lease.RemainingEstimate() }

// VerifyStillHeld asks the server whether the lease key still holds this lock's owner
// token. It checks one instant only: the lease can end just after.
func (fl *FencedLock) VerifyStillHeld(ctx context.Context) (bool, error) {
	return fl.lease.VerifyStillHeld(ctx)
}

// ResetExpiry sets the lease to d from now if it is still held, as lock.Lock's does,
// cutting off the connection of a renewal whose outcome is uncertain. It returns false
// after expiry, release or loss: stop protected writes then.
func (fl *FencedLock) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	return fl.lease.ResetExpiry(ctx, d)
}

// KeepAlive starts renewing the lease at half its duration, as lock.Lock's KeepAlive
// does. Its Context ends when a renewal fails, finds the lease lost or is uncertain
// (context.Cause says which: lock.ErrLeaseLost, lock.ErrOwnershipUncertain, ...): pass
// it to the protected work and stop writing when it ends.
func (fl *FencedLock) KeepAlive(ctx context.Context) (*lock.KeepAlive, error) {
	return fl.lease.KeepAlive(ctx)
}

// KeepAliveContext returns a context for the protected work: the keep-alive's when one
// runs, otherwise one that ends shortly before the expiry estimate; either ends when
// the handle learns the lease is lost or released.
func (fl *FencedLock) KeepAliveContext() context.Context { return fl.lease.KeepAliveContext() }

// Release deletes the lease if it still holds this lock's owner token, after stopping
// any keep-alive, as lock.Lock's Release does (concurrent calls share one release).
// The fence counter stays: it must never go back.
func (fl *FencedLock) Release(ctx context.Context) (lock.ReleaseOutcome, error) {
	return fl.lease.Release(ctx)
}

// Close releases the lease on a best-effort basis, as a deferred call should, and
// suppresses the failures that expiry makes harmless. It is a no-op on a nil handle,
// so it can be deferred before checking ok.
func (fl *FencedLock) Close() error {
	if fl == nil {
		return nil
	}
	return fl.lease.Close()
}
