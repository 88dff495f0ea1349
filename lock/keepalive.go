package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// Renewable is a lease a KeepAlive renews: a *Lock, or a lease of a primitive built on
// this package (package coordination's permits, read/write leases and Redlocks), which
// starts its keep-alive through a Keeper. Every keep-alive runs the same schedule and
// ends its context for the same causes, whatever the lease.
type Renewable interface {
	// Duration is the lease the keep-alive renews for, whenever less than half of it
	// is left.
	Duration() time.Duration
	// ExpiresAtEstimate is when the lease ends unless it is renewed; the keep-alive's
	// context ends a twentieth of Duration before it. Zero once the lease is known
	// lost or released.
	ExpiresAtEstimate() time.Time
	// ResetExpiry sets the lease to d from now, and reports false once the lease is
	// lost or released.
	ResetExpiry(ctx context.Context, d time.Duration) (bool, error)
	// Lost returns why the handle stopped trusting the lease, or nil.
	Lost() error
	// ReportLost is told that the keep-alive ended its context with cause, a loss it
	// found (a failed renewal, a lease that ran out): the lease reports it to its
	// observer, once.
	ReportLost(ctx context.Context, cause error)
}

// KeepAlive renews a lock whenever less than half its lease is left, until stopped,
// and ends its context when it cannot: the protected work must stop then.
type KeepAlive struct {
	r      Renewable
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	detach func(*KeepAlive) // makes the lease forget a keep-alive stopped with the lease still held

	quit     chan struct{} // closed by halt: no more renewals
	quitOnce sync.Once
	moved    chan struct{} // the lease moved (a renewal): look at the schedule again

	mu       sync.Mutex
	expiry   *time.Timer // ends the context when the lease may have ended
	finished bool        // the renewals have ended: expiry stays stopped
}

// KeepAlive starts renewing the lock: whenever less than half its lease (Duration) is
// left, it sets the full lease from now. The schedule follows the lease's current
// expiry: a keep-alive started late in a lease renews at once, and one running while
// ResetExpiry is called renews half a lease before the new expiry. Its Context ends
// when ctx ends, when a renewal fails or finds the lock lost, when a renewal's outcome
// is uncertain (it is then cut off), when the lease runs out before a renewal
// succeeds, or when the lock is released; context.Cause says which: ErrLeaseLost,
// ErrOwnershipUncertain, the renewal's own error, ErrLeaseExpired, ErrReleased or
// ErrKeepAliveStopped. If a keep-alive already runs, it is returned.
//
// While a Release is in flight, it starts nothing (no renewal may run with or after the
// delete): it returns the keep-alive the release halts, or one that never renews; either
// ends, before Release returns, with the release's cause.
func (m *Lock) KeepAlive(ctx context.Context) (*KeepAlive, error) {
	return m.startKeepAlive(ctx)
}

func (m *Lock) startKeepAlive(parent context.Context) (*KeepAlive, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch rs := &m.rel; {
	case m.lostCause != nil:
		return nil, m.lostCause
	case rs.running && m.ka != nil && m.ka.ctx.Err() == nil:
		return m.ka, nil // the release halts it and settles it
	case rs.running:
		if rs.joined == nil {
			rs.joined = haltedKeepAlive(parent, m.detach)
		}
		return rs.joined, nil
	case m.ka.running():
		return m.ka, nil
	}
	m.ka = startKeepAlive(parent, (*lockLease)(m), m.aliveLocked(), m.safeDeadlineLocked(), m.detach)
	return m.ka, nil
}

// startKeepAlive starts renewing r under a context made from parent, which alive also
// ends (whatever ends the lease's own context: a loss another call found). deadline is
// r's safe deadline as it stands, which the caller reads in the same critical section
// that publishes the keep-alive to what moves r's lease, so no move goes unseen.
func startKeepAlive(parent context.Context, r Renewable, alive context.Context, deadline time.Time, detach func(*KeepAlive)) *KeepAlive {
	k := &KeepAlive{r: r, done: make(chan struct{}), quit: make(chan struct{}), moved: make(chan struct{}, 1), detach: detach}
	k.ctx, k.cancel = context.WithCancelCause(parent)
	stop := context.AfterFunc(alive, func() { k.cancel(context.Cause(alive)) })
	// The context must end when the lease may have ended, whether or not the renewal
	// goroutine gets to run in time; every renewal moves this deadline on.
	k.expiry = time.AfterFunc(time.Until(deadline), func() { k.end(ErrLeaseExpired) })
	go func() {
		defer close(k.done)
		defer stop()
		defer k.stopExpiry()
		k.run()
	}()
	return k
}

// haltedKeepAlive returns a keep-alive that never renews, for a keep-alive asked for
// while a release is in flight: the release settles it, and its context ends with the
// release's cause (or with parent).
func haltedKeepAlive(parent context.Context, detach func(*KeepAlive)) *KeepAlive {
	k := &KeepAlive{done: make(chan struct{}), quit: make(chan struct{}), moved: make(chan struct{}, 1), detach: detach, finished: true}
	k.ctx, k.cancel = context.WithCancelCause(parent)
	close(k.quit)
	close(k.done)
	return k
}

