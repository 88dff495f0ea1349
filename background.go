package respire

import (
	"context"
	"sync"
)

// background runs the goroutines a client starts for the packages built on it: work
// that outlives the call that began it, such as a lock's cut-off once its caller's
// context has ended. Their context ends when the client closes, and Close waits for
// them, so that nothing the client started runs after Close returns.
type background struct {
	mu     sync.Mutex
	ctx    context.Context // nil until the first run
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup
}

// run runs f on a goroutine of b's, or on the caller's with an ended context once b is
// closed.
func (b *background) run(f func(ctx context.Context)) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		f(ctx)
		return
	}
	if b.ctx == nil {
		b.ctx, b.cancel = context.WithCancel(context.Background())
	}
	ctx := b.ctx
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		f(ctx)
	}()
}

// close ends the context of every goroutine of b's and waits for them to return.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	cancel := b.cancel
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	b.wg.Wait()
}
