package conn

import (
	"context"
	"errors"
	"testing"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
)

// Scripted tests of the hold policy (pipeline.go): a command queued while the holder
// of the read role has whole replies of its last read to hand out is held, and leaves
// once they are handed out. A real server cannot be made to put a frame boundary, a
// push or a partial frame at a chosen place of one read; the fake over net.Pipe can:
// one Reply arrives in one read.

// pushGate is a push handler that stops the reader on each push until the test lets
// it go, so that a test can look at a connection in the middle of a read.
type pushGate struct {
	entered chan struct{} // a push reached the handler
	let     chan struct{} // one token lets one push go
	done    chan struct{} // closed at cleanup: the handler stops waiting
}

func (g *pushGate) handle(resp.Value) {
	select {
	case g.entered <- struct{}{}:
	case <-g.done:
		return
	}
	select {
	case <-g.let:
	case <-g.done:
	}
}

// dialGated dials a fake-server connection whose push handler is a pushGate.
func dialGated(t *testing.T) (*Conn, *fakeServer, *pushGate) {
	t.Helper()
	g := &pushGate{entered: make(chan struct{}), let: make(chan struct{}), done: make(chan struct{})}
	c, f := dialFake(t, Options{PushHandler: g.handle}, helloRESP3)
	t.Cleanup(func() { close(g.done) }) // before c.Close, whose cleanup came first
	return c, f, g
}

// pushFrame is a push the gate stops the reader on.
const pushFrame = ">2\r\n$4\r\nnote\r\n$1\r\nx\r\n"

// outcome is what a call made in the background returned.
type outcome struct {
	v   resp.Value
	err error
}

// doAsync runs c.Do(ctx, args...) on a goroutine of its own.
func doAsync(ctx context.Context, c *Conn, args ...any) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		v, err := c.Do(ctx, args...)
		ch <- outcome{v, err}
	}()
	return ch
}

// wantReply fails the test unless the call behind ch returned the bulk string want.
func wantReply(t *testing.T, what string, ch <-chan outcome, want string) {
	t.Helper()
	o := <-ch
	if s, _ := o.v.Text(); o.err != nil || s != want {
		t.Fatalf("%s: %v, %v; want %q", what, o.v, o.err, want)
	}
}

// holdState is what the hold tests look at: the calls queued, whether the write role
// is held, the calls in flight.
func (c *Conn) holdState() (queued int, writing bool, inflight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.w.queued), c.w.writing, c.r.inflight.len()
}

// writeGETs has the fake read a GET of each key, one caller each, in order.
func writeGETs(ctx context.Context, c *Conn, f *fakeServer, keys ...string) []<-chan outcome {
	chs := make([]<-chan outcome, len(keys))
	for i, k := range keys {
		chs[i] = doAsync(ctx, c, "GET", k)
		f.Expect("GET", k) // one at a time, so the fake reads them in order
	}
	return chs
}

// waitHeld waits until one command is queued with nobody writing it, or it was
// written after all (which fails the test): in flight, or being written.
func waitHeld(t *testing.T, c *Conn, inflightBefore int) {
	t.Helper()
	testkit.WaitFor(t, "the command held or written", func() bool {
		q, w, n := c.holdState()
		return (q == 1 && !w) || w || n > inflightBefore
	})
	if q, w, n := c.holdState(); q != 1 || w {
		t.Fatalf("queued %d, being written %v, in flight %d: the command left during the burst", q, w, n)
	}
}

// A push that is the last whole frame of a read ends the burst: the commands held
// meanwhile leave once the push is handled, without waiting for the replies still
// awaited, which are the server's to send.
func TestHoldEndedByAPush(t *testing.T) {
	c, f, g := dialGated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := writeGETs(ctx, c, f, "a", "b")

	// One read: a's reply, then a push; b's reply is still to come.
	f.Reply("$1\r\na\r\n" + pushFrame)
	wantReply(t, "GET a", got[0], "a")
	<-g.entered // the push is read and whole: a burst while the handler runs
	c3 := doAsync(ctx, c, "GET", "c")
	waitHeld(t, c, 1)

	g.let <- struct{}{}
	f.Expect("GET", "c") // before b's reply: the push was the read's last frame
	f.Reply("$1\r\nb\r\n$1\r\nc\r\n")
	wantReply(t, "GET b", got[1], "b")
	wantReply(t, "GET c", c3, "c")
}

// Only a blocking command in flight: nothing of this read is awaited soon, so a
// command queued while the reader hands on a push is written at once, not held.
func TestNoHoldWhileOnlyABlockingCommandIsInFlight(t *testing.T) {
	c, f, g := dialGated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := writeGETs(ctx, c, f, "a")
	blpop := make(chan outcome, 1)
	go func() {
		v, err := c.DoBlocking(ctx, "BLPOP", "list", "0")
		blpop <- outcome{v, err}
	}()
	f.Expect("BLPOP", "list", "0")

	// One read: a's reply and a whole push; then only BLPOP awaits a reply.
	f.Reply("$1\r\na\r\n" + pushFrame)
	wantReply(t, "GET a", got[0], "a")
	<-g.entered
	c3 := doAsync(ctx, c, "GET", "c")
	testkit.WaitFor(t, "GET c written while the push handler runs", func() bool {
		_, _, n := c.holdState()
		return n == 2
	})
	f.Expect("GET", "c")

	g.let <- struct{}{}
	f.Reply("*2\r\n$4\r\nlist\r\n$1\r\nv\r\n$1\r\nc\r\n")
	if o := <-blpop; o.err != nil || !isPair(o.v) {
		t.Fatalf("BLPOP: %v, %v", o.v, o.err)
	}
	wantReply(t, "GET c", c3, "c")
}

