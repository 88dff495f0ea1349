package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Lock is a held lease: a key, the owner token stored in it, and what this process
// knows of it. It is safe for concurrent use.
type Lock struct {
	l     *Locker
	key   string
	token Token
	ttl   time.Duration

	mu           sync.Mutex
	expiresAt    time.Time     // local estimate: start of the last successful write + its TTL
	renewedBy    time.Duration // how far renewals moved expiresAt: the acquisition's is expiresAt - renewedBy
	lostCause    error         // non-nil once the handle stopped trusting the lock
	lostReported bool          // LockLost was sent to the observer
	alive        lossContext   // ends with lostCause; made on first use, most locks never need it
	ka           *KeepAlive    // the running keep-alive, if any
	rel          releaseState

	tokenText [tokenTextLen]byte // backs token when the Locker generated it: one allocation, not two
}

// newLock returns the handle of a lock about to be acquired, with a fresh token whose
// bytes live in the handle itself (never written after this).
func newLock(l *Locker, key string, ttl time.Duration) *Lock {
	m := &Lock{l: l, key: key, ttl: ttl}
	text := randomTokenText(&m.tokenText)
	m.token = Token{b: unsafe.String(unsafe.SliceData(text), len(text))}
	return m
}

// aliveLocked returns the context that ends when the lock is lost or released.
func (m *Lock) aliveLocked() context.Context { return m.alive.get(m.lostCause) }

// lossContext is a context that ends when a lease is lost or released, made on first
// use. Its owner's lock guards it.
type lossContext struct {
	ctx  context.Context
	kill context.CancelCauseFunc
}

// get returns the context, made now if need be, ended with lost when it is not nil.
func (a *lossContext) get(lost error) context.Context {
	if a.ctx == nil {
		a.ctx, a.kill = context.WithCancelCause(context.Background())
		if lost != nil {
			a.kill(lost)
		}
	}
	return a.ctx
}

// Key returns the lock's key as given, without the client's key prefix.
func (m *Lock) Key() string { return m.key }

// Token returns the owner token stored in the key.
func (m *Lock) Token() Token { return m.token }

// Duration returns the TTL the lock was acquired with.
func (m *Lock) Duration() time.Duration { return m.ttl }

// ExpiresAtEstimate returns when the lease ends if nothing renews it, measured from
// when the last successful acquisition or renewal was sent. It is a local estimate, not
// an ownership check: use VerifyStillHeld for that.
func (m *Lock) ExpiresAtEstimate() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expiresAt
}

// safeDeadline is when protected work must have stopped: the expiry estimate less a
// margin for timers and scheduling that run late, as they do on a loaded machine.
func (m *Lock) safeDeadline() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.safeDeadlineLocked()
}

func (m *Lock) safeDeadlineLocked() time.Time { return safeDeadline(m.expiresAt, m.ttl) }

// Expired reports whether the lease has run out by the local estimate, less the margin
// KeepAliveContext keeps for timers that run late (a twentieth of the lease): from then
// on no protected work may run under it, even while RemainingEstimate is not yet 0,
// unless a renewal succeeds. It is an estimate, not an ownership check. Package
// coordination uses it to refuse a fenced acquisition whose reply came too late.
func (m *Lock) Expired() bool { return !time.Now().Before(m.safeDeadline()) }

// RemainingEstimate returns the time left until ExpiresAtEstimate, or 0.
func (m *Lock) RemainingEstimate() time.Duration {
	return max(time.Until(m.ExpiresAtEstimate()), 0)
}

// VerifyStillHeld asks the server whether the key still holds this lock's token.
func (m *Lock) VerifyStillHeld(ctx context.Context) (bool, error) {
	cn, err := m.l.route(ctx, m.key)
	if err != nil {
		return false, err
	}
	t, ok, err := m.l.owner(ctx, &cn, m.key)
	return ok && t == m.token, err
}

