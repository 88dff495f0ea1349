package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/observe"
)

// Locker takes and manages leases on one client. It is cheap: create one per client
// and share it.
type Locker struct {
	ln      *link.Client     // what the locks use of their client: its lanes, prefix, observer and key watches
	obs     observe.Observer // the client's, for lock events; nil when nothing observes them
	cutoffs observe.Observer // the client's, for cut-offs
	// handoff wakes this Locker's polling waiters of a key that one of its locks
	// released; shared with the Lockers Unobserved makes.
	handoff *handoffs
}

// New returns the Locker for c. Lock keys get c's key prefix, like every other key.
// The locks report each step of their lives (observe.Lock) and the connections they
// cut off (observe.Cutoff) to c's Observer, if it has one.
func New(c *respire.Client) *Locker {
	l := &Locker{ln: link.Of(c), handoff: new(handoffs)}
	if l.ln != nil {
		l.obs = l.ln.Observer
		l.cutoffs = l.obs
	}
	return l
}

// Unobserved returns a Locker of the same client whose locks report no lock events (a
// cut-off is still reported: it is a fact of the client's connections), for code that
// reports the events of a lease it builds from several locks itself (package
// coordination's Redlock, one lease over a lock on each of its servers).
func (l *Locker) Unobserved() *Locker {
	if l == nil {
		return nil
	}
	u := *l
	u.obs = nil
	return &u
}

func (l *Locker) check() error {
	if l == nil || l.ln == nil {
		return fmt.Errorf("%w: Locker without a client (use lock.New)", ErrInvalidArg)
	}
	return nil
}

// TryAcquire takes the lock at key for ttl with a fresh owner token (SET key token NX
// PX ttl). ok is false when another owner holds it, after the wait budget if WithWait
// was given. ok is false too when the reply came too late for the lease to be of use
// (the handle would be Expired on arrival: slow replies ate the TTL); that lock is
// released on a best-effort basis, and a wait goes on with a fresh token. Cancellation interrupts the wait and the reply wait; it cannot recall a
// command already written, so a cancelled acquisition may leave the lock taken without
// a handle: it then stays until its TTL ends.
func (l *Locker) TryAcquire(ctx context.Context, key string, ttl time.Duration, opts ...Option) (*Lock, bool, error) {
	return l.tryAcquire(ctx, key, ttl, false, opts)
}

// tryAcquire is TryAcquire; strict is Acquire's, for which a lock held by another
// owner ends the acquisition with an error (reported as LockGaveUp).
func (l *Locker) tryAcquire(ctx context.Context, key string, ttl time.Duration, strict bool, opts []Option) (*Lock, bool, error) {
	if err := l.check(); err != nil {
		return nil, false, err
	}
	ms, err := checkKeyTTL(key, ttl)
	if err != nil {
		return nil, false, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, false, err
	}
	began := l.began()
	mu := newLock(l, key, ttl)
	// Releases before the first try: a waiter registers for hand-offs only at its
	// first pause, and one that came during the try is seen by the count moving.
	seen := l.handoff.count()
	// The first try runs without the wait's closures, so an acquisition that does not
	// wait allocates nothing for them.
	ok, err := mu.try(ctx, ms, began)
	waited := !ok && o.wait > 0 && (err == nil || notSent(ctx, err))
	if waited {
		try := func(ctx context.Context) (bool, error) {
			if mu.lost() != nil {
				// The last try came back too late and gave its lock back: that handle is
				// spent, and a token whose delete may be in flight must not be reused.
				mu = newLock(l, key, ttl)
			}
			return mu.try(ctx, ms, began)
		}
		wo := o // the wait keeps &wo; o itself stays on the stack for the try without wait
		ok, err = waitLoop(ctx, &wo, err, 0, plain(try), l.watcher(key), handoffKey{l.handoff, key, seen})
	}
	if err != nil || !ok {
		l.reportGaveUp(ctx, began, mu, err, waited || strict)
		return nil, false, err
	}
	l.report(ctx, observe.LockAcquired, began, nil)
	if o.keepAlive {
		// It cannot fail: nobody else holds the handle yet.
		_, _ = mu.startKeepAlive(context.WithoutCancel(ctx))
	}
	return mu, true, nil
}

// try is one SET NX of a lock not yet held; it records the expiry estimate on success.
// A reply that comes when the handle is already Expired holds nothing usable: try
// gives that lock back rather than leave it for its TTL, and reports it not acquired,
// as Redlock does an acquisition its round trips used up. began is when the
// acquisition started, for the events' Wait.
func (m *Lock) try(ctx context.Context, ms int64, began time.Time) (bool, error) {
	m.l.report(ctx, observe.LockAttempt, time.Time{}, nil)
	cn, err := m.l.route(ctx, m.key)
	if err != nil {
		return false, err
	}
	start := time.Now()
	ok, err := m.l.acquire(ctx, &cn, m.key, m.token, ms)
	if !ok {
		if err == nil {
			m.l.report(ctx, observe.LockContended, began, nil)
		}
		return false, err
	}
	m.mu.Lock()
	m.expiresAt = start.Add(m.ttl)
	m.mu.Unlock()
	if m.Expired() {
		m.giveBack(ctx)
		return false, nil
	}
	return true, nil
}

