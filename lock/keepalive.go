package lock

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
)

// KeepAlive renews a lock at half its lease until stopped, and ends its context when
// it cannot: the protected work must stop then.
type KeepAlive struct {
	m      *Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// KeepAlive starts renewing the lock every half lease (each renewal sets the full lease
// from now). Its Context ends when ctx ends, when a renewal fails or finds the lock
// lost, or when a renewal's outcome is uncertain (it is then fenced); context.Cause
// says which: ErrLeaseLost, ErrOwnershipUncertain, the renewal's own error, ErrReleased
// or ErrKeepAliveStopped. If a keep-alive already runs, it is returned.
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
	k := &KeepAlive{m: m, done: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancelCause(parent)
	// Whatever ends the lock's own context (release, loss found by another call) ends
	// the keep-alive's too.
	alive := m.aliveLocked()
	stop := context.AfterFunc(alive, func() { k.cancel(context.Cause(alive)) })
	m.ka = k
	// The context must end when the lease may have ended, whether or not the renewal
	// goroutine gets to run in time; each successful renewal moves this deadline on.
	expiry := time.AfterFunc(time.Until(m.safeDeadlineLocked()), func() { k.cancel(ErrLeaseExpired) })
	go func() {
		defer close(k.done)
		defer stop()
		defer expiry.Stop()
		k.run(expiry)
	}()
	return k
}

// Context returns the context protected work should run under.
func (k *KeepAlive) Context() context.Context { return k.ctx }

// Done is closed when the keep-alive has stopped renewing.
func (k *KeepAlive) Done() <-chan struct{} { return k.done }

// Stop stops renewing, without releasing the lock (it stays held until its lease ends
// or it is released), and waits for a renewal in progress to finish. The context ends
// with ErrKeepAliveStopped.
func (k *KeepAlive) Stop() { k.stop(ErrKeepAliveStopped, true) }

func (k *KeepAlive) stop(cause error, wait bool) {
	k.cancel(cause)
	if wait {
		<-k.done
	}
}

func (k *KeepAlive) run(expiry *time.Timer) {
	m := k.m
	interval := m.ttl / 2
	for {
		if sleep(k.ctx, interval) != nil {
			return
		}
		if err := k.renew(); err != nil {
			k.cancel(err)
			return
		}
		expiry.Reset(time.Until(m.safeDeadline()))
	}
}

// renew extends the lease once. A renewal that was never sent (the connection broke
// first) is tried again while the lease lasts; anything else ends the keep-alive.
func (k *KeepAlive) renew() error {
	m := k.m
	for {
		// The renewal must finish while the lease still protects the work. Stopping the
		// keep-alive does not cancel it: that would fence a healthy connection.
		ctx, cancel := context.WithDeadline(context.WithoutCancel(k.ctx), m.safeDeadline())
		ok, err := m.ResetExpiry(ctx, m.ttl)
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
			return errors.Join(ErrOwnershipUncertain, err)
		case errors.Is(err, conn.ErrNotSent) && m.RemainingEstimate() > 0:
			if sleep(k.ctx, retryNotSent) != nil {
				return context.Cause(k.ctx)
			}
			continue
		}
		return err
	}
}

// retryNotSent spaces the retries of a renewal that never reached the server.
const retryNotSent = 20 * time.Millisecond
