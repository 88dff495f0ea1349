package coordination

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

var (
	//go:embed scripts/entry_renew.lua
	entryRenewSource string
	entryRenewScript = respire.NewScript(entryRenewSource)
	//go:embed scripts/entry_release.lua
	entryReleaseSource string
	entryReleaseScript = respire.NewScript(entryReleaseSource)
)

// entryCloseTimeout bounds Close's one release.
const entryCloseTimeout = 5 * time.Second

// entryState is where an entry's handle stands.
type entryState uint8

const (
	entryHeld     entryState = iota // held as far as this handle knows
	entryLost                       // a renewal found it gone, or its outcome is unknown
	entryReleased                   // a release finished with an outcome
)

// entry is the handle of one field in a hash key whose fields map owners to their
// expiry on the server's clock: a semaphore permit, a read or a write lease. One key
// per semaphore or read/write lock keeps every script on one Cluster slot, so there is
// never a cross-slot pair to refuse.
type entry struct {
	co    *Coordinator
	key   string
	field string // kind prefix ("p:", "r:", "w:") + token
	token lock.Token
	ttl   time.Duration
	obs   observe.Observer // the Coordinator's; nil for an entry given back unused

	mu         sync.Mutex
	acquiredAt time.Time // when the acquisition was sent
	expiresAt  time.Time
	state      entryState
	outcome    lock.ReleaseOutcome // of the finished release
	reported   bool                // the loss was reported to the observer

	// keeper runs the keep-alive (package lock's); it keeps the cause of a loss or
	// release, which the keep-alive's context ends with.
	keeper    lock.Keeper
	releasing turn // one release at a time: a retry must see the last one's result

	// fieldText backs field, and token within it: one allocation for the handle, its
	// field and its token, never written after newEntry.
	fieldText [2 + tokenTextLen]byte
}

// tokenTextLen is the length of an owner token's text: 128 random bits in hexadecimal,
// as lock.NewToken makes them.
const tokenTextLen = 32

// newTokenText fills text with a fresh token, as lock.NewToken makes one, and returns
// it as a string that shares text's memory: text must never be written after, and
// lives in the handle the token is for, so that the token costs no allocation of its
// own.
func newTokenText(text *[tokenTextLen]byte) string {
	var raw [tokenTextLen / 2]byte
	rand.Read(raw[:]) // never fails: crypto/rand crashes the program rather than return an error
	hex.Encode(text[:], raw[:])
	return unsafe.String(&text[0], len(text))
}

func newEntry(co *Coordinator, key, kind string, ttl time.Duration) *entry {
	e := &entry{co: co, key: key, ttl: ttl}
	n := copy(e.fieldText[:], kind)
	if n < len(kind) {
		e.field = kind + newTokenText(new([tokenTextLen]byte))
	} else {
		newTokenText((*[tokenTextLen]byte)(e.fieldText[n:]))
		e.field = unsafe.String(&e.fieldText[0], n+tokenTextLen)
	}
	e.token = lock.TokenFromString(e.field[len(kind):])
	if co != nil {
		e.obs = co.obs
	}
	return e
}

// acquireEntry takes an entry of kind at key for ttl, waiting as opts say (package
// lock's options, through lock's own wait: a watch of key where the client tracks
// keys, else the retry strategy). take sends one acquisition of the entry at field and
// reports whether the server granted it and, when not, how long until the first live
// entry that excludes it expires: a key watch does not see that, since the key
// changes only when the next acquisition reclaims it. Each try has a fresh owner
// token, as a try that came back too late gave its entry back. It returns nil, and a
// nil error, when the entry is still held by others at the end ("not acquired").
func (co *Coordinator) acquireEntry(ctx context.Context, key, kind string, ttl time.Duration, opts []lock.Option,
	take func(ctx context.Context, field string) (bool, time.Duration, error)) (*entry, error) {
	w, err := lock.NewWaiting(opts...)
	if err != nil {
		return nil, err
	}
	var got *entry
	_, err = co.locks.Wait(ctx, w, key, func(ctx context.Context) (bool, time.Duration, error) {
		e := newEntry(co, key, kind, ttl)
		var retryIn time.Duration
		ok, err := e.acquire(ctx, func() (bool, error) {
			granted, in, err := take(ctx, e.field)
			retryIn = in
			return granted, err
		})
		if ok {
			got = e
		}
		return ok, retryIn, err
	})
	if got == nil {
		return nil, err
	}
	if w.KeepAlive() {
		// Owned by the entry, as lock.WithKeepAlive's is by a lock: the acquisition's
		// context does not control it. It cannot fail: nothing lost the entry yet.
		_, _ = got.KeepAlive(context.WithoutCancel(ctx))
	}
	return got, nil
}

