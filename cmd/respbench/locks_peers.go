package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/redis/rueidis/rueidislock"
)

func init() {
	registerLocker(lockerSpec{
		name:  "redislock",
		retry: "LinearBackoff(-lock-retry) until the run ends (its default is NoRetry)",
		open:  openRedislock,
	})
	registerLocker(lockerSpec{
		name:  "redsync-goredis",
		retry: "WithRetryDelay(-lock-retry), unlimited tries (its default is 32 tries 50-250ms apart)",
		open:  openRedsyncGoRedis,
	})
	registerLocker(lockerSpec{
		name:  "redsync-rueidis",
		retry: "WithRetryDelay(-lock-retry), unlimited tries (its default is 32 tries 50-250ms apart)",
		open:  openRedsyncRueidis,
	})
	registerLocker(lockerSpec{
		name:  "rueidislock",
		retry: "its default: waits for the key's invalidation (client-side caching), KeyMajority 2 of 3 keys",
		open:  openRueidislock(0),
	})
	registerLocker(lockerSpec{
		name:  "rueidislock-km1",
		retry: "its default wait on invalidation, KeyMajority 1 (one key)",
		open:  openRueidislock(1),
	})
}

// waitedOut reports whether err is a library giving up on its own deadline while the
// caller's ctx is still live: a lock not acquired, not a failure.
func waitedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
}

// bsm/redislock over a default go-redis client.

type redislockLocker struct {
	rdb  redis.UniversalClient
	lk   *redislock.Client
	opts *redislock.Options
}

func openRedislock(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	rdb := newGoRedis(ep)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	return &redislockLocker{
		rdb:  rdb,
		lk:   redislock.New(rdb),
		opts: &redislock.Options{RetryStrategy: redislock.LinearBackoff(o.retry)},
	}, nil
}

func (l *redislockLocker) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	lock, err := l.lk.Obtain(ctx, key, lockTTL, l.opts)
	if errors.Is(err, redislock.ErrNotObtained) || waitedOut(ctx, err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return lock.Release, true, nil
}

func (l *redislockLocker) close() { l.rdb.Close() }

// redsync over one go-redis or rueidis pool, default expiry.

type redsyncLocker struct {
	rs      *redsync.Redsync
	opts    []redsync.Option
	closeFn func()
}

func newRedsyncLocker(pool redsyncredis.Pool, o lockerOptions, closeFn func()) *redsyncLocker {
	return &redsyncLocker{
		rs:      redsync.New(pool),
		opts:    []redsync.Option{redsync.WithTries(math.MaxInt32), redsync.WithRetryDelay(o.retry)},
		closeFn: closeFn,
	}
}

func openRedsyncGoRedis(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	rdb := newGoRedis(ep)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	return newRedsyncLocker(redsyncgoredis.NewPool(rdb), o, func() { rdb.Close() }), nil
}

func openRedsyncRueidis(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: ep.addrs})
	if err != nil {
		return nil, err
	}
	return newRedsyncLocker(redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)), o, c.Close), nil
}

func (l *redsyncLocker) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		var taken redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || waitedOut(ctx, err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("redsync: %s was not released", key)
		}
		return err
	}, true, nil
}

func (l *redsyncLocker) close() { l.closeFn() }

// rueidislock, its defaults or KeyMajority 1.

type rueidisLocker struct{ lk rueidislock.Locker }

func openRueidislock(keyMajority int32) func(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	return func(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
		lk, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: ep.addrs},
			KeyMajority:  keyMajority,
		})
		if err != nil {
			return nil, err
		}
		return rueidisLocker{lk}, nil
	}
}

func (l rueidisLocker) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	_, cancel, err := l.lk.WithContext(ctx, key)
	if errors.Is(err, rueidislock.ErrNotLocked) || waitedOut(ctx, err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// cancel deletes the keys and returns once they are gone.
	return func(context.Context) error { cancel(); return nil }, true, nil
}

func (l rueidisLocker) close() { l.lk.Close() }

// lockClock returns a monotonic reading in nanoseconds, for hand-off times.
var lockEpoch = time.Now()

func lockClock() int64 { return int64(time.Since(lockEpoch)) }