// ResetExpiry sets the lease to d from now (it does not add to the current expiry) if
// the lock is still held. It returns false after expiry, release or loss: do not go on
// with protected writes then, another process may own the lock. A keep-alive running
// meanwhile reschedules its next renewal, and its expiry deadline, from the new lease.
//
// If ctx ends, or the reply times out, after the command may have reached the server,
// the lock counts as lost, the connection that carried it is severed (CLIENT KILL ID
// from another connection, so the command cannot run late), and the error matches
// ErrOwnershipUncertain and conn.ErrOutcomeUnknown. ResetExpiry waits for the cut-off
// only while ctx is live: past ctx's deadline it returns, and the cut-off goes on
// without it. The renewal travels on the client's lock connection (one per server,
// beside the shared one): when another lock's cut-off kills that connection under it,
// the kill has settled it (it ran or never will) and, since a renewal can only extend
// this lock's own token, it is sent again on a fresh connection while the lease lasts
// rather than reported as lost.
func (m *Lock) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	ms, err := checkKeyTTL(m.key, d)
	if err != nil {
		return false, err
	}
	if m.lost() != nil {
		return false, nil
	}
	for {
		cn, err := m.l.severableRoute(ctx, m.key)
		if err != nil {
			m.l.report(ctx, observe.LockRenewed, time.Time{}, err)
			return false, err
		}
		start := time.Now()
		ok, err := m.l.extend(ctx, &cn, m.key, m.token, ms)
		switch {
		case killedUnder(ctx, err, cn.cn) && time.Now().Before(m.safeDeadline()):
			continue
		case conn.WasWritten(err):
			// Lose first: protected work must stop before anything else happens.
			m.loseReported(ctx, ErrOwnershipUncertain)
			m.l.cutOff(ctx, cn.cn)
			return false, fmt.Errorf("%w: %w", ErrOwnershipUncertain, err)
		case err != nil:
			m.l.report(ctx, observe.LockRenewed, time.Time{}, err)
			return false, err
		case !ok:
			m.loseReported(ctx, ErrLeaseLost)
			return false, nil
		}
		m.renewed(start.Add(d))
		m.l.report(ctx, observe.LockRenewed, time.Time{}, nil)
		return true, nil
	}
}

// renewed records the expiry of a successful renewal and moves a running keep-alive's
// schedule to it.
func (m *Lock) renewed(expiresAt time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostCause != nil {
		return
	}
	m.renewedBy += expiresAt.Sub(m.expiresAt)
	m.expiresAt = expiresAt
	if m.ka != nil {
		m.ka.reschedule(m.safeDeadlineLocked())
	}
}

// lost returns why the handle stopped trusting the lock, or nil.
func (m *Lock) lost() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lostCause
}

// lose records that the lock can no longer be trusted (the first cause wins) and ends
// every context that protects work under it. It reports whether cause was the first.
func (m *Lock) lose(cause error) (first bool) {
	m.mu.Lock()
	first = m.lostCause == nil
	if first {
		m.lostCause = cause
	}
	kill := m.alive.kill
	m.mu.Unlock()
	if kill != nil {
		kill(cause)
	}
	return first
}

// loseReported is lose for a lock found lost, which the observer hears of when cause is
// the one the handle keeps (not when a release came first).
func (m *Lock) loseReported(ctx context.Context, cause error) {
	if m.lose(cause) {
		m.reportLost(ctx, cause)
	}
}

// KeepAliveContext returns a context for work protected by the lock. While a
// keep-alive started by WithKeepAlive or KeepAlive has not been stopped (by Stop, or
// by a Release that left the lock held), it is the keep-alive's context, which ends
// with the keep-alive's cause if renewing fails. Otherwise it ends shortly before the
// current expiry estimate (a twentieth of the lease before), as it does after Stop:
// the lock is still held then, until its lease ends. Either way it ends when the
// handle learns the lock is lost or released; context.Cause says why (ErrLeaseLost,
// ErrOwnershipUncertain, ErrReleased, ErrLeaseExpired, a renewal's error, or
// context.DeadlineExceeded at expiry).
func (m *Lock) KeepAliveContext() context.Context {
	m.mu.Lock()
	ka, deadline, alive := m.ka, m.safeDeadlineLocked(), m.aliveLocked()
	m.mu.Unlock()
	if ka != nil {
		return ka.Context()
	}
	ctx, cancel := context.WithDeadline(alive, deadline)
	context.AfterFunc(ctx, cancel) // the timer goes when the context ends, not before
	return ctx
}

