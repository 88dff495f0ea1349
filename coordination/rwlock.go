package coordination

import (
	"context"
	_ "embed"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
)

var (
	//go:embed scripts/rw_acquire.lua
	rwAcquireSource string
	rwAcquireScript = respire.NewScript(rwAcquireSource)
)

// RWLease is a held read or write lease of a read/write lock: readers share the key, a
// writer excludes readers and writers. Leases expire on the server's clock: renew with
// ResetExpiry before the lease ends, or run the protected work under KeepAlive's
// context (lock.Lock's keep-alive); stop the work when renewal fails. It is safe for
// concurrent use.
type RWLease struct {
	*entry
	write bool
}

// TryAcquireReadLock takes a read lease on key for ttl: ok is false while a writer
// holds a live lease. There is no queue: readers that keep coming can starve a writer
// (there is no fairness). Expired leases are reclaimed on the server's clock first. ok
// is false too when the reply came at or after ttl from when the script was sent: that
// lease is given back on a best-effort basis. The key holds a hash and must not be used
// for anything else.
//
// Options are package lock's: lock.WithWait(d) tries again while the lease is excluded
// until d has passed (ok false and a nil error when it ends so; the caller's own
// cancellation an error; a negative d refused), woken by the server's invalidation of
// the key where the client tracks keys, else polling with lock.WithRetry, and never
// later than the first excluding lease's expiry. lock.WithKeepAlive starts the lease's
// keep-alive once acquired (see KeepAlive and KeepAliveContext), owned by the lease:
// the acquisition's ctx does not control it.
//
// Cancellation cannot recall a script already written: such a lease stays until ttl
// ends.
func (co *Coordinator) TryAcquireReadLock(ctx context.Context, key string, ttl time.Duration, opts ...lock.Option) (*RWLease, bool, error) {
	return co.tryAcquireRW(ctx, key, ttl, false, opts)
}

// TryAcquireWriteLock takes the write lease on key for ttl: ok is false while any
// reader or writer holds a live lease. There is no queue and no fairness: continuous
// readers can starve it. See TryAcquireReadLock, options included.
func (co *Coordinator) TryAcquireWriteLock(ctx context.Context, key string, ttl time.Duration, opts ...lock.Option) (*RWLease, bool, error) {
	return co.tryAcquireRW(ctx, key, ttl, true, opts)
}

func (co *Coordinator) tryAcquireRW(ctx context.Context, key string, ttl time.Duration, write bool, opts []lock.Option) (*RWLease, bool, error) {
	ms, err := co.checkKeyTTL(key, ttl)
	if err != nil {
		return nil, false, err
	}
	kind := "r:"
	if write {
		kind = "w:"
	}
	e, err := co.acquireEntry(ctx, key, kind, ttl, opts, func(ctx context.Context, field string) (bool, time.Duration, error) {
		v, err := rwAcquireScript.Run(ctx, co.c, []string{key}, field, ms)
		if err != nil {
			return false, 0, err
		}
		return denied("read/write", v)
	})
	if e == nil {
		return nil, false, err
	}
	return &RWLease{entry: e, write: write}, true, nil
}

// Write reports whether this is a write lease.
func (l *RWLease) Write() bool { return l.write }

// Close releases the lease on a best-effort basis, as a deferred call should; a lease
// it cannot reach frees itself at its TTL. It returns only a server's refusal (such as
// NOPERM). It is a no-op on a nil lease, so it can be deferred before checking ok.
func (l *RWLease) Close() error {
	if l == nil {
		return nil
	}
	return l.close()
}
