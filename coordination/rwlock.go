package coordination

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/respire/respire"
)

var (
	//go:embed scripts/rw_acquire.lua
	rwAcquireSource string
	rwAcquireScript = respire.NewScript(rwAcquireSource)
)

// RWLease is a held read or write lease of a read/write lock: readers share the key, a
// writer excludes readers and writers. Leases expire on the server's clock; there is
// no keep-alive: renew with ResetExpiry before the lease ends and stop the protected
// work when renewal fails. It is safe for concurrent use.
type RWLease struct {
	*entry
	write bool
}

// TryAcquireReadLock takes a read lease on key for ttl: ok is false while a writer
// holds a live lease. It is an immediate attempt, with no queue: readers that keep
// coming can starve a writer (there is no fairness). Expired leases are reclaimed on
// the server's clock first. ok is false too when the reply came at or after ttl from
// when the script was sent: that lease is given back on a best-effort basis. The key
// holds a hash and must not be used for anything else. Cancellation cannot recall a script already written: such a lease stays until
// ttl ends.
func (co *Coordinator) TryAcquireReadLock(ctx context.Context, key string, ttl time.Duration) (*RWLease, bool, error) {
	return co.tryAcquireRW(ctx, key, ttl, false)
}

// TryAcquireWriteLock takes the write lease on key for ttl: ok is false while any
// reader or writer holds a live lease. It is an immediate attempt, with no queue and
// no fairness: continuous readers can starve it. See TryAcquireReadLock.
func (co *Coordinator) TryAcquireWriteLock(ctx context.Context, key string, ttl time.Duration) (*RWLease, bool, error) {
	return co.tryAcquireRW(ctx, key, ttl, true)
}

func (co *Coordinator) tryAcquireRW(ctx context.Context, key string, ttl time.Duration, write bool) (*RWLease, bool, error) {
	ms, err := co.checkKeyTTL(key, ttl)
	if err != nil {
		return nil, false, err
	}
	kind := "r:"
	if write {
		kind = "w:"
	}
	e := newEntry(co, key, kind, ttl)
	ok, err := e.acquire(ctx, func() (bool, error) {
		v, err := rwAcquireScript.Run(ctx, co.c, []string{key}, e.field, ms)
		if err != nil {
			return false, err
		}
		n, err := v.Int()
		if err != nil {
			return false, fmt.Errorf("coordination: read/write acquisition answered %v: %w", v, err)
		}
		return n == 1, nil
	})
	if !ok {
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
