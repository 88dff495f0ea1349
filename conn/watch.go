package conn

import "context"

// A connection watches at most one context at a time, with one context.AfterFunc that
// is registered when the context is first watched and reused while callers keep
// passing it. When the context ends, the watcher
//
//   - wakes a read that a caller with that context is doing itself (inlineread.go), and
//   - wakes every call of that context that waits on its done channel alone.
//
// The second is what makes a shared context cheap. A caller that must notice its
// context ending would otherwise select on the context's Done channel as well as its
// own, and when many goroutines share one context, as the workers of a pool do, every
// one of those selects takes the lock of that one channel: under load it becomes the
// busiest lock in the process. With the watcher, the callers of the watched context
// wait on their own channels only.
//
// Registering a watcher costs allocations, so for waiting callers a context becomes the
// watched one only when it comes twice in a row, and only when no waiting call depends
// on the current watcher; a context used for a single command, as a per-request context
// often is, keeps the select. (A caller that reads its own reply on a quiet connection
// does need the watcher, and moves it to its context if nobody else waits on it.)
// Contexts are matched by their Done channel: contexts that share it
// (context.WithValue over another) end together.

// watchCallLocked lets cl wait on its done channel alone if its context is, or may
// become, the watched one.
func (c *Conn) watchCallLocked(ctx context.Context, cl *call) {
	done := ctx.Done()
	if done == c.watch.done && isClosed(done) {
		return // the watcher has fired already and will not again: select
	}
	if done != c.watch.done {
		if done != c.watch.lastDone || c.watch.waiters > 0 || c.watch.interruptible {
			c.watch.lastDone = done
			return
		}
		c.setWatchLocked(ctx)
	}
	cl.watched, cl.watchHeld = true, true
	c.watch.waiters++
}

// releaseWatchLocked says that cl no longer needs the watcher to wake it.
func (c *Conn) releaseWatchLocked(cl *call) {
	if cl.watchHeld {
		cl.watchHeld = false
		c.watch.waiters--
	}
}

// watchLocked arms the interruption of a read its caller does itself, for ctx. It
// returns false when the watcher is busy with another context, or ctx has ended.
func (c *Conn) watchLocked(ctx context.Context) bool {
	if isClosed(ctx.Done()) {
		return false // a watcher that fired already would not interrupt the read
	}
	if ctx.Done() != c.watch.done {
		if c.watch.waiters > 0 {
			return false
		}
		c.setWatchLocked(ctx)
	}
	c.watch.interruptible = true
	return true
}

// isClosed reports whether a Done channel is closed, without waiting.
func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// setWatchLocked moves the watcher to ctx.
func (c *Conn) setWatchLocked(ctx context.Context) {
	if c.watch.cancel != nil {
		c.watch.cancel()
	}
	c.watch.ctx, c.watch.done = ctx, ctx.Done()
	c.watch.cancel = context.AfterFunc(ctx, c.watch.interruptFn)
}

// unwatchLocked disarms the interruption of a read and undoes one that happened, and
// gives the socket back the connection's read deadline after a read bounded by a
// call's deadline (inlineread.go).
func (c *Conn) unwatchLocked() {
	c.watch.interruptible = false
	restore := c.watch.interrupted || c.r.by != 0
	c.watch.interrupted = false
	c.r.by = 0
	if restore {
		c.nc.SetReadDeadline(c.r.deadline)
	}
}

// interrupt runs when a watched context ends. It checks the context still watched, as
// a watcher replaced meanwhile may run late.
func (c *Conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watch.ctx == nil || c.watch.ctx.Err() == nil {
		return
	}
	if c.watch.interruptible && !c.watch.interrupted {
		c.watch.interrupted = true
		c.nc.SetReadDeadline(pastDeadline)
	}
	if c.watch.waiters == 0 {
		return
	}
	wake := func(cl *call) {
		if cl.watchHeld {
			c.releaseWatchLocked(cl)
			cl.ctxEnded = true
			cl.done <- struct{}{} // never blocks: a call that has not replied has no token
		}
	}
	for _, cl := range c.w.queued {
		wake(cl)
	}
	c.r.inflight.each(wake)
}

// stopWatchingLocked drops the watcher when the connection closes.
func (c *Conn) stopWatchingLocked() {
	if c.watch.cancel != nil {
		c.watch.cancel()
	}
	c.watch.cancel, c.watch.ctx, c.watch.done, c.watch.lastDone = nil, nil, nil, nil
	c.watch.waiters = 0
}