// acquire runs one acquisition of e: run sends it and reports whether the server
// granted it. Reported to the observer as a lock's acquisition: an attempt, then
// acquired, contended (not granted) or given up (an error, or a reply too late).
func (e *entry) acquire(ctx context.Context, run func() (bool, error)) (bool, error) {
	report(ctx, e.obs, observe.LockAttempt, time.Time{}, nil)
	start := time.Now()
	granted, err := run()
	switch {
	case err != nil:
		report(ctx, e.obs, observe.LockGaveUp, start, err)
		return false, err
	case !granted:
		report(ctx, e.obs, observe.LockContended, start, nil)
		return false, nil
	case !e.acquired(start):
		report(ctx, e.obs, observe.LockGaveUp, start, lock.ErrLeaseExpired)
		return false, nil
	}
	report(ctx, e.obs, observe.LockAcquired, start, nil)
	return true, nil
}

// denied reads an acquisition script's reply: 1 when granted, else {0, ms until the
// first excluding entry expires}.
func denied(what string, v resp.Value) (granted bool, retryIn time.Duration, err error) {
	if v.Kind() == resp.KindInteger {
		// A grant is an integer rather than an array, which would cost the reader an
		// allocation on every acquisition.
		if n, _ := v.Int(); n == 1 {
			return true, 0, nil
		}
		return false, 0, fmt.Errorf("coordination: %s acquisition answered %v", what, v)
	}
	reply, err := v.Array()
	if err == nil && len(reply) == 0 {
		err = errors.New("empty reply")
	}
	var code int64
	if err == nil {
		code, err = reply[0].Int()
	}
	if err != nil {
		return false, 0, fmt.Errorf("coordination: %s acquisition answered %v: %w", what, v, err)
	}
	if code == 0 && len(reply) == 2 {
		if ms, err := reply[1].Int(); err == nil && ms > 0 {
			retryIn = time.Duration(ms) * time.Millisecond
		}
	}
	return code == 1, retryIn, nil
}

// acquired records the expiry estimate of an acquisition sent at start whose reply has
// just come, and reports whether the entry is of use: one whose reply came at or after
// start + TTL has no time left, so it is given back on a best-effort basis rather than
// left for its TTL (unreported: it was never held), and counts as not acquired.
func (e *entry) acquired(start time.Time) bool {
	e.acquiredAt, e.expiresAt = start, start.Add(e.ttl)
	if time.Now().Before(e.expiresAt) {
		return true
	}
	obs := e.obs
	e.obs = nil
	e.close()
	e.obs = obs
	return false
}

// checkKeyTTL validates what every entry acquisition takes.
func (co *Coordinator) checkKeyTTL(key string, ttl time.Duration) (int64, error) {
	if err := co.check(); err != nil {
		return 0, err
	}
	if key == "" {
		return 0, fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	return checkTTL(ttl)
}

// Key returns the key as given, without the client's key prefix.
func (e *entry) Key() string { return e.key }

// Token returns the owner token of this entry.
func (e *entry) Token() lock.Token { return e.token }

// Duration returns the TTL the entry was acquired with.
func (e *entry) Duration() time.Duration { return e.ttl }

// ExpiresAtEstimate returns when the entry ends if nothing renews it, measured from
// when the last successful acquisition or renewal was sent; zero once the handle knows
// it is lost or released. It is a local estimate: the server's clock decides.
func (e *entry) ExpiresAtEstimate() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != entryHeld {
		return time.Time{}
	}
	return e.expiresAt
}

