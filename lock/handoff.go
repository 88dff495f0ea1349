package lock

import (
	"context"
	"sync"
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
type handoffs struct {
	mu      sync.Mutex
	waiting map[string][]chan struct{} // by key, oldest first; a key without waiters is absent
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

// released wakes the longest waiting waiter of key, if there is one.
func (h *handoffs) released(key string) {
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
// waits on; the zero value waits on none.
type handoffKey struct {
	h   *handoffs
	key string
}

// sleep is lock's sleep that also ends when a lock of the key is released here. A
// wake-up that comes as the sleep ends otherwise is not lost: after the pause the
// waiter tries anyway, and one whose ctx ended passes it on to the next waiter.
func (k handoffKey) sleep(ctx context.Context, d time.Duration, ch chan struct{}) error {
	k.h.enter(k.key, ch)
	t := time.NewTimer(d)
	defer t.Stop()
	var err error
	select {
	case <-ch:
		return nil
	case <-t.C:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if !k.h.leave(k.key, ch) {
		<-ch // a release took it off the list: its wake-up is sent, or about to be
		if err != nil {
			k.h.released(k.key) // this waiter gives up: the next one has the turn
		}
	}
	return err
}
