package main

import (
	"context"
	"errors"
	"fmt"

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
	return func(ctx context.Context) error {
		outcome, err := fl.Release(ctx)
		if err == nil && outcome != lock.Released {
			err = fmt.Errorf("respire-fenced: release of %s: %v", key, outcome)
		}
		return err
	}, true, nil
}

func (l *respireFenced) close() { l.c.Close() }
