package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/respire/respire/internal/mono"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// The I/O of a connection is done by whoever holds one of two roles:
//
//   - The write role: taking everything queued since the last write and writing it in
//     one call. A caller that cannot be cancelled (its context has no Done channel) and
//     finds nobody writing takes the role and writes inline; otherwise the writer
//     goroutine is handed the role. Either way, whoever wrote hands the role on to the
//     writer goroutine if more was queued meanwhile.
//   - The read role: decoding replies and handing each to the oldest written call.
//     When a batch is written and nobody reads, an uncancellable caller whose command
//     is in that batch takes the role and reads until its own reply arrives; otherwise
//     the reader goroutine is handed the role. A caller that is done hands the role on
//     to the reader goroutine while calls are still waiting.
//
// A caller that can be cancelled never blocks in I/O, so it can always return at once:
// it writes inline only on a quiet plain-TCP connection and only with a non-blocking
// write (the writer goroutine takes whatever the socket would not accept), and it
// never reads. An uncancellable caller that does its own I/O saves the two goroutine
// hand-offs that dominate the latency of a sequential command. With a push handler the
// reader goroutine keeps the read role for good, so pushes are seen while nothing
// waits.
//
// Batching: every write costs a system call on each side, and the server reads and
// answers each batch as a whole, so fewer, larger batches save both processes CPU. Two
// things make them large:
//
//   - A command queued while the holder of the read role still has replies of its last
//     read to hand out is held (burst): the callers those replies wake are about to
//     queue theirs too, and all of them leave together once the last reply of the read
//     is handed out (releaseHeldLocked). Without it, the first caller woken by a read
//     went out alone, and the rest of a read's callers trickled after it in batches of
//     a few. A hold lasts only while whole replies wait in the read buffer, never for
//     the server, and never while only blocking commands are in flight. When such a
//     read leaves nothing in flight (afterBurst), the first of its callers to queue
//     does not write alone as a caller on a quiet connection does: the writer
//     goroutine writes for them all.
//   - The writer goroutine, woken while replies are outstanding, yields until the
//     queue stops growing (or fills maxBatch) before it takes the batch: the callers
//     woken last are runnable and queue their commands first.
//
// 64 busy goroutines so produce batches of dozens of commands, and 1,024 of hundreds,
// instead of many of a few.

// enqueue encodes args (with prefix on the keys at positions keys) into the write
// buffer and queues cl behind it.
func (c *Conn) enqueue(ctx context.Context, cl *call, prefix string, keys []int, args []any) error {
	return c.enqueueBounded(ctx, cl, prefix, keys, args, false)
}

// enqueueBounded is enqueue for a call whose caller stops waiting at a deadline when
// bounded (CallOptions.Deadline), so must never block in a write (submitBoundedLocked).
func (c *Conn) enqueueBounded(ctx context.Context, cl *call, prefix string, keys []int, args []any, bounded bool) error {
	if err := c.lockForEnqueue(ctx); err != nil {
		return err
	}
	start := len(c.w.buf)
	buf, err := resp.AppendCommandPrefixed(c.w.buf, prefix, keys, args...)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.w.buf = buf
	if c.auth.track {
		c.followLocked(cl, 0, verbOf(args))
	}
	c.submitBoundedLocked(ctx, cl, start, bounded)
	return nil
}

// enqueueMulti is enqueue for a batch that must leave back to back; keys, when not
// nil, has the key positions of each command.
func (c *Conn) enqueueMulti(ctx context.Context, cl *call, prefix string, keys [][]int, cmds [][]any) error {
	if err := c.lockForEnqueue(ctx); err != nil {
		return err
	}
	start := len(c.w.buf)
	buf := c.w.buf
	for i, args := range cmds {
		var k []int
		if keys != nil {
			k = keys[i]
		}
		var err error
		if buf, err = resp.AppendCommandPrefixed(buf, prefix, k, args...); err != nil {
			c.w.buf = buf[:start]
			c.mu.Unlock()
			return fmt.Errorf("command %d: %w", i, err)
		}
		if c.auth.track {
			c.followLocked(cl, i, verbOf(args))
		}
	}
	c.w.buf = buf
	c.submitLocked(ctx, cl, start)
	return nil
}