// cutOff severs cn, which carried a command of a lock whose outcome is unknown, and
// waits for the cut-off while ctx, the caller's, is live. The caller does not wait past
// the end of ctx, which is usually what made the outcome unknown, for a cut-off that
// can take up to severTimeout of its own (a dial or a CLIENT KILL that the server does
// not answer): a renewal or release bounded by a deadline returns by it, the keep-alive
// that sent it stops, and the cut-off goes on in the background. The lock was counted
// as lost before: nothing waits for the cut-off to learn that.
//
// The background cut-off runs on a goroutine the client owns (link.Client.Go), which
// ends when sever does: once the CLIENT KILL is answered, severTimeout after it began,
// or when the client closes, whichever comes first. Closing the client stops it
// because nothing is left to protect then: the lock was counted as lost, and a renewal
// that still runs can only lengthen the lease of a token nobody holds any more.
func (l *Locker) cutOff(ctx context.Context, cn *conn.Conn) {
	if ctx.Done() == nil {
		l.sever(context.Background(), cn) // the caller cannot stop waiting: no goroutine needed
		return
	}
	done := make(chan struct{})
	l.ln.Go(func(owner context.Context) {
		defer close(done)
		l.sever(owner, cn)
	})
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// sever makes sure a command written on cn can no longer run: CLIENT KILL ID of cn's
// CLIENT ID, sent on another connection, then cn is closed. It reports whether it
// severed; it cannot when the connection's ID is unknown or the user may not run CLIENT
// KILL (learned from NOPERM and remembered on cn). It gives up when parent ends, or
// severTimeout after it began.
func (l *Locker) sever(parent context.Context, cn *conn.Conn) bool {
	id, ok := cn.ID()
	caps := cn.Capabilities()
	if !ok || caps.Load(capSever) == conn.Unsupported {
		return false
	}
	if closedByServer(cn.Err()) {
		// The server ended the connection (restart, kill, timeout): nothing of ours can
		// run on it any more, and after a restart its CLIENT IDs start over, so the ID
		// could name a stranger's connection.
		return true
	}
	ctx, cancel := context.WithTimeout(parent, severTimeout)
	defer cancel()
	// The server that carried the command, even if the key is served elsewhere now.
	other, err := l.ln.DedicatedTo(ctx, cn.Addr())
	if err != nil {
		l.reportSever(cn.Addr(), id, err)
		return false
	}
	if other.Addr() != cn.Addr() {
		// Another server answers there now (a Sentinel failover): a CLIENT ID names a
		// client of one server only, and killing it on another would hit a stranger.
		l.ln.Release(other, true)
		caps.Store(capSevered, conn.Supported)
		cn.Close()
		return false
	}
	caps.Store(capSevered, conn.Supported) // before the kill: what dies of it sees the mark
	_, err = other.Do(ctx, "CLIENT", "KILL", "ID", id)
	l.ln.Release(other, !conn.WasWritten(err) && ctx.Err() == nil)
	if isNoPerm(err) {
		caps.Store(capSevered, conn.Unknown) // nothing was killed after all
		caps.Store(capSever, conn.Unsupported)
		l.reportSever(cn.Addr(), id, err)
		return false
	}
	severed := err == nil || resp.IsNoSuchClient(err)
	if severed {
		err = nil // no such client: the connection was gone already
	} else {
		// The kill failed (no answer, the client closing): closing our end does not
		// stop what the server has already read, so what dies of the close is
		// uncertain, not severed.
		caps.Store(capSevered, conn.Unknown)
	}
	cn.Close()
	l.reportSever(cn.Addr(), id, err)
	return severed
}

// capSevered marks, in a connection's capability memory, a connection that a lock
// severed on purpose (CLIENT KILL, or a close when the kill could not be sent): what
// other locks had in flight on it ran before the kill or never will, so a renewal
// among them may be sent again. A connection its server closed is not marked: a
// command caught in that is uncertain.
const capSevered = "lock.severed"

// killedUnder reports a command that failed, with its caller's ctx live, because a
// lock severed the connection cn that carried it: it ran before the kill or never will
// (unless nothing was sent at all), so a renewal or release may be sent again.
func killedUnder(ctx context.Context, err error, cn *conn.Conn) bool {
	var ce *conn.CallError
	return ctx.Err() == nil && errors.As(err, &ce) && cn.Capabilities().Load(capSevered) == conn.Supported
}

// closedByServer reports a connection broken by its server's end rather than by us.
func closedByServer(err error) bool {
	return err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

// severTimeout bounds a cut-off: it runs after the caller's own context has ended,
// in the background once the caller stopped waiting (cutOff).
const severTimeout = 5 * time.Second