// RemainingEstimate returns the time left until ExpiresAtEstimate, or 0.
func (e *entry) RemainingEstimate() time.Duration {
	t := e.ExpiresAtEstimate()
	if t.IsZero() {
		return 0
	}
	return max(time.Until(t), 0)
}

// ResetExpiry sets the entry to d from now, on the server's clock, if it is still
// live. It returns false once the entry expired, was released or is lost: stop the
// protected work then. A renewal whose reply did not come back after it was sent
// makes the handle count the entry as lost, with an error matching
// lock.ErrOwnershipUncertain: it may still run and keep the entry until d ends, which
// only holds its place longer, never admits another holder.
func (e *entry) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	ms, err := checkTTL(d)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	state := e.state
	e.mu.Unlock()
	if state != entryHeld {
		return false, nil
	}
	start := time.Now()
	v, err := entryRenewScript.Run(ctx, e.co.c, []string{e.key}, e.field, ms)
	var n int64
	if err == nil {
		n, err = v.Int()
	}
	switch {
	case conn.WasWritten(err):
		e.lose(ctx, lock.ErrOwnershipUncertain)
		return false, fmt.Errorf("%w: %w", lock.ErrOwnershipUncertain, err)
	case err != nil:
		report(ctx, e.obs, observe.LockRenewed, time.Time{}, err)
		return false, err
	case n != 1:
		e.lose(ctx, lock.ErrLeaseLost)
		return false, nil
	case !e.renewed(start.Add(d)):
		return false, nil // released meanwhile
	}
	e.keeper.Moved((*entryRenewal)(e))
	report(ctx, e.obs, observe.LockRenewed, time.Time{}, nil)
	return true, nil
}

// renewed records the expiry of a successful renewal, unless the entry stopped being
// held meanwhile, and reports whether it recorded it.
func (e *entry) renewed(expiresAt time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != entryHeld {
		return false
	}
	e.expiresAt = expiresAt
	return true
}

// lose records that the entry can no longer be trusted, ends its keep-alive with cause
// and, if it was held, reports the loss.
func (e *entry) lose(ctx context.Context, cause error) {
	e.mu.Lock()
	held := e.state == entryHeld
	if held {
		e.state = entryLost
	}
	e.mu.Unlock()
	e.keeper.Lose(cause)
	if held {
		e.reportLost(ctx, cause)
	}
}

// reportLost reports the loss of the entry with cause, once: a renewal that found it
// lost and a keep-alive that ended with the same loss are one event. The event is sent
// with e.mu unlocked, as every event is, so that an observer may call back into the
// entry.
func (e *entry) reportLost(ctx context.Context, cause error) {
	e.mu.Lock()
	first := !e.reported
	e.reported = true
	e.mu.Unlock()
	if first {
		report(ctx, e.obs, observe.LockLost, e.acquiredAt, cause)
	}
}

// KeepAlive starts renewing the entry, as lock.Lock's KeepAlive renews a lock (the
// same code): whenever less than half its lease (Duration) is left, it sets the full
// lease from now. Its Context ends when ctx ends, when a renewal fails, finds the entry
// gone (lock.ErrLeaseLost) or has an uncertain outcome (lock.ErrOwnershipUncertain),
// when the lease runs out before a renewal succeeds (lock.ErrLeaseExpired), when the
// entry is released (lock.ErrReleased), or on Stop (lock.ErrKeepAliveStopped). A
// Release stops the renewals before its delete is sent; called while a Release is in
// flight, KeepAlive starts nothing (no renewal may run with or after the delete) and
// returns the keep-alive the release halts, or one that never renews, either ending
// with the release's cause. If a keep-alive already runs, it is returned; an entry
// found lost or released returns that cause as the error.
func (e *entry) KeepAlive(ctx context.Context) (*lock.KeepAlive, error) {
	return e.keeper.Start(ctx, (*entryRenewal)(e))
}

// KeepAliveContext returns a context for the protected work, as lock.Lock's does: the
// running keep-alive's (see KeepAlive), or without one a context that ends a twentieth
// of the lease before the expiry estimate; either ends once the handle finds the entry
// lost or releases it, with that cause.
func (e *entry) KeepAliveContext() context.Context { return e.keeper.Context((*entryRenewal)(e)) }