// lockForEnqueue locks c.mu for an enqueue, unless ctx has ended or the connection is
// broken: then nothing is locked and the error says the command was not sent.
//
// Nobody reads a connection that sat idle without a push handler, so a server that
// closed it meanwhile (idle timeout, restart) would only be noticed after the next
// command was written, too late to say it was not sent. A connection idle for a while
// is therefore peeked first; a hot connection never pays for it.
func (c *Conn) lockForEnqueue(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return &CallError{Err: context.Cause(ctx)}
	}
	c.mu.Lock()
	if c.err == nil && c.r.idleSince != 0 && c.quietLocked() &&
		time.Duration(nanotime()-c.r.idleSince) >= idleCheckAfter {
		c.r.idleSince = nanotime()
		if c.r.deadlined {
			// Left armed when the last reply came (extendReadDeadlineLocked); it
			// may have passed since, and would fail the peek.
			c.setReadDeadlineLocked(time.Time{})
			c.r.deadlined = false
		}
		// The peek is made under the lock: with nothing queued, written or being
		// written, nobody can send a request whose reply the peek would mistake for
		// an unsolicited one. It never blocks.
		if err := c.peekIdleLocked(); err != nil {
			if errors.Is(err, errUnsolicited) {
				err = fmt.Errorf("%w: %w", ErrUnexpectedReply, err)
			}
			c.mu.Unlock()
			c.fatal(err)
			c.mu.Lock()
		}
	}
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return &CallError{Err: err}
	}
	return nil
}

// peekIdleLocked is peekIdle on c's socket, with the callback bound to c on plain TCP.
func (c *Conn) peekIdleLocked() error {
	if c.raw != nil {
		return c.peek.on(c.raw, false)
	}
	return peekIdle(c.nc)
}

// quietLocked reports that no request is queued, being written or awaiting a reply.
func (c *Conn) quietLocked() bool {
	return !c.r.reading && !c.w.writing && len(c.w.queued) == 0 && c.r.inflight.len() == 0
}

// idleCheckAfter is how long a connection must have been idle before an enqueue peeks
// at its socket.
const idleCheckAfter = time.Millisecond

// clockStart is the origin of nanotime, the module's clock (internal/mono): a cache
// hit hands its own reading to CurrentAt.
var clockStart = mono.Start()

// nanotime is a monotonic clock in nanoseconds, never 0.
func nanotime() int64 { return mono.Now() }

// submitLocked registers cl for the bytes from start to the end of the write buffer and makes sure
// someone writes them. It unlocks c.mu.
func (c *Conn) submitLocked(ctx context.Context, cl *call, start int) {
	c.submitBoundedLocked(ctx, cl, start, false)
}

// submitBoundedLocked is submitLocked for a call whose caller stops waiting at a
// deadline when bounded (CallOptions.Deadline).
func (c *Conn) submitBoundedLocked(ctx context.Context, cl *call, start int, bounded bool) {
	cl.state = stateQueued
	cl.start, cl.end = start, len(c.w.buf)
	// A call with a deadline cannot be cancelled either but must not block in a
	// write past it: it writes as a cancellable caller does, and its wait selects on
	// a timer (waitBy) rather than on a watcher of a context that never ends.
	cl.inline = ctx.Done() == nil && !bounded
	if !cl.inline && cl.want > 0 && ctx.Done() != nil && !bounded {
		// A call without replies completes when written, with a token of its own
		// that a watcher's token must not crowd out: it keeps the select. A
		// bounded call selects on its context and a timer (waitBy) and is not
		// watched: registering it would only be undone.
		c.watchCallLocked(ctx, cl)
	}
	c.w.queued = append(c.w.queued, cl)
	if c.auth.track {
		c.queuedAuthLocked(cl)
	}
	if c.w.writing {
		c.mu.Unlock() // the writer at work takes cl with its next batch
		return
	}
	if c.r.burst {
		c.mu.Unlock() // held: it leaves with the batch of the read (releaseHeldLocked)
		return
	}
	c.w.writing = true
	quiet := c.r.inflight.len() == 0 && !c.r.afterBurst
	switch {
	case cl.inline && quiet:
		buf := c.takeBatchLocked(cl)
		c.mu.Unlock()
		c.writeTaken(buf)
	case c.raw != nil && quiet:
		// A quiet connection: nobody else's command is about to join this one, so
		// waking the writer would only add latency. The caller may read its reply
		// itself too (readUntilInterruptible).
		buf := c.takeBatchLocked(cl)
		c.mu.Unlock()
		c.tryWriteTaken(buf)
	default:
		c.mu.Unlock()
		signal(c.w.wake)
	}
}

