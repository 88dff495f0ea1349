package lock

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
)

// keyWatch is what a waiting acquisition sleeps on between tries when the client tracks
// keys: a *respire.KeyWatch, or a test's script.
type keyWatch interface {
	Wait(ctx context.Context, limit time.Duration) error
	Stop()
}

// watchFunc arms the next watch of the key; prev is the one the last wait slept on (nil
// at first), which the new one succeeds (respire.Client.WatchKeyInTurn).
type watchFunc func(ctx context.Context, prev keyWatch) (keyWatch, error)

// waitLoop goes on trying after a first try that found the lock held (last == nil) or
// could not be sent (last matches conn.ErrNotSent), until a try acquires, the wait
// budget or the attempt cap is spent, or ctx ends. Between tries it sleeps on watch
// (nil without tracking) or for the retry strategy's pause. A try that was not sent is
// followed by the strategy's pause even with tracking: there is no change to wait for.
func waitLoop(ctx context.Context, o *acquireOptions, last error,
	try func(context.Context) (bool, error), watch watchFunc) (bool, error) {
	s := sleeper{o: o, watch: watch}
	// The last watch is stopped however the wait ends: a watch woken in its turn then
	// wakes the next waiter of this client, which must look at the key in its place.
	defer s.stop()
	giveUp := time.Now().Add(o.wait)
	for tries := 1; ; tries++ {
		left := time.Until(giveUp)
		if left <= 0 || (o.maxAttempts > 0 && tries >= o.maxAttempts) {
			// Out of budget: "held" when the last try found an owner, its error when it
			// never reached the server.
			return false, last
		}
		if err := s.pause(ctx, tries, left, last == nil); err != nil {
			return false, err
		}
		ok, err := try(ctx)
		switch {
		case ok:
			return true, nil
		case err != nil && !notSent(ctx, err):
			return false, err
		}
		last = err
	}
}

// sleeper is how a waiting acquisition sleeps between tries.
type sleeper struct {
	o     *acquireOptions
	watch watchFunc // nil without tracking
	w     keyWatch  // the watch of the last sleep, kept until the next one succeeds it
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
	return sleep(ctx, min(s.o.retry.Delay(retry), left))
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