// running says whether k (nil or not) still renews or may: a keep-alive whose
// goroutine has not ended.
func (k *KeepAlive) running() bool {
	if k == nil {
		return false
	}
	select {
	case <-k.done:
		return false
	default:
		return true
	}
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
	k.detach(k)
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

// haltForRelease stops the renewals before a release deletes the lease, and waits for
// a renewal in progress: none may run with or after the delete, whose reply would say
// the lease is lost when it was released. stopped is false when ctx ended first, or by
// passed (zero: no bound), with a not-sent error for the release.
func (k *KeepAlive) haltForRelease(ctx context.Context, by time.Time) (stopped bool, err error) {
	k.halt()
	var expired <-chan time.Time
	if !by.IsZero() {
		select {
		case <-k.done:
			return true, nil // no renewal ran: no timer needed
		default:
		}
		t := time.NewTimer(time.Until(by))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-k.done:
		return true, nil
	case <-ctx.Done():
		return false, &conn.CallError{Err: context.Cause(ctx)}
	case <-expired:
		return false, &conn.CallError{Err: context.DeadlineExceeded}
	}
}

// settle ends the context of a keep-alive halted for a release, before the release
// returns: with lost, what the release learned became of the lease (ErrReleased,
// ErrLeaseLost, ErrOwnershipUncertain), or, when the lease is still held (lost is
// nil), with ErrKeepAliveStopped and the release's error. A keep-alive that stopped
// is then forgotten; one whose last renewal still runs stays with the lease, so that
// the next release waits for it and no second one starts beside it.
func (k *KeepAlive) settle(lost, err error, stopped bool) {
	if lost != nil {
		k.cancel(lost)
		return
	}
	k.cancel(fmt.Errorf("%w: the release failed and the lock is still held: %w", ErrKeepAliveStopped, err))
	if stopped {
		k.detach(k)
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

// reschedule moves the keep-alive to a lease that now ends safely at deadline. Calls
// are ordered as the renewals they follow (the lease's own lock, or a re-read of the
// lease after each renewal), so the last one stands.
func (k *KeepAlive) reschedule(deadline time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.finished {
		return // its timer is stopped for good
	}
	k.expiry.Reset(time.Until(deadline))
	select {
	case k.moved <- struct{}{}:
	default: // a look at the schedule is due already
	}
}

func (k *KeepAlive) stopExpiry() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.finished = true
	k.expiry.Stop()
}

// safeDeadline is when protected work under a lease of d that ends at expiresAt must
// have stopped: a margin before it for timers and scheduling that run late, as they do
// on a loaded machine.
func safeDeadline(expiresAt time.Time, d time.Duration) time.Time { return expiresAt.Add(-d / 20) }

// renewAt is when the keep-alive renews the lease as it stands: once half of it is
// left.
func (k *KeepAlive) renewAt() time.Time { return k.r.ExpiresAtEstimate().Add(-k.r.Duration() / 2) }

func (k *KeepAlive) run() {
	for {
		// What moved the lease before renewAt reads it is taken into account by the
		// read; what moves it later signals again.
		select {
		case <-k.moved:
		default:
		}
		if wait := time.Until(k.renewAt()); wait > 0 {
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

// end ends the keep-alive's context with cause, for a renewal that failed or a lease
// that ran out, and reports the loss. A context that ended already was ended by what
// reports its own outcome (a release, a loss another call found, its parent).
func (k *KeepAlive) end(cause error) {
	if k.ctx.Err() != nil {
		return
	}
	k.cancel(cause)
	if errors.Is(context.Cause(k.ctx), cause) {
		k.r.ReportLost(k.ctx, cause)
	}
}

// errHalted ends renew when the keep-alive was halted between two tries.
var errHalted = errors.New("lock: keep-alive halted")

// renew extends the lease once. A renewal that was never sent (the connection broke
// first), or that a restarted server refused with LOADING while it reads its dataset
// back (the lease may be in it), is tried again while the lease lasts; anything else
// ends the keep-alive.
func (k *KeepAlive) renew() error {
	r := k.r
	for {
		// The renewal must finish while the lease still protects the work. Stopping the
		// keep-alive does not cancel it: that would sever a healthy connection.
		d := r.Duration()
		ctx, cancel := context.WithDeadline(context.WithoutCancel(k.ctx), safeDeadline(r.ExpiresAtEstimate(), d))
		ok, err := r.ResetExpiry(ctx, d)
		// Only the lease's deadline can end ctx; read it before cancel does.
		leaseOver := ctx.Err() != nil
		cancel()
		switch {
		case err == nil && ok:
			return nil
		case err == nil:
			if cause := r.Lost(); cause != nil {
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
		case (errors.Is(err, conn.ErrNotSent) || resp.IsLoading(err)) && time.Now().Before(r.ExpiresAtEstimate()):
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

// lockLease is a *Lock as the Renewable its keep-alive renews.
type lockLease Lock

func (l *lockLease) Duration() time.Duration      { return (*Lock)(l).Duration() }
func (l *lockLease) ExpiresAtEstimate() time.Time { return (*Lock)(l).ExpiresAtEstimate() }
func (l *lockLease) Lost() error                  { return (*Lock)(l).lost() }
func (l *lockLease) ResetExpiry(ctx context.Context, d time.Duration) (bool, error) {
	return (*Lock)(l).ResetExpiry(ctx, d)
}
func (l *lockLease) ReportLost(ctx context.Context, cause error) { (*Lock)(l).reportLost(ctx, cause) }
