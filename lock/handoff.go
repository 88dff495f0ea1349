package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/observe"
)

// handoffs passes the key of a lock released through a Locker to one of the same
// Locker's waiting acquisitions of that key, instead of leaving them to their retry
// pause: the releasing goroutine knows the key is about to become free, which a
// waiter that polls learns only at its next try, up to a whole pause later.
// Goroutines of one process that take turns on one key (a worker pool on a shared
// resource) then hand it on in one round trip.
//
// A waiter sleeping in its pause offers the handle of its next try (its fresh token
// and its TTL). A release that finds one passes the key to it in one command instead
// of deleting it (Locker.pass: compare the releasing token, set the waiter's with the
// waiter's TTL), so the waiter holds the lock when the release's reply comes, and
// never sends a SET NX of its own. A release that finds no sleeping waiter deletes
// the key, and wakes the longest waiting waiter in its try, if there is one: that
// wake-up is a hint, never a grant; the woken waiter tries the key like any other
// try, and another process may have taken it first. With no local waiter the key is
// deleted, for other processes to take.
//
// One waiter is taken per release, the longest waiting first: the others would only
// find the key taken again. Only waiters that poll are listed; a waiter that sleeps on
// the key's tracking invalidation is woken by it.
//
// A waiter stays listed from its first pause until its wait ends, through its tries,
// so that a release while its try is in flight leaves the wake-up waiting for its next
// pause. Before its first pause it is not listed yet: a release during the
// acquisition's first try is seen by the count of releases it read before that try,
// and the first pause then does not sleep.
//
// A release that took a waiter tells it what became of the key (a handoffOutcome in
// its channel). A waiter whose wait ends while a release passes it the key leaves the
// outcome to that release, which then gives back what it passed (see disown): so a
// key passed to a waiter that gave up is never left held by nobody until its TTL.
type handoffs struct {
	releases atomic.Uint64 // every release through the Locker that deleted its key
	listed   atomic.Int64  // waiters listed, of every key: a release without any takes no lock
	mu       sync.Mutex
	waiting  map[string][]*handoffWaiter // by key, oldest first; a key without waiters is absent
}

// handoffOutcome is what a release that took a waiter off the list tells it.
type handoffOutcome uint8

const (
	// handoffWoken: the key was deleted (or could not be passed): try it now.
	handoffWoken handoffOutcome = iota + 1
	// handoffPassed: the key holds the offered handle's token; the handle's expiry
	// estimate is set.
	handoffPassed
	// handoffUncertain: the pass may have run, its reply never came: the offered
	// token may hold the key, and must be given back before the wait goes on.
	handoffUncertain
	// handoffSpent: the pass may have run, and the release queued a give-back of the
	// offered token behind it on its connection (Lock.spend): the token must never be
	// used again, and there is nothing left to give back.
	handoffSpent
)

// handoffWaiter is one waiting acquisition as its Locker's handoffs list it.
type handoffWaiter struct {
	outcome chan handoffOutcome // buffered: one outcome per time off the list

	// Guarded by handoffs.mu.
	listed    bool
	offer     *Lock // while the waiter sleeps in a pause: the handle a release may pass the key to
	ms        int64 // offer's TTL in milliseconds
	abandoned bool  // its wait ended while a release passed it the key: that release disowns it
}

func newHandoffWaiter() *handoffWaiter {
	return &handoffWaiter{outcome: make(chan handoffOutcome, 1)}
}

// count returns how many releases there have been, for a waiter to compare at its
// first pause with what it read before its first try.
func (h *handoffs) count() uint64 {
	if h == nil {
		return 0
	}
	return h.releases.Load()
}

// enter lists w (off the list, its channel empty) as a waiter of key.
func (h *handoffs) enter(key string, w *handoffWaiter) {
	h.mu.Lock()
	h.enterLocked(key, w)
	h.mu.Unlock()
}

func (h *handoffs) enterLocked(key string, w *handoffWaiter) {
	if h.waiting == nil {
		h.waiting = make(map[string][]*handoffWaiter)
	}
	h.waiting[key] = append(h.waiting[key], w)
	w.listed = true
	h.listed.Add(1)
}

// leave takes w off key's list, and reports whether it was still there: false means a
// release took it off and an outcome is in its channel (or on its way into it), unless
// it was abandoned.
func (h *handoffs) leave(key string, w *handoffWaiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !w.listed {
		return false
	}
	h.unlistLocked(key, w)
	return true
}

