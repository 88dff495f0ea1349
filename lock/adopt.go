package lock

import (
	"fmt"
	"time"
)

// Adopt returns the managed handle of a lock this process already holds: key holds
// token with a TTL of ttl, written by a command sent at acquiredAt (a TryTake, or a
// script of the caller's own, such as package coordination's fenced acquisition, which
// takes the lease and advances a counter in one step). The handle verifies, renews,
// keeps alive and releases the lease exactly as one TryAcquire returned, cutting off
// uncertain renewals and releases the same way, so code built on this package needs
// no copy of that machinery, and reports its renewals, loss and release to the
// observer as theirs (its acquisition is the caller's to report). Adopt sends nothing;
// a wrong token only makes the handle find the lock lost at its first renewal or
// release.
func (l *Locker) Adopt(key string, token Token, ttl time.Duration, acquiredAt time.Time) (*Lock, error) {
	m := new(Lock)
	if err := l.AdoptInto(m, key, token, ttl, acquiredAt); err != nil {
		return nil, err
	}
	return m, nil
}

// AdoptInto is Adopt that makes the handle in *m instead of allocating one: for code
// that keeps its handles in a structure of its own, as package coordination's Redlock
// keeps one per server in its own handle, so that adopting costs no allocation. m must
// be a zero Lock, never used before (one that is not fails with ErrInvalidArg: its
// state would mix with the new lease's); the caller must not copy it afterwards. On an
// error m is left as it was.
func (l *Locker) AdoptInto(m *Lock, key string, token Token, ttl time.Duration, acquiredAt time.Time) error {
	if _, err := l.checkRaw(key, token, ttl); err != nil {
		return err
	}
	if m == nil || m.l != nil || m.key != "" || m.token != (Token{}) || m.ttl != 0 {
		return fmt.Errorf("%w: AdoptInto needs a zero Lock", ErrInvalidArg)
	}
	m.l, m.key, m.token, m.ttl, m.expiresAt = l, key, token, ttl, acquiredAt.Add(ttl)
	return nil
}
