package lock

import (
	"context"
	"sync"
	"time"
)

// Keeper is the keep-alive side of a lease handle built on this package (package
// coordination's permits, read/write leases and Redlocks): it runs one KeepAlive of
// the lease at a time, the one a *Lock runs, moves it with every renewal, ends it when
// the handle finds the lease lost, and halts it before a release. Its zero value is
// ready; it is safe for concurrent use.
//
// Lock order: a Keeper calls the Renewable's methods with its own lock held, so the
// handle calls the Keeper with none of the locks those methods take.
type Keeper struct {
	mu    sync.Mutex
	ka    *KeepAlive
	lost  error       // the first cause given to Lose
	alive lossContext // ends with lost

	// From Halt to Settle a release is in flight (releasing): the keep-alive it halted,
	// and one Start made meanwhile (joined), which never renews. Releases of one handle
	// run one at a time (the handle's own release turn).
	releasing bool
	halted    *KeepAlive
	stopped   bool
	joined    *KeepAlive
}

// aliveLocked returns the context that ends when the lease is lost or released.
func (kp *Keeper) aliveLocked() context.Context { return kp.alive.get(kp.lost) }

// Start returns the running keep-alive of r, or starts one under parent. It returns
// the cause given to Lose once the lease is lost or released, and ErrLeaseLost for a
// lease whose expiry estimate is zero (r no longer owns it) with no cause yet. While a
// release is in flight (from Halt to Settle) it starts nothing, since no renewal may run
// with or after the release's delete: it returns the keep-alive the release halted, or
// one that never renews, whose context ends with the release's cause when it settles.
func (kp *Keeper) Start(parent context.Context, r Renewable) (*KeepAlive, error) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	switch {
	case kp.lost != nil:
		return nil, kp.lost
	case kp.releasing && kp.halted != nil && kp.halted.ctx.Err() == nil:
		return kp.halted, nil
	case kp.releasing:
		if kp.joined == nil {
			kp.joined = haltedKeepAlive(parent, kp.detach)
		}
		return kp.joined, nil
	case kp.ka.running():
		return kp.ka, nil
	case r.ExpiresAtEstimate().IsZero():
		return nil, ErrLeaseLost
	}
	kp.ka = startKeepAlive(parent, r, kp.aliveLocked(), safeDeadline(r.ExpiresAtEstimate(), r.Duration()), kp.detach)
	return kp.ka, nil
}

func (kp *Keeper) detach(k *KeepAlive) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if kp.ka == k {
		kp.ka = nil
	}
}

// Moved tells the running keep-alive that r's lease moved: a renewal succeeded,
// whoever sent it. It reads the lease's expiry again and reschedules the next renewal
// and the expiry deadline from it, so that a shorter lease set by hand is renewed in
// time and a longer one does not end the context at the old expiry.
func (kp *Keeper) Moved(r Renewable) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	if kp.ka != nil {
		// Read under kp.mu: of two renewals' calls, the later one reads the later
		// expiry, and it is the last to reschedule.
		kp.ka.reschedule(safeDeadline(r.ExpiresAtEstimate(), r.Duration()))
	}
}

// Lose records that the handle stopped trusting the lease with cause (the first cause
// is kept) and ends the running keep-alive's context with it before it returns.
func (kp *Keeper) Lose(cause error) {
	kp.mu.Lock()
	end := kp.loseLocked(cause)
	kp.mu.Unlock()
	end()
}

// loseLocked records cause as Lose does, and returns what ends the contexts, to be
// called with kp.mu unlocked.
func (kp *Keeper) loseLocked(cause error) (end func()) {
	if kp.lost == nil {
		kp.lost = cause
	}
	ka, kill := kp.ka, kp.alive.kill
	return func() {
		if ka != nil {
			ka.cancel(cause)
		}
		if kill != nil {
			kill(cause)
		}
	}
}

// Lost returns the cause given to Lose, or nil.
func (kp *Keeper) Lost() error {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	return kp.lost
}

// Context returns a context for work protected by r, as Lock.KeepAliveContext does:
// the running keep-alive's, or, without one, a context that ends a twentieth of r's
// Duration before its expiry estimate; either ends when the lease is lost or released,
// with the cause given to Lose.
func (kp *Keeper) Context(r Renewable) context.Context {
	kp.mu.Lock()
	ka, alive := kp.ka, kp.aliveLocked()
	if ka == nil {
		defer kp.mu.Unlock()
		ctx, cancel := context.WithDeadline(alive, safeDeadline(r.ExpiresAtEstimate(), r.Duration()))
		context.AfterFunc(ctx, cancel) // the timer goes when the context ends, not before
		return ctx
	}
	kp.mu.Unlock()
	return ka.Context()
}

// Halt stops the renewals of the running keep-alive before a release deletes the
// lease, and waits for a renewal in progress: none may run with or after the delete.
// When ctx ends first it returns an error matching conn.ErrNotSent: the release must
// not be sent, and is settled with that error. Every Halt is followed by one Settle.
func (kp *Keeper) Halt(ctx context.Context) error {
	kp.mu.Lock()
	ka := kp.ka
	kp.releasing, kp.halted, kp.stopped = true, ka, true
	kp.mu.Unlock()
	if ka == nil {
		return nil
	}
	stopped, err := ka.haltForRelease(ctx, time.Time{})
	kp.mu.Lock()
	kp.stopped = stopped
	kp.mu.Unlock()
	return err
}

// Settle ends the context of the keep-alive Halt halted, once the release knows what
// became of the lease: lost is the cause when it learned (lock.ErrReleased,
// ErrLeaseLost, ErrOwnershipUncertain), which Lose records; nil when the lease is
// still held, and the keep-alive's context ends with ErrKeepAliveStopped and the
// release's err. A keep-alive whose last renewal still runs stays, so that the next
// release waits for it. A keep-alive Start made during the release ends the same way.
func (kp *Keeper) Settle(lost, err error) {
	kp.mu.Lock()
	ka, stopped, joined := kp.halted, kp.stopped, kp.joined
	kp.releasing, kp.halted, kp.joined = false, nil, nil
	// The cause is recorded as the release ends, so that a Start from then on returns
	// it rather than start renewing a lease the release deleted.
	end := func() {}
	if lost != nil {
		end = kp.loseLocked(lost)
	}
	kp.mu.Unlock()
	end()
	if ka != nil {
		ka.settle(lost, err, stopped)
	}
	if joined != nil {
		joined.settle(lost, err, true)
	}
}
