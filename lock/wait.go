package lock

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
)

// keyWatch is what a waiting acquisition sleeps on between tries when the client tracks
// keys: the client's (link.Client.WatchInTurn), or a test's script.
type keyWatch interface {
	Wait(ctx context.Context, limit time.Duration) error
	Stop()
}

// watchFunc arms the next watch of the key; prev is the one the last wait slept on (nil
// at first), which the new one succeeds (link.Client.WatchInTurn).
type watchFunc func(ctx context.Context, prev keyWatch) (keyWatch, error)

// waitLoop goes on trying after a first try that found the lock held (last == nil) or
// could not be sent (last matches conn.ErrNotSent), until a try acquires, the wait
// budget or the attempt cap is spent, or ctx ends. Between tries it sleeps on watch
// (nil without tracking) or for the retry strategy's pause, never past the retryIn a
// held try gave. A try that was not sent is followed by the strategy's pause even
// with tracking: there is no change to wait for.
//
// A polling pause also ends when a lock of hk's key is released through the same
// Locker (handoffs); the zero hk waits for no such release.
func waitLoop(ctx context.Context, o *acquireOptions, last error, retryIn time.Duration, try Try, watch watchFunc, hk handoffKey) (bool, error) {
	s := sleeper{o: o, watch: watch, hw: handoffWait{handoffKey: hk}}
	// The last watch is stopped however the wait ends: a watch woken in its turn then
	// wakes the next waiter of this client, which must look at the key in its place.
	defer s.stop()
	// The hand-off registration ends with the wait, passing on a wake-up it holds.
	defer s.hw.leave()
	giveUp := time.Now().Add(o.wait)
	for tries := 1; ; tries++ {
		left := time.Until(giveUp)
		if left <= 0 || (o.maxAttempts > 0 && tries >= o.maxAttempts) {
			// Out of budget: "held" when the last try found an owner, its error when it
			// never reached the server.
			return false, last
		}
		if retryIn > 0 {
			left = min(left, retryIn)
		}
		if err := s.pause(ctx, tries, left, last == nil); err != nil {
			return false, err
		}
		ok, in, err := try(ctx)
		switch {
		case ok:
			return true, nil
		case err != nil && !notSent(ctx, err):
			return false, err
		}
		last, retryIn = err, in
	}
}

// Try is one attempt of a waiting acquisition (Locker.Wait). ok says it acquired. When
// the resource was held, retryIn, if positive, is the longest the wait may sleep before
// the next try: the soonest a holder's lease can end without a release, which a key
// watch does not see when the resource is one field among others of a key.
type Try func(ctx context.Context) (ok bool, retryIn time.Duration, err error)

// plain makes a Try of an attempt that gives no retryIn.
func plain(try func(context.Context) (bool, error)) Try {
	return func(ctx context.Context) (bool, time.Duration, error) {
		ok, err := try(ctx)
		return ok, 0, err
	}
}

// sleeper is how a waiting acquisition sleeps between tries.
type sleeper struct {
	o     *acquireOptions
	watch watchFunc   // nil without tracking
	w     keyWatch    // the watch of the last sleep, kept until the next one succeeds it
	hw    handoffWait // with hw.h nil, no release wakes a polling pause
}

// pause sleeps before the next try: until the key changes when it can be watched and
// the last try found it held, else for the retry strategy's pause; never past left.
func (s *sleeper) pause(ctx context.Context, retry int, left time.Duration, held bool) error {
	if s.watch != nil && held {
		w, err := s.watch(ctx, s.w)
		if err == nil {
			s.w = w
			return w.Wait(ctx, left)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		// Tracking is unavailable for now (a dial failed, the server refused): poll
		// this once rather than give up the wait.
	}
	// Not watching while polling: let another waiter of the key have the turn.
	s.stop()
	d := min(s.o.retry.Delay(retry), left)
	if s.hw.h != nil && held {
		return s.hw.pause(ctx, d)
	}
	return sleep(ctx, d)
}

func (s *sleeper) stop() {
	if s.w != nil {
		s.w.Stop()
		s.w = nil
	}
}

// notSent says whether a failed try may be tried again within the wait: its command
// never reached the server, and the caller has not given up.
func notSent(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, conn.ErrNotSent)
}

// Waiting is the parsed options of one acquisition (WithWait, WithRetry,
// WithRetryEvery, WithMaxAttempts, WithKeepAlive), for primitives built on this package:
// package coordination's acquisitions take lock's Options and wait through
// Locker.Wait, so every primitive waits, and refuses bad options, as a lock does.
type Waiting struct{ o acquireOptions }

// NewWaiting parses opts as TryAcquire does: a nil option, a negative wait, an attempt
// cap under 1 or an invalid retry strategy is an error matching ErrInvalidArg.
func NewWaiting(opts ...Option) (Waiting, error) {
	o, err := buildOptions(opts)
	return Waiting{o: o}, err
}

// Waits says whether a first try that found the resource held is followed by more:
// WithWait gave a positive budget.
func (w Waiting) Waits() bool { return w.o.wait > 0 }

// KeepAlive says whether WithKeepAlive was given: the primitive starts its keep-alive
// once it is acquired.
func (w Waiting) KeepAlive() bool { return w.o.keepAlive }

// Wait is a waiting acquisition of another primitive, as TryAcquire's is: it makes a
// first try and, when w waits (WithWait) and the try found the resource held or could
// not be sent, goes on trying until a try acquires, the budget or the attempt cap of w
// is spent (false and nil when the last try found it held: "not acquired"), or ctx
// ends (its cause, an error). A try whose outcome is unknown ends the wait with its
// error, never read as held.
//
// Between tries it sleeps until key changes when the client tracks keys and key is not
// empty (the pause then ends at the budget or at a change, never later), otherwise for
// the retry strategy's pause; never past the retryIn the last try gave.
func (l *Locker) Wait(ctx context.Context, w Waiting, key string, try Try) (bool, error) {
	if err := l.check(); err != nil {
		return false, err
	}
	ok, retryIn, err := try(ctx)
	if ok || !w.Waits() || (err != nil && !notSent(ctx, err)) {
		return ok, err
	}
	var watch watchFunc
	if key != "" {
		watch = l.watcher(key)
	}
	// The wait keeps &o: a copy made here, so that a try that does not wait leaves w on
	// the stack.
	o := w.o
	return waitLoop(ctx, &o, err, retryIn, try, watch, handoffKey{})
}
