package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A connection with a push handler reads all the time, so a push is handed on as soon
// as it arrives, if someone runs to hand it on. The reader goroutine may not: when it
// runs is up to the Go scheduler, and a CPU-bound process can keep it waiting for
// hundreds of milliseconds. A goroutine woken by the network poller, or preempted
// halfway through a frame, goes to the global run queue, which a busy scheduler looks
// at once every 61 time slices of 10 ms. Goroutines serving client-side cache hits
// never block, so 16 of them on two cores are exactly such a load, and an invalidation
// could sit received but unapplied while every hit returned the value it should have
// removed.
//
// So whoever must have seen every push before acting (a cache hit) asks the
// connection, which compares two counts: the bytes of its stream that have reached
// the socket, which only the kernel knows (TCP_INFO), and the bytes of the frames
// handed on. When the second has reached what the first was at some moment, every push
// that had arrived by that moment has been applied; that moment is published, and a
// hit within maxLag of it needs no system call. A hit after that catches up itself: it
// measures, and when frames it needs are received but not handed on, it hands them on
// itself rather than wait for the reader goroutine to be scheduled.
//
// That is possible because nobody holds the read role while waiting for bytes. The
// reader goroutine waits for the socket to become readable holding nothing, then takes
// the frames lock and hands on every whole frame received, reading the socket without
// waiting; a frame partly received stays in the read buffer until its rest arrives.
// CatchUp takes the same lock when it is free and does the same. It waits (parks) only
// while someone else is handing frames on, and takes over when they let go (bytes may
// have come after their last read), or when a frame it needs is not whole yet (its
// bytes have not all been received, or it is larger than the read buffer and must be
// read through by the reader goroutine).

// streamPosition is how far a connection has got through the stream it receives, and
// the newest moment it is known to have caught up with.
type streamPosition struct {
	// caughtUp is read by every cache hit, so it has a cache line of its own, apart
	// from the counters the frames' handlers write.
	_        [64]byte
	caughtUp atomic.Int64 // nanotime: every byte that had reached the socket then is handled
	_        [56]byte

	// frames is held by whoever hands frames on: the reader goroutine, or a CatchUp
	// that found frames received and nobody handing them on. It makes the decoder,
	// the read buffer and read below theirs.
	frames      sync.Mutex
	nonBlocking bool  // under frames: a read of the socket returns errWouldBlock instead of waiting
	drained     bool  // under frames: the last read without waiting took all the socket had
	read        int64 // under frames: bytes read from the socket (or before it was ours)

	handled    atomic.Int64  // bytes of the frames handed on (replies dispatched, pushes handled)
	parks      atomic.Int64  // waits of CatchUps (frames being handed on elsewhere, or not whole yet), for tests
	waiting    atomic.Bool   // a CatchUp waits for handled to move or frames to be let go; see wakeWaiting
	moved      chan struct{} // under Conn.mu: closed when either happens while someone waits
	measurable bool          // set before the connection's goroutines start (startCounting)

	// Bound once, so a read or a wait makes no closure; by the reader goroutine only
	// but recv, which is under frames.
	peekBuf  [1]byte
	polled   bool // the wait for readability found the socket empty and went to the poller
	readable func(fd uintptr) bool
	recv     recvNow
}

// recvNow is a read of the socket that does not wait, made through the raw connection
// so that it needs neither the read lock of the net package's descriptor (held by the
// reader goroutine while it waits for readability) nor the poller.
type recvNow struct {
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr)
}

// errWouldBlock is what a read of the socket returns, to whoever hands frames on,
// when the socket has nothing more: the read buffer keeps what it had.
var errWouldBlock = errors.New("conn: the socket has no more bytes now")

// startCounting readies a connection with a push handler for CatchUp, before anything
// is written. The count starts from the kernel's: a dialer may have read a proxy's
// handshake off the socket already, bytes the reader will never see. A kernel that
// cannot count (Linux before 4.1) leaves the connection unmeasurable.
func (c *Conn) startCounting() {
	if !c.r.alwaysRead || c.raw == nil || !kernelCounts {
		return
	}
	n, _, err := kernelReceived(c.raw)
	if err != nil {
		return
	}
	p := &c.r.pos
	p.read = n
	p.handled.Store(n)
	p.readable = p.isReadable
	p.recv.fn = p.recv.read
	p.measurable = true
}

// countingReader is the transport as the read buffer sees it: it counts what it reads,
// and does not wait for bytes while the frames' handler says so.
type countingReader struct{ c *Conn }

