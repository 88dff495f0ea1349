package main

import (
	"context"
	"fmt"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
)

// Respire's leases (package lock) over a default Respire client.

func init() {
	registerLocker(lockerSpec{
		name:    "respire-lock",
		respire: true,
		primary: true,
		retry:   "TryAcquire with WithWait(10s) and WithRetryEvery(-lock-retry) (its default is one try; 50ms between tries when waiting)",
		open:    openRespireLocker,
	})
}

type respireLocker struct {
	c     *respire.Client
	locks *lock.Locker
	opts  []lock.Option
}

func openRespireLocker(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return &respireLocker{
		c:     c,
		locks: lock.New(c),
		opts:  []lock.Option{lock.WithWait(lockTTL), lock.WithRetryEvery(o.retry)},
	}, nil
}

func (l *respireLocker) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	mu, ok, err := l.locks.TryAcquire(ctx, key, lockTTL, l.opts...)
	if err != nil || !ok {
		return nil, false, err
	}
	return func(ctx context.Context) error {
		outcome, err := mu.Release(ctx)
		if err == nil && outcome != lock.Released {
			err = fmt.Errorf("respire-lock: release of %s: %v", key, outcome)
		}
		return err
	}, true, nil
}

func (l *respireLocker) close() { l.c.Close() }
