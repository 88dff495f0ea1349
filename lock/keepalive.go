package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// KeepAlive renews a lock whenever less than half its lease is left, until stopped,
// and ends its context when it cannot: the protected work must stop then.
type KeepAlive struct {
	m      *Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	quit     chan struct{} // closed by halt: no more renewals
	quitOnce sync.Once
	moved    chan struct{} // the lease moved (a renewal): look at the schedule again
	expiry   *time.Timer   // ends the context when the lease may have ended; guarded by m.mu
}

// KeepAlive starts renewing the lock: whenever less than half its lease (Duration) is
// left, it sets the full lease from now. The schedule follows the lease's current
// expiry: a keep-alive started late in a lease renews at once, and one running while
// ResetExpiry is called renews half a lease before the new expiry. Its Context ends
// when ctx ends, when a renewal fails or finds the lock lost, when a renewal's outcome
// is uncertain (it is then fenced), when the lease runs out before a renewal
// succeeds, or when the lock is released; context.Cause says which: ErrLeaseLost,
// ErrOwnershipUncertain, the renewal's own error, ErrLeaseExpired, ErrReleased or
// ErrKeepAliveStopped. If a keep-alive already runs, it is returned.
func (m *Lock) KeepAlive(ctx context.Context) (*KeepAlive, error) {
	if err := m.lost(); err != nil {
		return nil, err
	}
	return m.startKeepAlive(ctx), nil
}

func (m *Lock) startKeepAlive(parent context.Context) *KeepAlive {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ka != nil {
		select {
		case <-m.ka.done:
		default:
			return m.ka
		}
	}
	k := &KeepAlive{m: m, done: make(chan struct{}), quit: make(chan struct{}), moved: make(chan struct{}, 1)}
	k.ctx, k.cancel = context.WithCancelCause(parent)
	// Whatever ends the lock's own context (loss found by another call) ends the
	// keep-alive's too.
	alive := m.aliveLocked()
	stop := context.AfterFunc(alive, func() { k.cancel(context.Cause(alive)) })
	// The context must end when the lease may have ended, whether or not the renewal
	// goroutine gets to run in time; every renewal moves this deadline on.
	k.expiry = time.AfterFunc(time.Until(m.safeDeadlineLocked()), func() { k.end(ErrLeaseExpired) })
	m.ka = k
	go func() {
		defer close(k.done)
		defer stop()
		defer k.stopExpiry()
		k.run()
	}()
	return k
}

// Context returns the context protected work should run under.
func (k *KeepAlive) Context() context.Context { return k.ctx }

// Done is closed when the keep-alive has stopped renewing.
func (k *KeepAlive) Done() <-chan struct{} { return k.done }

// Stop stops renewing, without releasing the lock (it stays held until its lease ends
// or it is released), and waits for a renewal in progress to finish. The context ends
// with ErrKeepAliveStopped; the lock's KeepAliveContext is from then on the one of a
// lock without keep-alive, which ends shortly before the expiry estimate.
func (k *KeepAlive) Stop() {
	k.halt()
	k.cancel(ErrKeepAliveStopped)
	<-k.done
	k.m.detach(k)
}

// halt stops the renewals and leaves the context alone: Release ends it once it knows
// what became of the lock.
func (k *KeepAlive) halt() { k.quitOnce.Do(func() { close(k.quit) }) }

func (k *KeepAlive) halted() bool {
	select {
	case <-k.quit:
		return true
	default:
		return false
	}
}

// detach makes the lock forget k, a keep-alive stopped with the lock still held.
func (m *Lock) detach(k *KeepAlive) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ka == k {
		m.ka = nil
	}
}

// reschedule moves the keep-alive to a lease that now ends safely at deadline. The
// caller holds m.mu.
func (k *KeepAlive) reschedule(deadline time.Time) {
	select {
	case <-k.done:
		return // its timer is stopped for good
	default:
	}
	k.expiry.Reset(time.Until(deadline))
	select {
	case k.moved <- struct{}{}:
	default: // a look at the schedule is due already
	}
}

func (k *KeepAlive) stopExpiry() {
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	k.expiry.Stop()
}

// renewAt is when the keep-alive renews the lease as it stands: once half of it is
// left.
func (m *Lock) renewAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expiresAt.Add(-m.ttl / 2)
}

func (k *KeepAlive) run() {
	for {
		// What moved the lease before renewAt reads it is taken into account by the
		// read; what moves it later signals again.
		select {
		case <-k.moved:
		default:
		}
		if wait := time.Until(k.m.renewAt()); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-k.moved:
				t.Stop()
				continue
			case <-k.ctx.Done():
				t.Stop()
				return
			case <-k.quit:
				t.Stop()
				return
			}
		}
		if k.halted() || k.ctx.Err() != nil {
			return
		}
		if err := k.renew(); err != nil {
			if !k.halted() {
				k.end(err)
			}
			return
		}
	}
}

// errHalted ends renew when the keep-alive was halted between two tries.
var errHalted = errors.New("lock: keep-alive halted")

// renew extends the lease once. A renewal that was never sent (the connection broke
// first), or that a restarted server refused with LOADING while it reads its dataset
// back (the lease may be in it), is tried again while the lease lasts; anything else
// ends the keep-alive.
func (k *KeepAlive) renew() error {
	m := k.m
	for {
		// The renewal must finish while the lease still protects the work. Stopping the
		// keep-alive does not cancel it: that would fence a healthy connection.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(k.ctx), m.safeDeadline())
		ok, err := m.ResetExpiry(ctx, m.ttl)
		// Only the lease's deadline can end ctx; read it before cancel does.
		leaseOver := ctx.Err() != nil
		cancel()
		switch {
		case err == nil && ok:
			return nil
		case err == nil:
			if cause := m.lost(); cause != nil {
				return cause
			}
			return ErrLeaseLost
		case k.ctx.Err() != nil:
			return context.Cause(k.ctx)
		case conn.WasWritten(err):
			return err // it says ErrOwnershipUncertain
		case leaseOver:
			// Unsent because the lease ran out first (a process paused past it
			// wakes here): that is the loss, whichever of this and the expiry
			// timer runs first.
			return ErrLeaseExpired
		case (errors.Is(err, conn.ErrNotSent) || resp.IsLoading(err)) && m.RemainingEstimate() > 0:
			t := time.NewTimer(retryNotSent)
			select {
			case <-t.C:
				continue
			case <-k.ctx.Done():
				t.Stop()
				return context.Cause(k.ctx)
			case <-k.quit:
				t.Stop()
				return errHalted
			}
		case resp.IsLoading(err):
			return ErrLeaseExpired // the server loaded until the lease ran out
		}
		return err
	}
}

// retryNotSent spaces the retries of a renewal that never reached the server.
const retryNotSent = 20 * time.Millisecond
