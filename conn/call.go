package conn

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/resp"
)

// callState is where a request stands on its connection.
type callState uint8

const (
	stateQueued    callState = iota // encoded in the write buffer, not yet taken by the writer
	stateWritten                    // handed to the socket: it may run
	stateReplied                    // every reply it expects has arrived, or it failed
	stateAbandoned                  // written, but its caller gave up; the reader drops its replies
)

// readRole is whether a call's caller reads its replies itself (pipeline.go).
type readRole uint8

const (
	readByAny    readRole = iota // its caller may be given the read role as the call is written
	readByOthers                 // its caller must not take the read role (StartEncoded)
	readBySelf                   // its caller was given the read role when the call was written
)

// call is one request (one command, or a batch sent back to back) waiting for its
// replies. Calls are pooled (callsFor), each by the connection it was taken for: a
// caller returns its call after reading the result, except an abandoned call, which
// the reader (or the failure path) recycles once it is done.
type call struct {
	state     callState
	want      int           // replies expected; 0 for fire-and-forget writes
	noTimeout bool          // blocking command: no read deadline while it waits
	inline    bool          // its caller cannot be cancelled, so may do the I/O itself
	reader    readRole      // whether its caller reads its replies itself
	watched   bool          // its caller waits on done alone: the watcher wakes it (watch.go)
	watchHeld bool          // under the connection's lock: it counts in the watch's waiters
	ctxEnded  bool          // the watcher woke it: its context ended (set before the token)
	start     int           // while queued: its bytes are the write buffer's [start:end]
	end       int           //
	reply     resp.Value    // the reply of a single command
	results   []Result      // a batch's results; not nil for a batch, even of one command
	confirm   string        // a pub/sub call (DoConfirmed): the kind of its want confirmations
	confirmed int           // with confirm: the confirmations that have arrived
	follow    *follow       // what it does to a transaction or the authentication; nil for most (auth.go)
	err       error         // a transport error, set with stateReplied
	done      chan struct{} // gets one token when the call reaches stateReplied
	// gen counts the call's recyclings, so a Pending copied before its Wait knows the
	// call is no longer its own.
	gen atomic.Uint32
}

// Calls are recycled through one pool shared by every connection, except a connection
// dialled inside a testing/synctest bubble, which keeps its own. A call's done channel
// belongs to the bubble it was made in: one made in a bubble and handed to a
// connection outside it (or in another bubble) is a fatal error at its first use, and
// one made outside and used inside keeps the bubble from ever being idle. A pool per
// connection everywhere would cost every connection GOMAXPROCS×128 B after each
// garbage collection (about 10 KB a connection on 64 cores) and keep a closed
// connection, with its buffers, alive one collection longer.
//
// A bubble's clock starts at midnight UTC, 2000-01-01 (testing/synctest's documented
// start), and no real clock is that early: a connection dialled with the clock before
// 2010 keeps its own calls. A machine with its clock wrong by that much pays only
// the memory of a pool per connection.
//
// A bubble must therefore dial before its fake clock passes 2010: a test that sleeps
// ten years in a bubble and then dials would hand its calls to the shared pool.
var (
	sharedCalls = sync.Pool{New: newCall}
	bubbleEra   = time.Date(2010, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// callsFor returns the pool of a connection dialled at now.
func callsFor(now time.Time) *sync.Pool {
	if !now.Before(bubbleEra) {
		return &sharedCalls
	}
	return &sync.Pool{New: newCall}
}

func newCall() any { return &call{done: make(chan struct{}, 1)} }

// getCall takes a call for a request of c's expecting want replies.
func (c *Conn) getCall(want int) *call {
	cl := c.calls.Get().(*call)
	cl.want = want
	return cl
}

// putCall recycles cl, a call of c's, into c's pool (callsFor): a call from one
// bubble must not reach another. Its done channel is empty: every signal was consumed.
func (c *Conn) putCall(cl *call) {
	cl.state = stateQueued
	cl.noTimeout = false
	cl.inline = false
	cl.reader = readByAny
	cl.watched, cl.watchHeld, cl.ctxEnded = false, false, false
	cl.confirm, cl.confirmed = "", 0
	if cl.follow != nil {
		putFollow(cl.follow)
		cl.follow = nil
	}
	cl.reply = resp.Value{}
	cl.results = nil
	cl.err = nil
	cl.gen.Add(1)
	c.calls.Put(cl)
}

// deliver records one reply and reports whether the call is now complete.
func (cl *call) deliver(v resp.Value) bool {
	if cl.confirm != "" {
		// A refused pub/sub command gets one error in place of all its confirmations.
		cl.reply = v
		cl.confirmed++
		return cl.confirmed == cl.want || v.Err() != nil
	}
	if cl.results != nil {
		cl.results = append(cl.results, ResultOf(v))
		return len(cl.results) == cl.want
	}
	cl.reply = v
	return true
}

// fail completes the call with a transport error.
func (cl *call) fail(err error) {
	cl.err = err
	cl.state = stateReplied
}

// callQueue is a FIFO of calls awaiting replies, in the order their bytes were written.
type callQueue struct {
	items []*call
	head  int
}

func (q *callQueue) push(cl *call) { q.items = append(q.items, cl) }

func (q *callQueue) len() int { return len(q.items) - q.head }

func (q *callQueue) peek() *call {
	if q.head == len(q.items) {
		return nil
	}
	return q.items[q.head]
}

func (q *callQueue) pop() {
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items = q.items[:0]
		q.head = 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items = q.items[:n]
		q.head = 0
	}
}

// each calls f on every call, oldest first.
func (q *callQueue) each(f func(*call)) {
	for _, cl := range q.items[q.head:] {
		f(cl)
	}
}

// drain removes and returns every call.
func (q *callQueue) drain() []*call {
	out := q.items[q.head:]
	q.items, q.head = nil, 0
	return out
}
