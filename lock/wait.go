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

// waitLoop goes on trying after a first try that found the lock held (last == nil) or
// could not be sent (last matches conn.ErrNotSent), until a try acquires, the wait
// budget or the attempt cap is spent, or ctx ends. Between tries it sleeps on watch
// (nil without tracking) or for the retry strategy's pause. A try that was not sent is
// followed by the strategy's pause even with tracking: there is no change to wait for.
func waitLoop(ctx context.Context, o *acquireOptions, last error,
	try func(context.Context) (bool, error), watch func(context.Context) (keyWatch, error)) (bool, error) {
	giveUp := time.Now().Add(o.wait)
	for tries := 1; ; tries++ {
		left := time.Until(giveUp)
		if left <= 0 || (o.maxAttempts > 0 && tries >= o.maxAttempts) {
			// Out of budget: "held" when the last try found an owner, its error when it
			// never reached the server.
			return false, last
		}
		w := watch
		if last != nil {
			w = nil
		}
		if err := pause(ctx, o, tries, left, w); err != nil {
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

// pause sleeps before the next try: until the key changes when it can be watched, else
// for the retry strategy's pause; never past left.
func pause(ctx context.Context, o *acquireOptions, retry int, left time.Duration, watch func(context.Context) (keyWatch, error)) error {
	if watch != nil {
		w, err := watch(ctx)
		if err == nil {
			defer w.Stop()
			return w.Wait(ctx, left)
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		// Tracking is unavailable for now (a dial failed, the server refused): poll
		// this once rather than give up the wait.
	}
	return sleep(ctx, min(o.retry.delay(retry), left))
}

// notSent says whether a failed try may be tried again within the wait: its command
// never reached the server, and the caller has not given up.
func notSent(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, conn.ErrNotSent)
}