func (r countingReader) Read(p []byte) (int, error) {
	c := r.c
	if !c.r.pos.nonBlocking {
		n, err := c.nc.Read(p)
		c.r.pos.read += int64(n)
		return n, err
	}
	rv := &c.r.pos.recv
	rv.p = p
	err := c.raw.Control(rv.fn)
	rv.p = nil
	switch {
	case err != nil:
		return 0, err
	case rv.errno == syscall.EAGAIN || rv.errno == syscall.EWOULDBLOCK:
		return 0, errWouldBlock
	case rv.errno != 0:
		return 0, rv.errno
	case rv.n == 0:
		return 0, io.EOF
	}
	c.r.pos.read += int64(rv.n)
	c.r.pos.drained = rv.n < len(p)
	return rv.n, nil
}

var _ io.Reader = countingReader{}

// readReceived is the reader goroutine of a measurable connection: it waits for the
// socket to become readable holding nothing, then hands on what was received.
func (c *Conn) readReceived() {
	p := &c.r.pos
	for {
		// The wait peeks before it parks: whether bytes came since the last read is
		// forgotten when the wait starts. After a park, it trusts the poller.
		p.polled = false
		if err := c.raw.Read(p.readable); err != nil {
			c.fatal(err)
			return
		}
		if hook := readerWoke.Load(); hook != nil {
			(*hook)(c)
		}
		p.frames.Lock()
		err := c.handReceived(true)
		c.releaseFrames()
		if err != nil {
			c.fatal(err)
			return
		}
	}
}

// readerWoke, when set, is called by a reader goroutine woken by bytes before it hands
// them on: tests hold the reader there.
var readerWoke atomic.Pointer[func(*Conn)]

// handReceived hands on every whole frame received so far, in the read buffer or still
// in the socket, reading the socket without waiting; a frame partly received stays in
// the buffer. A frame too big for the buffer is read through, waiting for its bytes,
// when through is set (the reader goroutine); otherwise handReceived stops before it
// with errFrameTooBig. The caller holds frames; any other error breaks the connection.
func (c *Conn) handReceived(through bool) error {
	p := &c.r.pos
	p.nonBlocking, p.drained = true, false
	defer func() { p.nonBlocking = false }()
	for {
		n := c.r.buf.Buffered()
		if n > 0 {
			b, _ := c.r.buf.Peek(n)
			if c.r.dec.FrameComplete(b) {
				if _, err := c.readOne(nil); err != nil {
					return err
				}
				continue
			}
			if n == c.r.buf.Size() {
				if !through {
					return errFrameTooBig
				}
				p.nonBlocking = false
				_, err := c.readOne(nil)
				p.nonBlocking, p.drained = true, false // the socket was read past the last short read
				if err != nil {
					return err
				}
				continue
			}
		}
		if p.drained {
			// The socket had no more a moment ago: what came since is past what a
			// CatchUp measured, and the reader goroutine's wait sees it.
			return nil
		}
		if _, err := c.r.buf.Peek(n + 1); err != nil {
			switch {
			case err == errWouldBlock:
				return nil
			case err == io.EOF && n > 0:
				return io.ErrUnexpectedEOF // the stream ended inside a frame, as the reader says
			}
			return err
		}
	}
}

// ErrCannotMeasure is matched by the error of CatchUp on a connection whose progress
// through its stream cannot be compared with the kernel's count: one without a push
// handler, under TLS, or on a platform without TCP_INFO.
var ErrCannotMeasure = errors.New("conn: cannot measure how far the reader is behind")

// Measurable reports whether CatchUp works on this connection (see ErrCannotMeasure).
func (c *Conn) Measurable() bool { return c.r.pos.measurable }

// Current reports whether the connection has handed on every frame whose bytes had
// reached this machine maxLag ago. It makes no system call and never waits; false
// means CatchUp must say.
func (c *Conn) Current(maxLag time.Duration) bool { return c.CurrentAt(nanotime(), maxLag) }

// CurrentAt is Current as of now, a reading of the module's monotonic clock
// (nanoseconds, internal/mono) that the caller has taken already: a cache hit reads
// the clock once, for its entry's expiry and for this.
func (c *Conn) CurrentAt(now int64, maxLag time.Duration) bool {
	return now-c.r.pos.caughtUp.Load() <= int64(maxLag)
}

