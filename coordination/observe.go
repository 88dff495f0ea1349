package coordination

import (
	"context"
	"time"

	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
)

// The leases of this package report the steps of their lives (observe.Lock) to their
// client's observer, as package lock's do: a fenced lock's renewals, losses and
// releases are its lock.Lock's own; its acquisition, and everything of the semaphores',
// read/write locks' and Redlocks' leases, which are not lock.Locks, are reported here
// at the equivalent points. Every helper checks for an observer before it reads the
// clock or builds an event.
//
// No event is sent with a handle's mutex held or inside its release turn: the state
// change is decided under them (so a loss is reported once, by the call that found the
// lease held) and reported after, as package lock does. An observer that calls back
// into the handle (reads its state, releases it) or is slow then neither deadlocks nor
// stalls the handle's other callers. Each call reports its events in the order they
// happened; the events of calls racing on one handle come in the order they are sent.

// began returns the start of an acquisition's Wait: now with an observer, else zero.
func began(obs observe.Observer) time.Time {
	if obs == nil {
		return time.Time{}
	}
	return time.Now()
}

// report sends an event of kind with err to obs, if there is one; since, when not
// zero, is where its Wait runs from.
func report(ctx context.Context, obs observe.Observer, kind observe.LockKind, since time.Time, err error) {
	if obs == nil {
		return
	}
	e := observe.Lock{Kind: kind, Err: err}
	if !since.IsZero() {
		e.Wait = time.Since(since)
	}
	obs.Lock(ctx, e)
}

// reportRelease reports how one release ended, acquiredAt being when the lease was
// taken; a release that failed (err) is observe.ReleaseFailed.
func reportRelease(ctx context.Context, obs observe.Observer, outcome lock.ReleaseOutcome, acquiredAt time.Time, err error) {
	if obs == nil {
		return
	}
	e := observe.Lock{Kind: observe.LockReleased, Err: err}
	switch {
	case err != nil:
		e.Release = observe.ReleaseFailed
	case outcome == lock.AlreadyReleased:
		e.Release = observe.AlreadyReleased
	case outcome == lock.NotOwned:
		e.Release = observe.NotOwned
	default:
		e.Release = observe.Released
	}
	if e.Release != observe.AlreadyReleased {
		e.Wait = time.Since(acquiredAt)
	}
	obs.Lock(ctx, e)
}