// writeTaken writes a batch the write role has taken, waiting until the socket has all
// of it, and gives the role up. It reports false when the write broke the connection.
func (c *Conn) writeTaken(buf []byte) bool {
	if err := c.writeBatch(buf); err != nil {
		c.fatal(err)
		return false
	}
	c.finishWrite(buf)
	return true
}

// tryWriteTaken writes what the socket takes of a batch at once, without waiting, and
// hands the rest, with the write role, to the writer goroutine.
func (c *Conn) tryWriteTaken(buf []byte) {
	n, err := c.writeNonBlocking(buf)
	switch {
	case err != nil:
		c.fatal(err)
	case n < len(buf):
		c.handTail(buf, n)
	default:
		c.finishWrite(buf)
	}
}

// writeNonBlocking writes what the socket takes at once, without waiting. Only the
// holder of the write role calls it.
func (c *Conn) writeNonBlocking(buf []byte) (int, error) {
	w := &c.w.nbw
	w.buf = buf
	err := c.raw.Write(w.fn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline of an earlier blocking write has passed; this write needs none.
		c.nc.SetWriteDeadline(time.Time{})
		c.w.due = 0
		err = c.raw.Write(w.fn)
	}
	n, werr := w.n, w.err
	w.buf, w.err = nil, 0
	switch {
	case err != nil:
		return 0, err
	case werr == syscall.EAGAIN:
		return 0, nil
	case werr != 0:
		return 0, werr
	}
	return max(n, 0), nil
}

// errUnsolicited is a peek's finding of bytes that no request asked for.
var errUnsolicited = errors.New("data arrived while no request was waiting")

// nonBlockingWrite is the callback of one non-blocking write, built once per connection:
// a closure made per call would cost an allocation per command.
type nonBlockingWrite struct {
	buf []byte
	n   int
	err syscall.Errno
	fn  func(fd uintptr) bool
}

// handTail gives the rest of a partly written batch, and the write role with it, to the
// writer goroutine.
func (c *Conn) handTail(buf []byte, written int) {
	c.mu.Lock()
	c.w.tail = buf[written:]
	c.mu.Unlock()
	signal(c.w.wake)
}

// takeBatchLocked moves everything queued to the written state and returns its bytes.
// If nobody holds the read role, it goes to me (a caller in the batch that may read
// inline) or to the reader goroutine.
func (c *Conn) takeBatchLocked(me *call) []byte {
	buf := c.w.buf
	c.w.buf = c.w.spare[:0]
	c.w.spare = nil
	c.r.afterBurst = false
	timed := false
	for _, cl := range c.w.queued {
		if cl.want == 0 {
			cl.state = stateReplied
			signal(cl.done)
			continue
		}
		cl.state = stateWritten
		c.r.inflight.push(cl)
		if cl.noTimeout {
			c.r.blockingInflight++
		}
		timed = timed || !cl.noTimeout
	}
	clear(c.w.queued)
	c.w.queued = c.w.queued[:0]
	if c.r.inflight.len() > 0 {
		c.armReadDeadlineLocked(timed)
		if !c.r.reading {
			c.r.reading = true
			if me != nil && me.want > 0 && me.reader != readByOthers {
				me.reader = readBySelf
				c.releaseWatchLocked(me) // a caller that reads itself selects (wait)
			} else {
				signal(c.r.wake)
			}
		}
	}
	return buf
}

func (c *Conn) writeBatch(buf []byte) error {
	if c.w.timeout > 0 {
		// Moved lazily, as the read deadline is (extendReadDeadlineLocked).
		if next, move := nextDeadline(c.w.due, c.w.timeout); move {
			c.w.due = next
			c.nc.SetWriteDeadline(fromNanotime(next))
		}
	}
	_, err := c.nc.Write(buf)
	return err
}

