package lock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// handoffs wakes a Locker's waiting acquisitions of a key when one of the Locker's own
// locks of that key is released, instead of leaving them to their retry pause: the
// releasing goroutine knows the key has just become free, which a waiter that polls
// learns only at its next try, up to a whole pause later. Goroutines of one process
// that take turns on one key (a worker pool on a shared resource) then hand it on in
// about a round trip. Only waiters that poll are woken this way; a waiter that sleeps
// on the key's tracking invalidation is woken by it.
//
// One waiter is woken per release, the longest waiting first: the others would only
// find the key taken again. A wake-up is a hint, never a grant: the woken waiter tries
// the key like any other try, and another process may have taken it first.
//
// A waiter stays registered from its first pause until its wait ends, through its
// tries, so that a release while its try is in flight leaves the wake-up waiting for
// its next pause. Before its first pause it is not registered yet: a release during
// the acquisition's first try is seen by the count of releases it read before that
// try, and the first pause then does not sleep.
type handoffs struct {
	releases atomic.Uint64 // every release through the Locker, of any key
	mu       sync.Mutex
	waiting  map[string][]chan struct{} // by key, oldest first; a key without waiters is absent
}

// count returns how many releases there have been, for a waiter to compare at its
// first pause with what it read before its first try.
func (h *handoffs) count() uint64 {
	if h == nil {
		return 0
	}
	return h.releases.Load()
}

// enter registers ch (buffered, empty) as a waiter of key.
func (h *handoffs) enter(key string, ch chan struct{}) {
	h.mu.Lock()
	if h.waiting == nil {
		h.waiting = make(map[string][]chan struct{})
	}
	h.waiting[key] = append(h.waiting[key], ch)
	h.mu.Unlock()
}

// leave removes ch from key's waiters, and reports whether it was still there: false
// means a release took it off and a wake-up is in ch (or on its way into it).
func (h *handoffs) leave(key string, ch chan struct{}) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.waiting[key]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			if len(ws) == 0 {
				delete(h.waiting, key)
			} else {
				h.waiting[key] = ws
			}
			return true
		}
	}
	return false
}

// released counts a release of key and wakes its longest waiting waiter, if any.
func (h *handoffs) released(key string) {
	h.releases.Add(1)
	h.wake(key)
}

// wake hands a wake-up to key's longest waiting waiter, if there is one.
func (h *handoffs) wake(key string) {
	h.mu.Lock()
	ws := h.waiting[key]
	if len(ws) == 0 {
		h.mu.Unlock()
		return
	}
	ch := ws[0]
	ws[0] = nil
	if len(ws) == 1 {
		delete(h.waiting, key)
	} else {
		h.waiting[key] = ws[1:]
	}
	h.mu.Unlock()
	ch <- struct{}{} // buffered, and taken off the list: nobody else sends to it
}

// waiters returns the number of waiters of key, for tests.
func (h *handoffs) waiters(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiting[key])
}

// handoffKey is the key a waiting acquisition may be handed, and whose hand-offs it
// waits on, with the count of releases read before its first try; the zero value
// waits on none.
type handoffKey struct {
	h    *handoffs
	key  string
	seen uint64
}

// handoffWait is one waiting acquisition's registration with its Locker's handoffs.
type handoffWait struct {
	handoffKey
	ch      chan struct{} // its wake-ups; made at its first pause
	entered bool
}

// pause sleeps for d, or until a release of the key wakes it, or until ctx ends.
func (w *handoffWait) pause(ctx context.Context, d time.Duration) error {
	if !w.entered {
		w.ch = make(chan struct{}, 1)
		w.h.enter(w.key, w.ch)
		w.entered = true
		if w.h.count() != w.seen {
			// A release came while the first try was in flight, before this waiter
			// was registered: it may have been this key's, so try again at once.
			return nil
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ch:
		// Registered again at once, so that a release during the try that follows
		// leaves its wake-up for the next pause.
		w.h.enter(w.key, w.ch)
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// leave ends the registration when the wait ends. A wake-up it was handed and can no
// longer use goes to the next waiter: a waiter that gives up must not swallow the
// release it was woken for (one that acquired passes on at most a needless try).
func (w *handoffWait) leave() {
	if !w.entered {
		return
	}
	w.entered = false
	if !w.h.leave(w.key, w.ch) {
		<-w.ch // a release took it off the list: its wake-up is sent, or about to be
		w.h.wake(w.key)
	}
}