// CatchUp returns once the connection has handed on every frame whose bytes had
// reached this machine when CatchUp was called: every reply to its caller and every
// push to the push handler, which has returned. Frames received that nobody is handing
// on, CatchUp hands on itself, on its caller's goroutine; it waits only while another
// goroutine is handing frames on (and goes on from where that one lets go), or for the
// rest of a frame partly received: a large reply in flight on the connection delays it
// by as long. It fails with the connection's error if the connection breaks first,
// with ctx's cause if ctx ends first, and with ErrCannotMeasure at once where that
// cannot be known (Measurable).
//
// Once the server has closed or reset the connection, CatchUp breaks it (reading the
// stream, which reports the end) and ends with the connection's error: the tracking
// that made its hits current has ended, even where no byte says so (a reset).
func (c *Conn) CatchUp(ctx context.Context) error {
	if !c.Measurable() {
		return ErrCannotMeasure
	}
	select {
	case <-c.dead:
		return c.Err()
	default:
	}
	p := &c.r.pos
	at := nanotime()
	target, open, err := kernelReceived(c.raw)
	if err != nil {
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return err
	}
	// A connection the server has reset counts no byte for it: nothing is left to hand
	// on, yet the stream has ended, and with it the server's tracking, and the reader
	// goroutine that would find the error may not run for a while. So a CatchUp that
	// finds the connection no longer established reads it too, which finds the end and
	// breaks the connection.
	wait := target
	if !open {
		wait = math.MaxInt64
	}
	for !open || p.handled.Load() < target {
		if !p.frames.TryLock() {
			// Someone else hands frames on: wait until they hand one on or let go,
			// then look again. What came after their last read is this caller's to
			// hand on, not the reader goroutine's, which may not run for a while.
			p.parks.Add(1)
			held, err := c.awaitProgress(ctx, wait)
			if err != nil {
				return err
			}
			if !held {
				continue
			}
		}
		err := c.handReceived(false)
		if hook := catchUpHolds.Load(); hook != nil {
			(*hook)(c)
		}
		c.releaseFrames()
		if err != nil && !errors.Is(err, errFrameTooBig) {
			c.fatal(err)
			return c.Err()
		}
		if !open {
			// The read did not find the end (the reader goroutine took it, or a frame
			// too big for the buffer stands before it): the connection is over all
			// the same.
			c.fatal(errNotEstablished)
			return c.Err()
		}
		if p.handled.Load() < target {
			// A frame the target covers is not whole yet, or is larger than the read
			// buffer: its rest, arriving, wakes the reader goroutine, and any later
			// CatchUp hands it on too.
			p.parks.Add(1)
			if err := c.awaitHandled(ctx, target); err != nil {
				return err
			}
		}
	}
	// Concurrent catch-ups publish in any order; the newest moment stays.
	for {
		old := p.caughtUp.Load()
		if old >= at || p.caughtUp.CompareAndSwap(old, at) {
			return nil
		}
	}
}

// errNotEstablished breaks a connection that CatchUp found closed or reset by the
// server before any read reported it.
var errNotEstablished = fmt.Errorf("conn: the server closed or reset the connection: %w", io.ErrUnexpectedEOF)

// catchUpHolds, when set, is called by a CatchUp that has handed frames on, before it
// lets go of them: tests hold it there.
var catchUpHolds atomic.Pointer[func(*Conn)]

// awaitHandled waits until the frames of the first n bytes of the stream are handed on.
func (c *Conn) awaitHandled(ctx context.Context, n int64) error {
	for c.r.pos.handled.Load() < n {
		moved, err := c.armWait()
		if err != nil {
			return err
		}
		// Read after waiting is set, as advance stores handled before it reads
		// waiting: one of the two sees the other.
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

// awaitProgress waits, for a CatchUp that found frames held by another goroutine, until
// the first n bytes are handed on, or handled moves, or the holder lets go. It reports
// whether it took frames itself; the caller then holds them.
func (c *Conn) awaitProgress(ctx context.Context, n int64) (bool, error) {
	moved, err := c.armWait()
	if err != nil {
		return false, err
	}
	// Looked at after waiting is set, as advance stores handled and releaseFrames lets
	// go before either reads waiting: each of the two sees the other.
	if c.r.pos.handled.Load() >= n {
		return false, nil
	}
	if c.r.pos.frames.TryLock() {
		return true, nil
	}
	select {
	case <-moved:
	case <-c.dead:
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
	return false, nil
}

// armWait sets waiting and returns the channel closed the next time handled moves or
// frames is let go (wakeWaiting); it fails with the connection's error once broken.
func (c *Conn) armWait() (chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	if c.r.pos.moved == nil {
		c.r.pos.moved = make(chan struct{})
	}
	c.r.pos.waiting.Store(true)
	return c.r.pos.moved, nil
}

// advance records that every frame read so far, but those still in the read buffer,
// has been handed on. Only the holder of frames calls it.
func (c *Conn) advance() {
	c.r.pos.handled.Store(c.r.pos.read - int64(c.r.buf.Buffered()))
	c.wakeWaiting()
}

// releaseFrames lets go of frames and wakes the CatchUps that wait, so that one of them
// hands on what arrived after the holder's last read, rather than leave it to the
// reader goroutine.
func (c *Conn) releaseFrames() {
	c.r.pos.frames.Unlock()
	c.wakeWaiting()
}

// wakeWaiting wakes whoever waits in armWait's channel.
func (c *Conn) wakeWaiting() {
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