// unlistLocked takes the listed w off key's list.
func (h *handoffs) unlistLocked(key string, w *handoffWaiter) {
	ws := h.waiting[key]
	for i, x := range ws {
		if x == w {
			copy(ws[i:], ws[i+1:])
			ws[len(ws)-1] = nil
			ws = ws[:len(ws)-1]
			break
		}
	}
	if len(ws) == 0 {
		delete(h.waiting, key)
	} else {
		h.waiting[key] = ws
	}
	w.listed, w.offer = false, nil
	h.listed.Add(-1)
}

// released counts a release that deleted key and wakes its longest waiting waiter, if
// any.
func (h *handoffs) released(key string) {
	h.releases.Add(1)
	h.wake(key)
}

// wake tells key's longest waiting waiter, if there is one, to try the key now.
func (h *handoffs) wake(key string) {
	if h.listed.Load() == 0 {
		return
	}
	h.mu.Lock()
	ws := h.waiting[key]
	if len(ws) == 0 {
		h.mu.Unlock()
		return
	}
	w := ws[0]
	h.unlistLocked(key, w)
	h.mu.Unlock()
	w.outcome <- handoffWoken // buffered, and taken off the list: nobody else sends to it
}

// take takes key's longest waiting waiter that sleeps in a pause off the list, for a
// release to pass the key to its offer; nil when none sleeps (or h is nil). The
// release must then tell it the outcome (handoffs.tell).
func (h *handoffs) take(key string) *handoffWaiter {
	if h == nil || h.listed.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range h.waiting[key] {
		if w.offer != nil {
			offer := w.offer
			h.unlistLocked(key, w)
			w.offer = offer // kept for the release: the waiter reads it only once told
			return w
		}
	}
	return nil
}

// tell gives w, taken off key's list by take, the outcome of the release that took it.
// It reports false, telling nothing, when w's wait ended meanwhile: the outcome is
// the caller's to deal with then.
func (h *handoffs) tell(w *handoffWaiter, o handoffOutcome) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.abandoned {
		return false
	}
	// Sent under the lock, so that a waiter giving up sees either the outcome in its
	// channel or none coming. Buffered, and taken off the list: it cannot block.
	w.outcome <- o
	return true
}

// waiters returns the number of waiters of key, for tests.
func (h *handoffs) waiters(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting[key])
}

// sleepers returns the number of waiters of key sleeping in a pause with an offer, for
// tests.
func (h *handoffs) sleepers(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, w := range h.waiting[key] {
		if w.offer != nil {
			n++
		}
	}
	return n
}

// handoffKey is the key a waiting acquisition may be handed, and whose hand-offs it
// waits on, with the count of releases read before its first try; the zero value
// waits on none. offer, when not nil, points to the handle its next try would send,
// whose key a release may pass to it while it sleeps, with the TTL ms of its
// acquisition.
type handoffKey struct {
	h     *handoffs
	key   string
	seen  uint64
	offer **Lock
	ms    int64
}

// handoffWait is one waiting acquisition's registration with its Locker's handoffs.
type handoffWait struct {
	handoffKey
	w       *handoffWaiter // made at its first pause
	entered bool
}

// pause sleeps for d, or until a release of the key wakes it or passes it the key, or
// until ctx ends. passed says the key was passed to *w.offer, which now holds it. A
// release that took the waiter as d ran out is waited for until giveUp, the end of the
// wait budget, at the latest: spent then says the wait ends there, its offer left to
// the release as when ctx ends.
func (w *handoffWait) pause(ctx context.Context, d time.Duration, giveUp time.Time) (passed, spent bool, err error) {
	if !w.entered {
		w.w = newHandoffWaiter()
		w.h.enter(w.key, w.w)
		w.entered = true
		if w.h.count() != w.seen {
			// A release came while the first try was in flight, before this waiter
			// was listed: it may have been this key's, so try again at once.
			return false, false, nil
		}
	}
	w.park(w.offered())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case o := <-w.w.outcome:
		passed, err = w.told(ctx, o)
		return passed, false, err
	case <-t.C:
		if w.unpark() {
			return false, false, nil
		}
		// A release took it off the list as the timer fired: what it did comes in a
		// round trip at most, and may be the key; but a stalled server must not hold
		// the wait past its budget.
		t.Reset(time.Until(giveUp))
		select {
		case o := <-w.w.outcome:
			passed, err = w.told(ctx, o)
			return passed, false, err
		case <-t.C:
			w.abandon(ctx)
			return false, true, nil
		case <-ctx.Done():
			return false, false, w.abandon(ctx)
		}
	case <-ctx.Done():
		return false, false, w.abandon(ctx)
	}
}

