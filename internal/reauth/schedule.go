package reauth

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
)

const (
	refreshLeadShare = 10                     // the lead before expiry is the life's tenth...
	refreshLeadMin   = time.Second            // ...and at least this
	refreshWaitMin   = 250 * time.Millisecond // a provider giving near-expired credentials is not asked in a spin
	retryFirst       = 250 * time.Millisecond
	retryMax         = 5 * time.Second
	providerTimeout  = 10 * time.Second
	// reauthWait is how long the schedule waits for the connections' AUTHs. One that
	// waits behind a blocking command or a transaction is not given up: it goes on in
	// the background and is not sent again meanwhile.
	reauthWait = 5 * time.Second
)

// refreshTime is when credentials fetched at fetched and ending at expires are due for
// renewal; zero for credentials that do not expire.
func refreshTime(fetched, expires time.Time) time.Time {
	if expires.IsZero() {
		return time.Time{}
	}
	life := expires.Sub(fetched)
	return expires.Add(-max(life/refreshLeadShare, refreshLeadMin))
}

// Start starts the goroutine that renews the credentials on their schedule; Close
// stops it.
func (r *Rotation) Start() {
	r.loop.Add(1)
	go r.run()
}

// Close stops the schedule and the re-authentications in progress, and waits for
// them; Rotate fails with Options.Closed from then on.
func (r *Rotation) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.loop.Wait()
	r.reauths.Wait()
}

// run renews the credentials when due, and re-authenticates the connections when a
// dial or Rotate brought new ones. After a provider failure it asks again with
// a backoff; after refusals it re-authenticates the refused connections (the stale
// ones) with a backoff, while the renewal stays due at its own time.
func (r *Rotation) run() {
	defer r.loop.Done()
	var retry time.Duration // the wait before the next attempt after a failure; 0 after a success
	askAgain := false       // the failure was the provider's: the retry asks it again
	for {
		var refresh, again <-chan time.Time
		var timers []*time.Timer
		if wait, ok := r.untilRefresh(); ok && !askAgain {
			t := time.NewTimer(wait)
			refresh, timers = t.C, append(timers, t)
		}
		if retry > 0 {
			t := time.NewTimer(retry)
			again, timers = t.C, append(timers, t)
		}
		ask, pass := false, true
		select {
		case <-r.ctx.Done():
			pass = false
		case <-r.wake:
			// The renewal is due: it comes within refreshWaitMin and re-authenticates
			// every connection with what it brings, so a pass now would only wait on
			// connections already in flight and hold it up.
			pass = !r.due()
		case <-r.late:
			// Refused, perhaps after its pass stopped waiting: retried in any case.
			pass = false
			retry = max(retry, retryFirst)
		case <-refresh:
			ask = true
		case <-again:
			select {
			case <-refresh: // due at the same time: the renewal goes first
				ask = true
			default:
				ask = askAgain
			}
		}
		for _, t := range timers {
			t.Stop()
		}
		if r.ctx.Err() != nil {
			return
		}
		if !pass {
			continue
		}
		var err error
		same := false // the provider gave back the credentials already due
		if ask {
			err = r.fetch(r.ctx, false)
			same = err == nil && r.due()
		}
		if err == nil {
			// The renewal is not held up: the pass ends when it is due, and sooner when
			// new credentials come meanwhile (ask ends it, under the same lock as the
			// deadline is read here, and wakes the schedule for a pass of their own).
			r.mu.Lock()
			wait := reauthWait
			if due, ok := r.untilRefreshLocked(); ok {
				wait = min(wait, due)
			}
			ctx, cancel := context.WithTimeout(r.ctx, wait)
			r.passEnd = cancel
			r.mu.Unlock()
			_, _, err = r.reauthAll(ctx)
			r.mu.Lock()
			r.passEnd = nil
			r.mu.Unlock()
			cancel()
		}
		switch {
		case r.ctx.Err() != nil:
			retry, askAgain = 0, false
		case same:
			// A provider that caches its token hands out the same one until close to
			// its end: asked again with the backoff, not at every refreshWaitMin.
			// Never past the token's end, though: halfway to it at most.
			askAgain = true
			retry = min(max(2*retry, retryFirst), retryMax, max(r.untilExpiry()/2, refreshWaitMin))
		case err == nil:
			retry, askAgain = 0, false
		default:
			askAgain = errors.Is(err, conn.ErrCredentials)
			retry = min(max(2*retry, retryFirst), retryMax)
		}
	}
}

// untilExpiry is the time left before the newest credentials end (negative once they
// have; large for credentials that do not expire).
func (r *Rotation) untilExpiry() time.Duration {
	r.mu.Lock()
	end := r.cur.ExpiresAt
	r.mu.Unlock()
	if end.IsZero() {
		return retryMax * 2
	}
	return time.Until(end)
}

// due reports whether the newest credentials are due for renewal now.
func (r *Rotation) due() bool {
	r.mu.Lock()
	at := r.refreshAt
	r.mu.Unlock()
	return !at.IsZero() && !time.Now().Before(at)
}

// untilRefresh is the wait until the newest credentials are due for renewal, and
// false when they never are.
func (r *Rotation) untilRefresh() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.untilRefreshLocked()
}

// untilRefreshLocked is untilRefresh with r.mu held.
func (r *Rotation) untilRefreshLocked() (time.Duration, bool) {
	if r.refreshAt.IsZero() {
		return 0, false
	}
	return max(time.Until(r.refreshAt), refreshWaitMin), true
}

// signal sends a token on a channel of capacity one without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
