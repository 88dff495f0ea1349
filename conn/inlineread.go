package conn

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"time"
)

// A caller that can be cancelled may still read its own reply, saving the hand-off from
// the reader goroutine, if its wait can be interrupted the moment its context ends.
// Two things make that safe:
//
//   - It parses only frames that are already whole in the read buffer
//     (resp.Reader.FrameComplete), and waits for bytes with bufio's Peek, which consumes
//     nothing: an interrupted wait loses no parsing state.
//   - The context is watched (watch.go); when it ends, the watcher moves the read
//     deadline into the past, which wakes the blocked read. The caller then hands the
//     read role to the reader goroutine, with the real deadline restored, and returns.
//     If the connection's watcher is busy with another context, the caller hands the
//     read role on at once instead.

// pastDeadline wakes a blocked read at once.
var pastDeadline = time.Unix(1, 0)

// readUntilInterruptible is the read role held by a cancellable caller, or by one
// whose call has a deadline (by, when not zero: CallOptions.Deadline): it reads until
// cl is complete, or until its context ends, by passes or a frame too big to see whole
// arrives, when it hands the role to the reader goroutine. Until by, the socket's read
// deadline is by when that comes first (setReadDeadlineLocked), so no watcher and no
// timer are needed for it.
func (c *Conn) readUntilInterruptible(ctx context.Context, cl *call, by time.Time) {
	c.mu.Lock()
	if ctx.Done() != nil && !c.watchLocked(ctx) {
		c.mu.Unlock()
		signal(c.r.wake)
		return
	}
	var byNs int64 // by as a nanotime reading; 0 for none
	if !by.IsZero() {
		// As a nanotime reading: a time.Time kept in c would make every caller's
		// CallOptions, and the arguments beside them, escape to the heap. It is made
		// with one reading of the clock: two (time.Until, then nanotime) would put the
		// socket's deadline early by the time between them, and a deadline that fires
		// before by would be taken for the connection's own and break it.
		// Clamped so that a far-future by (Sub saturates) does not wrap to the past.
		byNs = max(min(int64(by.Sub(clockStart)), math.MaxInt64-1), 0) + 1
		c.r.by = byNs
		c.setReadDeadlineLocked(c.r.deadline)
	}
	c.mu.Unlock()
	for {
		err := c.awaitWholeFrame(spins(cl))
		if err != nil {
			if c.interruptedBy(err) || passed(byNs, err) || errors.Is(err, errFrameTooBig) {
				c.handReadRole()
				return
			}
			c.fatal(err)
			return
		}
		done, err := c.readOne(cl)
		if err != nil {
			c.fatal(err)
			return
		}
		if done {
			break
		}
	}
	c.mu.Lock()
	c.unwatchLocked()
	if c.r.inflight.len() > 0 && c.err == nil {
		c.mu.Unlock()
		signal(c.r.wake)
		return
	}
	c.r.reading = false
	c.mu.Unlock()
}

// passed reports whether err is the read timeout at byNs (a nanotime reading; 0 for
// none), a call's deadline, rather than the connection's. The socket's deadline was
// set from byNs on the same clock, so once it fired nanotime has reached byNs.
func passed(byNs int64, err error) bool {
	return byNs != 0 && errors.Is(err, os.ErrDeadlineExceeded) && nanotime() >= byNs
}

var errFrameTooBig = errors.New("conn: frame larger than the read buffer")

// awaitWholeFrame waits until the read buffer holds a whole frame, polling first when
// spin is set (spin.go).
func (c *Conn) awaitWholeFrame(spin bool) error {
	for {
		if n := c.r.buf.Buffered(); n > 0 {
			b, _ := c.r.buf.Peek(n)
			if c.r.dec.FrameComplete(b) {
				return nil
			}
			if n == c.r.buf.Size() {
				return errFrameTooBig
			}
		}
		start := c.awaitBytes(spin)
		if _, err := c.r.buf.Peek(c.r.buf.Buffered() + 1); err != nil {
			if err == io.EOF && c.r.buf.Buffered() > 0 {
				err = io.ErrUnexpectedEOF // the stream ended inside a frame, as the reader says
			}
			return err
		}
		c.spinDone(start, spin)
	}
}

// interruptedBy reports whether err is the wake-up of a watcher, as opposed to a real
// read timeout or another failure.
func (c *Conn) interruptedBy(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watch.interrupted
}

// handReadRole gives the read role to the reader goroutine, with the deadline the
// requests in flight really have.
func (c *Conn) handReadRole() {
	c.mu.Lock()
	c.unwatchLocked()
	c.mu.Unlock()
	signal(c.r.wake)
}

// setReadDeadlineLocked is the one place the read deadline changes, so an interrupted
// read can restore it. While a caller whose call has a deadline reads, the socket's is
// that deadline when it comes first.
func (c *Conn) setReadDeadlineLocked(t time.Time) {
	c.r.deadline = t
	if !c.watch.interrupted {
		c.nc.SetReadDeadline(c.socketDeadlineLocked())
	}
}

// socketDeadlineLocked is the read deadline the socket must have: the connection's, or
// the reading caller's deadline (c.r.by) when that comes first.
func (c *Conn) socketDeadlineLocked() time.Time {
	if c.r.by != 0 {
		if by := fromNanotime(c.r.by); c.r.deadline.IsZero() || by.Before(c.r.deadline) {
			return by
		}
	}
	return c.r.deadline
}
