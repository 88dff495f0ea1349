package conn

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// A connection with a push handler has its reader goroutine read all the time, so a
// push is handed on as soon as that goroutine runs. But when it runs is up to the Go
// scheduler, and a CPU-bound process can keep it waiting for hundreds of milliseconds:
// a goroutine woken by the network poller, or preempted halfway through a frame, goes
// to the global run queue, which a busy scheduler looks at once every 61 time slices
// of 10 ms. Goroutines serving client-side cache hits never block, so 16 of them on
// two cores are exactly such a load, and an invalidation could sit read but unapplied
// while every hit returned the value it should have removed.
//
// So whoever must have seen every push before acting (a cache hit) asks the
// connection, which compares two counts: the bytes of its stream that have reached
// the socket, which only the kernel knows (TCP_INFO), and the bytes of the frames its
// reader has handed on. When the second has reached what the first was at some
// moment, every push that had arrived by that moment has been applied; that moment is
// published, and a hit within maxLag of it needs no system call. A hit after that
// catches up itself: it measures, waits for the reader to hand on that much, and
// publishes. Waiting parks the hit's goroutine, which is also what lets the reader run.

// streamPosition is how far a connection's reader has got through the stream it
// receives, and the newest moment it is known to have caught up with.
type streamPosition struct {
	// caughtUp is read by every cache hit, so it has a cache line of its own, apart
	// from the counters the reader writes on every frame.
	_        [64]byte
	caughtUp atomic.Int64 // nanotime: every byte that had reached the socket then is handled
	_        [56]byte

	read      int64         // bytes read from the socket (or before it was ours); by the holder of the read role only
	handled   atomic.Int64  // bytes of the frames handed on (replies dispatched, pushes handled)
	waiting   atomic.Bool   // a CatchUp waits for handled to move; see advance
	measuring chan struct{} // of capacity one: held by the CatchUp that measures; nil when not measurable (startCounting)
	moved     chan struct{} // under Conn.mu: closed when handled moves while someone waits
}

// startCounting readies a connection with a push handler for CatchUp, before anything
// is written. The count starts from the kernel's: a dialer may have read a proxy's
// handshake off the socket already, bytes the reader will never see. A kernel that
// cannot count (Linux before 4.1) leaves the connection unmeasurable.
func (c *Conn) startCounting() {
	if !c.r.alwaysRead || c.raw == nil || !kernelCounts {
		return
	}
	n, err := kernelReceived(c.raw)
	if err != nil {
		return
	}
	c.r.pos.read = n
	c.r.pos.handled.Store(n)
	c.r.pos.measuring = make(chan struct{}, 1)
}

// countingReader is the transport as the read buffer sees it: it counts what it reads.
type countingReader struct{ c *Conn }

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.c.nc.Read(p)
	r.c.r.pos.read += int64(n)
	return n, err
}

var _ io.Reader = countingReader{}

// ErrCannotMeasure is matched by the error of CatchUp on a connection whose progress
// through its stream cannot be compared with the kernel's count: one without a push
// handler, under TLS, or on a platform without TCP_INFO.
var ErrCannotMeasure = errors.New("conn: cannot measure how far the reader is behind")

// Measurable reports whether CatchUp works on this connection (see ErrCannotMeasure).
func (c *Conn) Measurable() bool { return c.r.pos.measuring != nil }

// Current reports whether the connection has handed on every frame whose bytes had
// reached this machine maxLag ago. It makes no system call and never waits; false
// means CatchUp must say.
func (c *Conn) Current(maxLag time.Duration) bool {
	return nanotime()-c.r.pos.caughtUp.Load() <= int64(maxLag)
}

// CatchUp returns once the connection has handed on every frame whose bytes had
// reached this machine when CatchUp was called: every reply to its caller and every
// push to the push handler, which has returned. It fails with the connection's error
// if the connection breaks first, with ctx's cause if ctx ends first, and with
// ErrCannotMeasure at once where that cannot be known (Measurable).
//
// Concurrent calls share one measurement. A frame partly received holds CatchUp until
// the rest arrives: a large reply in flight on the connection delays it by as long.
// After the server closes the connection the kernel counts the close as a byte, which
// no frame accounts for; CatchUp then ends with the connection's error.
func (c *Conn) CatchUp(ctx context.Context) error {
	if !c.Measurable() {
		return ErrCannotMeasure
	}
	start := nanotime()
	select {
	case c.r.pos.measuring <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-c.dead:
		return c.Err()
	}
	defer func() { <-c.r.pos.measuring }()
	if c.r.pos.caughtUp.Load() >= start {
		return nil // measured by another caller while this one queued
	}
	at := nanotime()
	target, err := kernelReceived(c.raw)
	if err != nil {
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	if err := c.awaitHandled(ctx, target); err != nil {
		return err
	}
	c.r.pos.caughtUp.Store(at) // the only writer: measuring is held
	return nil
}

// awaitHandled waits until the frames of the first n bytes of the stream are handed on.
func (c *Conn) awaitHandled(ctx context.Context, n int64) error {
	for c.r.pos.handled.Load() < n {
		c.mu.Lock()
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if c.r.pos.moved == nil {
			c.r.pos.moved = make(chan struct{})
		}
		moved := c.r.pos.moved
		// Set before handled is read again, as advance stores handled before it
		// reads waiting: one of the two sees the other.
		c.r.pos.waiting.Store(true)
		c.mu.Unlock()
		if c.r.pos.handled.Load() >= n {
			return nil
		}
		select {
		case <-moved:
		case <-c.dead:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// advance records that every frame read so far, but those still in the read buffer,
// has been handed on. Only the holder of the read role calls it.
func (c *Conn) advance() {
	c.r.pos.handled.Store(c.r.pos.read - int64(c.r.buf.Buffered()))
	if c.r.pos.waiting.Load() {
		c.mu.Lock()
		c.r.pos.waiting.Store(false)
		if c.r.pos.moved != nil {
			close(c.r.pos.moved)
			c.r.pos.moved = nil
		}
		c.mu.Unlock()
	}
}