// finishWrite keeps buf for reuse and gives up the write role, or hands it to the writer
// goroutine when more was queued during the write and is not held for a burst.
func (c *Conn) finishWrite(buf []byte) {
	c.mu.Lock()
	if c.w.spare == nil && worthKeeping(buf) {
		c.w.spare = buf
	}
	if len(c.w.queued) > 0 && c.err == nil && !c.r.burst {
		c.mu.Unlock()
		signal(c.w.wake)
		return
	}
	c.w.writing = false // what is queued during a burst is held (releaseHeldLocked)
	c.mu.Unlock()
}

// worthKeeping says whether a written buffer should serve a later batch. A small one
// always does. A large one does only while batches fill a good part of it: once a burst
// of large values is over, the next small batch written from it drops it, so a
// connection does not hold a burst's memory for the rest of its life.
func worthKeeping(buf []byte) bool {
	switch n := cap(buf); {
	case n == 0 || n > maxSpareBuffer:
		return false
	case n <= keptBuffer:
		return true
	default:
		return len(buf) >= n/4
	}
}

// signal sends a token on a channel of capacity one without blocking: one pending token
// is as good as many.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *Conn) writeLoop() {
	defer c.loops.Done()
	for {
		select {
		case <-c.w.wake:
		case <-c.dead:
			return
		}
		c.mu.Lock()
		if tail := c.w.tail; tail != nil {
			c.w.tail = nil
			c.mu.Unlock()
			if err := c.writeBatch(tail); err != nil {
				c.fatal(err)
				return
			}
			c.finishWrite(nil)
			continue
		}
		for n := -1; (c.r.inflight.len() > 0 || c.r.afterBurst) && len(c.w.queued) != n && len(c.w.buf) < maxBatch && c.err == nil; {
			n = len(c.w.queued)
			c.mu.Unlock()
			runtime.Gosched() // let the callers just answered queue their next commands
			c.mu.Lock()
		}
		if c.err != nil || !c.w.writing {
			c.mu.Unlock()
			continue
		}
		if len(c.w.queued) == 0 || c.r.burst {
			c.w.writing = false // nothing to write, or held (releaseHeldLocked)
			c.mu.Unlock()
			continue
		}
		buf := c.takeBatchLocked(nil)
		c.mu.Unlock()
		if !c.writeTaken(buf) {
			return
		}
	}
}

// wait blocks until cl completes or ctx ends. On a nil return the caller owns cl and
// reads its result. On an error return cl belongs to the connection.
func (c *Conn) wait(ctx context.Context, cl *call) error { return c.waitBy(ctx, cl, time.Time{}) }

// waitBy is wait for a call that its caller stops waiting for at by as well, if by is
// not zero (CallOptions.Deadline). Such a call is not watched (DoWith releases its
// watch), so a timer can end its wait.
func (c *Conn) waitBy(ctx context.Context, cl *call, by time.Time) error {
	switch {
	case cl.watched && cl.reader != readBySelf && by.IsZero():
		<-cl.done
		if !cl.ctxEnded {
			return nil
		}
	default:
		if cl.reader == readBySelf {
			if cl.inline && by.IsZero() {
				c.readUntil(cl)
			} else {
				c.readUntilInterruptible(ctx, cl, by)
			}
		}
		if cl.inline && by.IsZero() {
			// ctx cannot end: a plain receive, cheaper than a select.
			<-cl.done
			return nil
		}
		if c.awaitDone(ctx, cl, by) {
			return nil
		}
	}
	cause := context.DeadlineExceeded // by passed
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	c.mu.Lock()
	switch cl.state {
	case stateReplied:
		// The reply won the race; its signal is in done or about to be.
		c.mu.Unlock()
		<-cl.done
		return nil
	case stateQueued:
		c.unqueueLocked(cl)
		c.mu.Unlock()
		c.putCall(cl)
		return &CallError{Err: cause}
	default:
		cl.state = stateAbandoned
		// The results slice may be the caller's (StartEncoded), which it may reuse
		// once this returns: capped at its length, the next reply appends to a copy.
		cl.results = cl.results[:len(cl.results):len(cl.results)]
		c.mu.Unlock()
		return &CallError{Written: true, Err: cause}
	}
}