// offered returns the handle a release may pass the key to during the next pause, or
// nil: one whose last try came back too late is spent (its token may be in a delete
// in flight), and the try after the pause makes a fresh one.
func (w *handoffWait) offered() *Lock {
	if w.offer == nil || *w.offer == nil || (*w.offer).lost() != nil {
		return nil
	}
	return *w.offer
}

// park offers m while the pause sleeps, if the waiter is still listed (a release
// during its try may have woken it already).
func (w *handoffWait) park(m *Lock) {
	if m == nil {
		return
	}
	w.h.mu.Lock()
	if w.w.listed {
		w.w.offer, w.w.ms = m, w.ms
	}
	w.h.mu.Unlock()
}

// unpark withdraws the offer as the pause ends without an outcome, and reports whether
// the waiter is still listed: false when a release took it, whose outcome comes in
// its channel.
func (w *handoffWait) unpark() bool {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	if !w.w.listed {
		return false
	}
	w.w.offer = nil
	return true
}

// told acts on the outcome o of a release that took the waiter off the list: listed
// again at once when the wait goes on, so that a release during the try that follows
// leaves its wake-up for the next pause.
func (w *handoffWait) told(ctx context.Context, o handoffOutcome) (passed bool, err error) {
	m := w.w.offer
	w.w.offer = nil // the release is done with it
	switch o {
	case handoffPassed:
		w.entered = false // off the list for good: the wait is over
		m.l.report(ctx, observe.LockAttempt, time.Time{}, nil)
		if m.Expired() {
			// Passed too late to be of use, as a try whose reply comes too late.
			m.giveBack(ctx)
			break
		}
		return true, nil
	case handoffUncertain:
		m.giveBack(ctx)
	case handoffSpent:
		m.lose(ErrLeaseExpired) // the next try makes a fresh handle
	}
	w.h.enter(w.key, w.w)
	w.entered = true
	return false, nil
}

// abandon ends the pause of a waiter whose ctx ended or whose budget ran out, and
// returns ctx's cause. A release that passes the key to the waiter meanwhile is left
// to give it back: the waiter will not learn of it.
func (w *handoffWait) abandon(ctx context.Context) error {
	w.h.mu.Lock()
	switch {
	case w.w.listed:
		w.w.offer = nil
	case w.w.offer != nil && len(w.w.outcome) == 0:
		// Taken by a release that has not told it yet: its outcome is the release's.
		w.w.abandoned = true
		w.entered = false
	}
	w.h.mu.Unlock()
	return context.Cause(ctx)
}

// leave ends the registration when the wait ends. An outcome it was handed and can no
// longer use is dealt with here: a wake-up goes to the next waiter (a waiter that
// gives up must not swallow the release it was woken for; one that acquired passes on
// at most a needless try), a key passed to it is given back.
func (w *handoffWait) leave() {
	if !w.entered {
		return
	}
	w.entered = false
	if w.h.leave(w.key, w.w) {
		return
	}
	o := <-w.w.outcome // a release took it off the list: its outcome is sent, or about to be
	switch o {
	case handoffWoken:
		w.h.wake(w.key)
	case handoffSpent:
		w.w.offer.lose(ErrLeaseExpired)
		w.h.released(w.key)
	default:
		w.w.offer.disown(context.Background(), time.Time{})
	}
}

// disown gives back the lock a release passed to a waiter that gave up, or whose
// passing has an unknown outcome, and wakes the next waiter of its key: nobody holds
// its handle, and the key must not stay taken until its TTL. The give-back runs
// within the release that passed the key, and so ends by that release's by (zero:
// none) and its ctx, as long as ctx is live: one that ended (a pass of unknown
// outcome) bounds nothing, and the give-back takes what giveBack allows.
func (m *Lock) disown(ctx context.Context, by time.Time) {
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	if !by.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, by)
		defer cancel()
	}
	m.giveBackWithin(ctx)
	if m.l.handoff != nil {
		m.l.handoff.released(m.key)
	}
}
