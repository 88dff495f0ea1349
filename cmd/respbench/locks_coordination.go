package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

// Respire's waits that sleep on the key's tracking invalidation instead of polling:
// package lock's WithWait on a client with client-side caching, and package
// coordination's fenced locks, beside rueidislock (which waits the same way) and the
// lockers that poll.

func init() {
	registerLocker(lockerSpec{
		name:    "respire-lock-tracking",
		respire: true,
		retry:   "TryAcquire with WithWait(10s) on a client with ClientSideCache: woken by the key's invalidation (its retry interval of -lock-retry is not used)",
		open:    openRespireTrackingLocker,
	})
	registerLocker(lockerSpec{
		name:    "respire-fenced",
		respire: true,
		retry:   "coordination.AcquireFencedLock (lease + fence counter in one script), woken by the lease's invalidation; never polls",
		open:    openRespireFenced,
	})
	registerLocker(lockerSpec{
		name:    "respire-fenced-try",
		respire: true,
		retry:   "coordination.TryAcquireFencedLock on a default client: one try, no wait (the bare cycle the allocation target is for)",
		open:    openRespireFencedTry,
		// No wait: in the contended scenario it would spin on the held key.
		scenarios: []string{"lock"},
	})
}

// trackingClient is a Respire client with client-side caching, which runs the RESP3
// tracking that the waits sleep on.
func trackingClient(ctx context.Context, ep endpoint) (*respire.Client, error) {
	return respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster, ClientSideCache: &cache.Options{}})
}

func openRespireTrackingLocker(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	c, err := trackingClient(ctx, ep)
	if err != nil {
		return nil, err
	}
	return &respireLocker{
		c:     c,
		locks: lock.New(c),
		opts:  []lock.Option{lock.WithWait(lockTTL), lock.WithRetryEvery(o.retry)},
	}, nil
}

type respireFenced struct {
	c  *respire.Client
	co *coordination.Coordinator
}

func openRespireFenced(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
	c, err := trackingClient(ctx, ep)
	if err != nil {
		return nil, err
	}
	return &respireFenced{c: c, co: coordination.New(c)}, nil
}

func (l *respireFenced) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	// The same wait bound as the other lockers; the pair shares the key's hash tag.
	wait, cancel := context.WithTimeout(ctx, lockTTL)
	defer cancel()
	fl, err := l.co.AcquireFencedLock(wait, "{"+key+"}:lease", "{"+key+"}:fence", lockTTL)
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return func(ctx context.Context) error { return releaseFenced(ctx, fl, key) }, true, nil
}

func (l *respireFenced) close() { l.c.Close() }

// respireFencedTry takes a fenced lock without waiting, on a client without tracking:
// a held lock is a miss for the harness to retry, as for the lockers that poll. Its
// row is the allocation target's cycle, so the harness allocates nothing of its own
// for it: each key's lease and fence names and its release function are made once, on
// the key's first acquisition (the lock scenario gives every goroutine its own key).
type respireFencedTry struct {
	c  *respire.Client
	co *coordination.Coordinator

	mu    sync.Mutex
	slots map[string]*fencedSlot
}

// fencedSlot is one key's names and its lock while held.
type fencedSlot struct {
	key, lease, fence string
	fl                *coordination.FencedLock
	release           func(context.Context) error
}

func openRespireFencedTry(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return &respireFencedTry{c: c, co: coordination.New(c), slots: map[string]*fencedSlot{}}, nil
}

func (l *respireFencedTry) slot(key string) *fencedSlot {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.slots[key]
	if s == nil {
		s = &fencedSlot{key: key, lease: "{" + key + "}:lease", fence: "{" + key + "}:fence"}
		s.release = func(ctx context.Context) error {
			fl := s.fl
			s.fl = nil
			return releaseFenced(ctx, fl, s.key)
		}
		l.slots[key] = s
	}
	return s
}

func (l *respireFencedTry) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	s := l.slot(key)
	fl, ok, err := l.co.TryAcquireFencedLock(ctx, s.lease, s.fence, lockTTL)
	if err != nil || !ok {
		return nil, false, err
	}
	s.fl = fl
	return s.release, true, nil
}

func (l *respireFencedTry) close() { l.c.Close() }

// releaseFenced releases fl, taken on key, and fails unless it was released.
func releaseFenced(ctx context.Context, fl *coordination.FencedLock, key string) error {
	outcome, err := fl.Release(ctx)
	if err == nil && outcome != lock.Released {
		err = fmt.Errorf("respire-fenced: release of %s: %v", key, outcome)
	}
	return err
}