// giveBack deletes the lock of an acquisition that came back too late, on a
// best-effort basis: the raw compare-and-delete of the handle's own token, which is
// never cut off (a cut-off would fail other locks' commands on the lock connection),
// given no longer than the lease, after which the key is gone anyway. The handle
// counts as lost, so that its token is not sent again while that delete may be in
// flight.
func (m *Lock) giveBack(ctx context.Context) {
	m.lose(ErrLeaseExpired)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(m.ttl, closeTimeout))
	defer cancel()
	m.l.Release(ctx, m.key, m.token) // what it cannot reach ends with its TTL
}

// watcher returns how a waiting acquisition of key sleeps until the key changes: the
// client's key watch when it tracks keys (RESP3 client-side caching), else nil (poll).
// Watches are armed in turn, so that one release of the key wakes one waiter of this
// client, not all of them.
func (l *Locker) watcher(key string) watchFunc {
	if !l.ln.CanWatchKeys {
		return nil
	}
	return func(ctx context.Context, prev keyWatch) (keyWatch, error) {
		return l.ln.WatchInTurn(ctx, key, prev)
	}
}

// Acquire is TryAcquire for when contention is exceptional: it returns the lock, or an
// error that matches ErrNotAcquired when another owner holds it (or the reply came too
// late for the lease to be of use).
func (l *Locker) Acquire(ctx context.Context, key string, ttl time.Duration, opts ...Option) (*Lock, error) {
	mu, ok, err := l.tryAcquire(ctx, key, ttl, true, opts)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s is held by another owner, or the lease ran out before its reply came", ErrNotAcquired, key)
	}
	return mu, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// TryTake takes the lock at key for ttl with a token of the caller's (SET key token NX
// PX ttl), for tokens shared between processes or outliving this one. Raw-token calls
// never sever connections.
func (l *Locker) TryTake(ctx context.Context, key string, token Token, ttl time.Duration) (bool, error) {
	return l.TryTakeBy(ctx, time.Time{}, key, token, ttl)
}

// TryTakeBy is TryTake that waits for the reply until by at the latest (zero: no
// bound), failing then as under a context with that deadline (the error matches
// context.DeadlineExceeded and says whether the SET was written), without deriving
// such a context: for code that bounds each of many calls, as package coordination's
// Redlock bounds each server's part, where a context per call would cost more than
// the call.
func (l *Locker) TryTakeBy(ctx context.Context, by time.Time, key string, token Token, ttl time.Duration) (bool, error) {
	ms, err := l.checkRaw(key, token, ttl)
	if err != nil {
		return false, err
	}
	cn, err := l.routeBy(ctx, by, key)
	if err != nil {
		return false, err
	}
	return l.acquire(ctx, &cn, key, token, ms)
}

// ResetExpiry sets the TTL of the lock at key to ttl from now if it holds token. It
// returns false when the key is missing, expired or held by another token; it never
// creates the key or changes another owner's TTL.
func (l *Locker) ResetExpiry(ctx context.Context, key string, token Token, ttl time.Duration) (bool, error) {
	ms, err := l.checkRaw(key, token, ttl)
	if err != nil {
		return false, err
	}
	cn, err := l.route(ctx, key)
	if err != nil {
		return false, err
	}
	return l.extend(ctx, &cn, key, token, ms)
}

// Release deletes the lock at key if it holds token, and reports whether it did.
func (l *Locker) Release(ctx context.Context, key string, token Token) (bool, error) {
	if _, err := l.checkRaw(key, token, time.Second); err != nil {
		return false, err
	}
	cn, err := l.route(ctx, key)
	if err != nil {
		return false, err
	}
	return l.release(ctx, &cn, key, token)
}

// OwnerToken returns the token that holds the lock at key; ok is false when the key is
// missing.
func (l *Locker) OwnerToken(ctx context.Context, key string) (t Token, ok bool, err error) {
	if err := l.check(); err != nil {
		return Token{}, false, err
	}
	if key == "" {
		return Token{}, false, fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	cn, err := l.route(ctx, key)
	if err != nil {
		return Token{}, false, err
	}
	return l.owner(ctx, &cn, key)
}

func (l *Locker) checkRaw(key string, token Token, ttl time.Duration) (int64, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	if err := checkToken(token); err != nil {
		return 0, err
	}
	return checkKeyTTL(key, ttl)
}