// awaitDone waits for cl's done channel, and reports false when ctx ends or by (if
// not zero) passes first. A token the watcher sent because ctx ended counts as ctx's
// end. A caller that read until by passed finds it passed without a timer.
func (c *Conn) awaitDone(ctx context.Context, cl *call, by time.Time) bool {
	if by.IsZero() {
		select {
		case <-cl.done:
			return !cl.ctxEnded
		case <-ctx.Done():
			return false
		}
	}
	select {
	case <-cl.done:
		return !cl.ctxEnded
	default:
	}
	d := time.Until(by)
	if d <= 0 {
		return false
	}
	t, _ := c.timers.Get().(*time.Timer)
	if t == nil {
		t = time.NewTimer(d)
	} else {
		t.Reset(d)
	}
	defer c.putTimer(t)
	select {
	case <-cl.done:
		return !cl.ctxEnded
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// putTimer stops t and keeps it for the next wait. A stopped timer delivers nothing
// more, except under GODEBUG asynctimerchan=1, whose tick already sent is drained
// here: the next wait must not see it.
func (c *Conn) putTimer(t *time.Timer) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	c.timers.Put(t)
}

// unqueueLocked removes a call that has not been written, bytes and all, so that it
// never runs. A call no longer queued is left alone: a Reauth's AUTH that a replay of
// the transaction state took back while its waiter was coming to take it back itself
// (reauthTakenBackLocked).
func (c *Conn) unqueueLocked(cl *call) {
	c.releaseWatchLocked(cl)
	idx := slices.Index(c.w.queued, cl)
	if idx < 0 {
		return
	}
	n := cl.end - cl.start
	c.w.buf = append(c.w.buf[:cl.start], c.w.buf[cl.end:]...)
	for _, q := range c.w.queued[idx+1:] {
		q.start -= n
		q.end -= n
	}
	c.w.queued = slices.Delete(c.w.queued, idx, idx+1)
	if c.auth.track {
		c.unqueueAuthLocked(cl)
	}
}

// armReadDeadlineLocked sets the read deadline for what is now in flight: a reply is due
// within the read timeout unless a blocking command waits, in which case there is none.
func (c *Conn) armReadDeadlineLocked(timed bool) {
	if c.r.timeout <= 0 {
		return
	}
	if timed && c.r.blockingInflight == 0 {
		c.extendReadDeadlineLocked()
	} else if c.r.deadlined {
		c.setReadDeadlineLocked(time.Time{})
		c.r.deadlined = false
	}
}

// extendReadDeadlineLocked makes sure the read deadline is at least a read timeout away.
//
// Moving a socket deadline costs a runtime timer update, too much to pay per reply. So
// the deadline is set a timeout and a half ahead and moved only once less than a
// timeout is left: a reply that does not come is noticed between one timeout and one
// and a half after the last progress, and a busy connection moves its deadline once
// per half timeout instead of once per reply.
func (c *Conn) extendReadDeadlineLocked() {
	due := c.r.due
	if !c.r.deadlined {
		due = 0
	}
	if next, move := nextDeadline(due, c.r.timeout); move {
		c.r.due = next
		c.setReadDeadlineLocked(fromNanotime(next))
		c.r.deadlined = true
	}
}

// nextDeadline says whether a deadline at due (nanotime; 0 for none) must move for a
// timeout, and where to: a timeout and a half from now, once less than a timeout is
// left.
func nextDeadline(due int64, timeout time.Duration) (int64, bool) {
	now := nanotime()
	if due-now >= int64(timeout) {
		return due, false
	}
	return now + int64(timeout)*3/2, true
}

// fromNanotime converts a nanotime reading to a time.Time.
func fromNanotime(t int64) time.Time { return mono.Time(t) }

// readUntil is the read role held by cl's own caller: it reads and dispatches until
// cl is complete (or the connection fails), then passes the role on if calls still
// wait.
func (c *Conn) readUntil(cl *call) {
	spin := spins(cl)
	for {
		if c.r.buf.Buffered() == 0 {
			start := c.awaitBytes(spin)
			if _, err := c.r.buf.Peek(1); err != nil {
				c.fatal(err)
				return
			}
			c.spinDone(start, spin)
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
	if c.r.inflight.len() > 0 && c.err == nil {
		c.mu.Unlock()
		signal(c.r.wake)
		return
	}
	c.r.reading = false
	c.mu.Unlock()
}

func (c *Conn) readLoop() {
	defer c.loops.Done()
	if c.Measurable() {
		c.readReceived()
		return
	}
	for {
		if !c.r.alwaysRead {
			select {
			case <-c.r.wake:
			case <-c.dead:
				return
			}
		}
		for {
			if _, err := c.readOne(nil); err != nil {
				c.fatal(err)
				return
			}
			if c.r.alwaysRead {
				continue
			}
			c.mu.Lock()
			if c.r.inflight.len() == 0 {
				c.r.reading = false
				c.mu.Unlock()
				break
			}
			c.mu.Unlock()
		}
	}
}

// readOne reads one frame and delivers it: a push to the push handler, a reply to the
// oldest written call. It reports whether the call it completed is mine.
func (c *Conn) readOne(mine *call) (bool, error) {
	v, err := c.r.dec.Read()
	if err != nil {
		return false, err
	}
	if (v.Kind() == resp.KindPush || (c.r.pubsub2.Load() && !c.awaitedInPubSub(v))) && !c.confirms(v) {
		if c.r.push != nil {
			c.r.push(v)
		}
		c.endBurstIfDrained()
		if c.r.alwaysRead {
			c.advance()
		}
		return false, nil
	}
	mineDone, err := c.dispatch(v, mine)
	if c.r.alwaysRead {
		c.advance()
	}
	return mineDone, err
}

// awaitedInPubSub reports whether a frame read in RESP2 pub/sub mode is the reply of a
// call rather than a message: messages are arrays, so another frame while a call waits
// is that call's reply (an AUTH queued just before the owner's SUBSCRIBE).
func (c *Conn) awaitedInPubSub(v resp.Value) bool {
	if v.Kind() == resp.KindArray {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.r.inflight.len() > 0
}

// confirms reports whether v, a push or a RESP2 subscriber-mode frame, is a
// confirmation the oldest written call waits for (DoConfirmed): a subscribe push is
// the reply of the SUBSCRIBE that asked for it, not news for the push handler.
func (c *Conn) confirms(v resp.Value) bool {
	elems, err := v.Array()
	if err != nil || len(elems) == 0 {
		return false
	}
	kind, err := elems[0].Text()
	if err != nil || !confirmationKinds[kind] {
		return false // a message: no lock taken
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.r.inflight.peek()
	return cl != nil && cl.confirm == kind
}

// confirmationKinds are the frames DoConfirmed can wait for.
var confirmationKinds = map[string]bool{"subscribe": true, "ssubscribe": true, "psubscribe": true, "pong": true}

// dispatch hands v to the oldest written call and reports whether that completed mine.
func (c *Conn) dispatch(v resp.Value, mine *call) (bool, error) {
	c.mu.Lock()
	cl := c.r.inflight.peek()
	if cl == nil {
		c.mu.Unlock()
		return false, fmt.Errorf("%w: %s", ErrUnexpectedReply, v)
	}
	if !cl.deliver(v) {
		c.releaseHeldLocked(false)
		c.mu.Unlock()
		return false, nil
	}
	c.r.inflight.pop()
	// The one check of transaction following on the hot path that is not under
	// auth.track: a request has a record only where transactions are followed
	// (followLocked), or as a Reauth's AUTH, and testing for it costs no more than
	// testing track.
	if cl.follow != nil {
		c.repliedAuthLocked(cl)
	}
	c.releaseWatchLocked(cl)
	if cl.noTimeout {
		c.r.blockingInflight--
	}
	c.releaseHeldLocked(true) // first: afterReplyLocked reads whether a burst goes on
	c.afterReplyLocked()
	abandoned := cl.state == stateAbandoned
	cl.state = stateReplied
	c.mu.Unlock()
	if abandoned {
		c.putCall(cl)
	} else {
		cl.done <- struct{}{}
	}
	return cl == mine, nil
}

// releaseHeldLocked notes whether the holder of the read role, which has just handed
// out a reply (the last its call awaited when completed), has more of its last read to
// hand out (a burst), and when it has not, hands the commands held meanwhile to the
// writer goroutine. Only the holder of the read role calls it. A burst counts only
// while a reply to a call that is not blocking is awaited, and only for a whole frame:
// the start of a large reply may take long to arrive, and the server should have the
// next commands meanwhile.
func (c *Conn) releaseHeldLocked(completed bool) {
	was := c.r.burst
	if !was {
		c.r.burstCalls = 0
	}
	if completed {
		c.r.burstCalls++
	}
	c.r.burst = c.r.inflight.len() > c.r.blockingInflight && c.wholeFrameBuffered()
	if was && !c.r.burst && c.r.inflight.len() == 0 && c.r.burstCalls > 1 {
		// Several callers were woken, and none has queued yet. (One caller's batch
		// is not a burst of callers: its caller writes the next one itself.)
		c.r.afterBurst = true
	}
	// Queued with nobody writing is held: whoever queues takes or hands on the write
	// role at once otherwise (submitBoundedLocked), and the role is given up with
	// something queued only during a burst (finishWrite, writeLoop).
	if !c.r.burst && !c.w.writing && len(c.w.queued) > 0 && c.err == nil {
		c.w.writing = true
		signal(c.w.wake)
	}
}

// wholeFrameBuffered reports whether the read buffer starts with a whole frame. Only
// the holder of the read role calls it.
func (c *Conn) wholeFrameBuffered() bool {
	n := c.r.buf.Buffered()
	if n == 0 {
		return false
	}
	b, _ := c.r.buf.Peek(n)
	return c.r.dec.FrameComplete(b)
}

// endBurstIfDrained releases the held commands when a push, not a reply, ended a
// burst. Only the holder of the read role calls it.
func (c *Conn) endBurstIfDrained() {
	if !c.r.burst || c.wholeFrameBuffered() {
		return
	}
	c.mu.Lock()
	c.releaseHeldLocked(false)
	c.mu.Unlock()
}

// afterReplyLocked updates the idle clock and the read deadline once a call has all its
// replies.
func (c *Conn) afterReplyLocked() {
	if c.r.inflight.len() == 0 && !c.r.alwaysRead {
		c.r.idleSince = nanotime()
	}
	if !c.r.deadlined {
		return
	}
	switch {
	case c.r.inflight.len() > 0:
		// Progress: the next reply gets a full read timeout of its own, counted
		// from the last whole reply of the read, when no burst goes on (a look at
		// the clock per reply cost 3% of a busy connection's CPU). Counting from the
		// first would let a slow push handler between two replies of one read use
		// up the timeout of the replies after it.
		if !c.r.burst {
			c.extendReadDeadlineLocked()
		}
	case c.r.alwaysRead:
		// The reader goes on reading, for pushes, with nothing due.
		c.setReadDeadlineLocked(time.Time{})
		c.r.deadlined = false
	}
	// Otherwise nobody reads until the next batch is written, which extends the
	// deadline if it is too close by then.
}

// fatal breaks the connection with err (the first error wins): the socket is closed and
// every pending call fails, queued ones as not sent and written ones as unknown.
func (c *Conn) fatal(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	if errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	c.err = err
	lost := c.obs != nil && c.open && !errors.Is(err, ErrClosed)
	c.stopWatchingLocked()
	queued := c.w.queued
	c.w.queued = nil
	c.w.buf = nil
	written := c.r.inflight.drain()
	c.r.blockingInflight = 0
	abandoned := make([]bool, len(written))
	for _, cl := range queued {
		cl.fail(&CallError{Err: err})
	}
	for i, cl := range written {
		abandoned[i] = cl.state == stateAbandoned
		cl.fail(&CallError{Written: true, Err: err})
	}
	close(c.dead)
	c.mu.Unlock()

	c.nc.Close()
	if lost {
		c.obs.Conn(observe.Conn{Kind: observe.ConnLost, Addr: c.ident.addr, Err: err})
	}
	for _, cl := range queued {
		cl.done <- struct{}{}
	}
	for i, cl := range written {
		if abandoned[i] {
			c.putCall(cl) // nobody waits for it any more
		} else {
			cl.done <- struct{}{}
		}
	}
}