// isPair reports whether v is an array of two elements, as BLPOP's reply is.
func isPair(v resp.Value) bool {
	elems, err := v.Array()
	return err == nil && len(elems) == 2
}

// A read that ends in the middle of a frame holds nothing: the rest of a large reply
// may take long to arrive, and the server should have the next commands meanwhile.
func TestNoHoldOnAPartialFrame(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := writeGETs(ctx, c, f, "a", "b")

	// One read: a's reply and the start of b's; the reader waits for the rest.
	f.Reply("$1\r\na\r\n$5\r\nhel")
	wantReply(t, "GET a", got[0], "a")
	c3 := doAsync(ctx, c, "GET", "c")
	f.Expect("GET", "c") // before b's reply is whole
	f.Reply("lo\r\n$1\r\nc\r\n")
	wantReply(t, "GET b", got[1], "hello")
	wantReply(t, "GET c", c3, "c")
}

// A held command whose context ends is taken back: its caller gets the context's
// error as not sent, its bytes never reach the server, and the commands held with it
// leave and get their own replies.
func TestHeldCommandCancelled(t *testing.T) {
	c, f, g := dialGated(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := writeGETs(ctx, c, f, "a", "b")

	// One read: a's reply, a push, b's reply. The handler stops the reader with b's
	// reply whole in the buffer: a burst.
	f.Reply("$1\r\na\r\n" + pushFrame + "$1\r\nb\r\n")
	wantReply(t, "GET a", got[0], "a")
	<-g.entered
	xctx, xcancel := context.WithCancel(ctx)
	x := doAsync(xctx, c, "SET", "x", "never")
	waitHeld(t, c, 1)
	y := doAsync(ctx, c, "GET", "y")
	testkit.WaitFor(t, "GET y queued", func() bool { q, _, _ := c.holdState(); return q == 2 })

	xcancel()
	o := <-x
	if !errors.Is(o.err, ErrNotSent) || !errors.Is(o.err, context.Canceled) || errors.Is(o.err, ErrOutcomeUnknown) {
		t.Fatalf("cancelled held command: %v; want ErrNotSent and context.Canceled", o.err)
	}

	g.let <- struct{}{}
	wantReply(t, "GET b", got[1], "b")
	f.Expect("GET", "y") // not SET x: its bytes were removed
	f.Reply("$1\r\ny\r\n")
	wantReply(t, "GET y", y, "y")
	z := doAsync(ctx, c, "GET", "z")
	f.Expect("GET", "z")
	f.Reply("$1\r\nz\r\n")
	wantReply(t, "GET z", z, "z")
}

// afterBurst has one read wake the callers of GETs of keys (two or more) at once, and
// waits until the read role is given up: the connection is quiet, right after a
// burst (pipeline.go).
func afterBurst(t *testing.T, c *Conn, f *fakeServer, keys ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := writeGETs(ctx, c, f, keys...)
	replies := ""
	for _, k := range keys {
		replies += "$1\r\n" + k + "\r\n"
	}
	f.Reply(replies) // one read
	for i, k := range keys {
		wantReply(t, "GET "+k, got[i], k)
	}
	testkit.WaitFor(t, "the read role given up", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.r.reading
	})
}

// When one read wakes several callers and leaves nothing in flight, the first of them
// to queue its next command does not write it alone, as a caller on a quiet
// connection does: the writer goroutine writes it, with whatever the others queue.
func TestCommandAfterABurstIsNotWrittenAlone(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	afterBurst(t, c, f, "a", "b", "c")

	served := make(chan struct{})
	go func() { // the fake's side, whoever writes: an inline write waits for it
		defer close(served)
		f.Expect("GET", "a")
		f.Reply("$1\r\na\r\n")
	}()
	ctx := context.Background()
	cl := c.getCall(1)
	if err := c.enqueue(ctx, cl, "", nil, []any{"GET", "a"}); err != nil {
		t.Fatal(err)
	}
	if cl.reader == readBySelf {
		t.Error("the first command after a read that woke several callers was written by its caller, alone")
	}
	if err := c.wait(ctx, cl); err != nil || cl.err != nil {
		t.Fatalf("GET after the burst: %v, %v", err, cl.err)
	}
	c.putCall(cl)
	<-served
}

// StartEncoded on a connection a burst has just left quiet does not write on its
// caller's goroutine, as it does on a quiet connection: the writer goroutine writes
// the batch (with whatever the burst's callers queue), and the reader goroutine reads
// its replies while the caller has yet to Wait.
func TestStartEncodedAfterABurst(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	afterBurst(t, c, f, "a", "b")

	type started struct {
		p   Pending
		err error
	}
	start := make(chan started, 1)
	go func() {
		payload := []byte("*2\r\n$3\r\nGET\r\n$2\r\ne1\r\n*2\r\n$3\r\nGET\r\n$2\r\ne2\r\n")
		p, err := c.StartEncoded(context.Background(), 2, payload, nil)
		start <- started{p, err}
	}()
	var s started
	testkit.WaitFor(t, "StartEncoded returned before the fake read its batch", func() bool {
		select {
		case s = <-start:
			return true
		default:
			return false
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	f.Expect("GET", "e1")
	f.Expect("GET", "e2")
	f.Reply("$2\r\nv1\r\n$2\r\nv2\r\n")
	testkit.WaitFor(t, "the replies read before Wait", func() bool {
		_, _, n := c.holdState()
		return n == 0
	})
	res, err := s.p.Wait()
	if err != nil || len(res) != 2 || res[0].Value.String() != `"v1"` || res[1].Value.String() != `"v2"` {
		t.Fatalf("StartEncoded after a burst: %v, %v", res, err)
	}
}
