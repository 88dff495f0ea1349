package lock

import (
	"context"
	"time"

	"github.com/respire/respire/observe"
)

// The events of a lock's life go to the client's observer (respire.Options.Observer).
// Every helper here checks for one before it reads the clock or builds an event, so a
// Locker without observer pays nothing; the times they take (an acquisition's start)
// are zero then.

// report sends an event of kind with err; since, when not zero, is where its Wait runs
// from.
func (l *Locker) report(ctx context.Context, kind observe.LockKind, since time.Time, err error) {
	if l.obs == nil {
		return
	}
	e := observe.Lock{Kind: kind, Err: err}
	if !since.IsZero() {
		e.Wait = time.Since(since)
	}
	l.obs.Lock(ctx, e)
}

// began returns the start of an acquisition's Wait: now with an observer, else zero.
func (l *Locker) began() time.Time {
	if l.obs == nil {
		return time.Time{}
	}
	return time.Now()
}

// reportGaveUp reports an acquisition that ended without the lock: with its error, or
// with why a try that reached the server did not take it. A single try of TryAcquire
// that found another owner has said so with LockContended: that is no giving up.
func (l *Locker) reportGaveUp(ctx context.Context, began time.Time, last *Lock, err error, waited bool) {
	if l.obs == nil {
		return
	}
	switch {
	case err != nil:
	case last.lost() != nil:
		err = ErrLeaseExpired // the last try took the key too late and gave it back
	case waited:
		err = ErrNotAcquired
	default:
		return
	}
	l.report(ctx, observe.LockGaveUp, began, err)
}

// reportLost reports, once per handle, that the lock is lost or presumed lost with
// cause, the cause its KeepAliveContext ends with.
func (m *Lock) reportLost(ctx context.Context, cause error) {
	if m.l.obs == nil {
		return
	}
	m.mu.Lock()
	first, since := !m.lostReported, m.acquiredAtLocked()
	m.lostReported = true
	m.mu.Unlock()
	if first {
		m.l.report(ctx, observe.LockLost, since, cause)
	}
}

// acquiredAtLocked is when the acquisition that took the lock was sent; m.mu is held.
// It is kept as the renewals' total rather than as a time, which would make every lock
// handle a size class larger.
func (m *Lock) acquiredAtLocked() time.Time { return m.expiresAt.Add(-m.ttl - m.renewedBy) }

// reportRelease reports how one Release call ended; a release that failed (err) is
// observe.ReleaseFailed whatever became of the lock.
func (m *Lock) reportRelease(ctx context.Context, outcome ReleaseOutcome, err error) {
	if m.l.obs == nil {
		return
	}
	e := observe.Lock{Kind: observe.LockReleased, Err: err}
	switch {
	case err != nil:
		e.Release = observe.ReleaseFailed
	case outcome == AlreadyReleased:
		e.Release = observe.AlreadyReleased // held time was reported by the first release
	case outcome == NotOwned:
		e.Release = observe.NotOwned
	default:
		e.Release = observe.Released
	}
	if e.Release != observe.AlreadyReleased {
		m.mu.Lock()
		e.Wait = time.Since(m.acquiredAtLocked())
		m.mu.Unlock()
	}
	m.l.obs.Lock(ctx, e)
}

// reportSever reports a CLIENT KILL of connection id on addr that was attempted; err
// is nil when the connection is known dead.
func (l *Locker) reportSever(addr string, id int64, err error) {
	if l.cutoffs != nil {
		l.cutoffs.Cutoff(observe.Cutoff{Addr: addr, ClientID: id, Err: err})
	}
}