// entryRenewal is an entry as the lock.Renewable its keep-alive renews.
type entryRenewal entry

func (l *entryRenewal) Duration() time.Duration      { return l.ttl }
func (l *entryRenewal) ExpiresAtEstimate() time.Time { return (*entry)(l).ExpiresAtEstimate() }
func (l *entryRenewal) Lost() error                  { return l.keeper.Lost() }
func (l *entryRenewal) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	return (*entry)(l).ResetExpiry(ctx, d)
}
func (l *entryRenewal) ReportLost(ctx context.Context, cause error) {
	(*entry)(l).reportLost(ctx, cause)
}

// Release deletes the entry if it is still live: lock.Released, lock.NotOwned when it
// had expired or was gone, lock.AlreadyReleased after an earlier Release of this
// handle. A release that failed (not sent, or its reply lost) can be called again: the
// delete only ever removes this handle's own entry.
func (e *entry) Release(ctx context.Context) (lock.ReleaseOutcome, error) {
	ran, outcome, err := e.releaseInTurn(ctx)
	if ran {
		// Reported once the turn is given back: an observer may release the entry too.
		reportRelease(ctx, e.obs, outcome, e.acquiredAt, err)
	}
	return outcome, err
}

// releaseInTurn waits for the release turn and runs release; ran is false when ctx
// ended first.
func (e *entry) releaseInTurn(ctx context.Context) (ran bool, _ lock.ReleaseOutcome, _ error) {
	if err := e.releasing.take(ctx); err != nil {
		return false, 0, err
	}
	defer e.releasing.give()
	outcome, err := e.release(ctx)
	return true, outcome, err
}

// release is Release once the caller has its turn.
func (e *entry) release(ctx context.Context) (lock.ReleaseOutcome, error) {
	e.mu.Lock()
	if e.state == entryReleased {
		outcome := e.outcome
		e.mu.Unlock()
		if outcome == lock.Released {
			return lock.AlreadyReleased, nil
		}
		return outcome, nil
	}
	e.mu.Unlock()
	if err := e.keeper.Halt(ctx); err != nil {
		e.keeper.Settle(nil, err)
		return 0, err
	}
	outcome, err := e.releaseOnce(ctx)
	switch {
	case outcome == lock.Released:
		e.keeper.Settle(lock.ErrReleased, nil)
	case outcome == lock.NotOwned:
		e.keeper.Settle(lock.ErrLeaseLost, nil)
	case conn.WasWritten(err):
		e.keeper.Settle(lock.ErrOwnershipUncertain, err)
	default:
		e.keeper.Settle(nil, err) // not sent, or refused: the entry is still held
	}
	return outcome, err
}

// releaseOnce sends the release script and records its outcome.
func (e *entry) releaseOnce(ctx context.Context) (lock.ReleaseOutcome, error) {
	v, err := entryReleaseScript.Run(ctx, e.co.c, []string{e.key}, e.field)
	var n int64
	if err == nil {
		n, err = v.Int()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		if conn.WasWritten(err) {
			// Not reported as a loss: the failed release reports itself.
			if e.state == entryHeld {
				e.state = entryLost
			}
			return 0, fmt.Errorf("%w: %w", lock.ErrOwnershipUncertain, err)
		}
		return 0, err
	}
	e.state, e.outcome = entryReleased, lock.NotOwned
	if n == 1 {
		e.outcome = lock.Released
	}
	return e.outcome, nil
}

// close is the best-effort release behind the handles' Close: the entry's expiry
// covers what it cannot reach, so only a server's refusal (such as NOPERM) is returned.
func (e *entry) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), min(e.ttl, entryCloseTimeout))
	defer cancel()
	_, err := e.Release(ctx)
	return bestEffort(err)
}

// bestEffort is what a Close reports of its release: a server's refusal (such as
// NOPERM), which expiry does not make harmless; not a failure to reach the server.
func bestEffort(err error) error {
	if _, refused := resp.AsServerError(err); refused {
		return err
	}
	return nil
}
