package conn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/resp"
)

// Options configures one connection. The zero value speaks RESP3 without
// authentication, with the default timeouts.
type Options struct {
	// Protocol is 3 (the default: HELLO 3, falling back to RESP2 when the server does
	// not know HELLO or refuses RESP3) or 2 (RESP2 only).
	Protocol   int
	Username   string // ACL user; "default" when only Password is set
	Password   string
	ClientName string // CLIENT SETNAME
	DB         int    // SELECT db when not 0
	TLS        *tls.Config

	DialTimeout  time.Duration // connect and handshake; default 5s
	ReadTimeout  time.Duration // longest wait for the next reply while requests are in flight; default 3s, -1 for none
	WriteTimeout time.Duration // longest socket write; default 3s, -1 for none

	// Limits bound the replies this connection accepts; a reply over a limit closes it.
	Limits resp.Limits

	// PushHandler receives RESP3 push frames (and, on a RESP2 connection in pub/sub
	// mode, every frame). It runs on the connection's reader goroutine: it must not
	// block or call back into the connection.
	PushHandler func(resp.Value)

	// Dialer opens the transport; net.Dialer by default. Tests inject fakes here.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

const (
	defaultDialTimeout  = 5 * time.Second
	defaultReadTimeout  = 3 * time.Second
	defaultWriteTimeout = 3 * time.Second
	maxSpareBuffer      = 1 << 20 // larger write buffers are dropped after use, not kept
)

func (o *Options) validate() error {
	switch {
	case o.Protocol != 0 && o.Protocol != 2 && o.Protocol != 3:
		return fmt.Errorf("%w: protocol %d (want 2 or 3)", ErrInvalidOptions, o.Protocol)
	case o.DB < 0:
		return fmt.Errorf("%w: negative db %d", ErrInvalidOptions, o.DB)
	case o.DialTimeout < 0:
		return fmt.Errorf("%w: negative dial timeout", ErrInvalidOptions)
	case o.Username != "" && o.Password == "":
		return fmt.Errorf("%w: username %q without password", ErrInvalidOptions, o.Username)
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Conn is one physical connection to a server, shared by any number of goroutines:
// their commands are written in batches by one writer and their replies matched in
// order by one reader.
type Conn struct {
	nc           net.Conn
	addr         string
	readTimeout  time.Duration
	writeTimeout time.Duration
	push         func(resp.Value)
	caps         Capabilities

	// Learned in the handshake, then read-only.
	proto         int
	id            int64
	server        string
	serverVersion string

	mu        sync.Mutex
	wbuf      []byte    // encoded commands not yet written
	queued    []*call   // the calls whose bytes are in wbuf, in order
	inflight  callQueue // written calls awaiting replies, in write order
	err       error     // first fatal error; set once
	deadlined bool      // a read deadline is armed

	pubsub2 atomic.Bool   // RESP2 pub/sub mode: every frame is a push
	wake    chan struct{} // tells the writer there is something to write
	dead    chan struct{} // closed by fatal
	loops   sync.WaitGroup
}

// Dial connects to addr, performs the handshake (HELLO, AUTH, SETNAME, SELECT), learns
// the connection's CLIENT ID and starts its reader and writer goroutines.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, orDefault(opts.DialTimeout, defaultDialTimeout))
	defer cancel()
	nc, err := dialTransport(ctx, addr, &opts)
	if err != nil {
		return nil, fmt.Errorf("conn: dial %s: %w", addr, err)
	}
	c := newConn(nc, addr, &opts)
	if err := c.handshake(ctx, &opts); err != nil {
		c.Close()
		return nil, fmt.Errorf("conn: handshake with %s: %w", addr, err)
	}
	return c, nil
}

func dialTransport(ctx context.Context, addr string, opts *Options) (net.Conn, error) {
	dial := opts.Dialer
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if opts.TLS == nil {
		return nc, nil
	}
	cfg := opts.TLS
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

func newConn(nc net.Conn, addr string, opts *Options) *Conn {
	if tc, ok := nc.(*net.TCPConn); ok {
		// Latency matters more than packet count: batching happens above the socket.
		tc.SetNoDelay(true)
	}
	c := &Conn{
		nc:           nc,
		addr:         addr,
		readTimeout:  orDefault(opts.ReadTimeout, defaultReadTimeout),
		writeTimeout: orDefault(opts.WriteTimeout, defaultWriteTimeout),
		push:         opts.PushHandler,
		proto:        2,
		wake:         make(chan struct{}, 1),
		dead:         make(chan struct{}),
	}
	rd := resp.NewReader(bufio.NewReaderSize(nc, 64<<10), opts.Limits)
	c.loops.Add(2)
	go c.readLoop(rd)
	go c.writeLoop()
	return c
}

// Addr returns the address the connection was dialled to.
func (c *Conn) Addr() string { return c.addr }

// Protocol returns 3 when the connection speaks RESP3, else 2.
func (c *Conn) Protocol() int { return c.proto }

// ID returns the server-assigned CLIENT ID, and false when it could not be learned
// (for instance when an ACL denies CLIENT ID on a server without HELLO).
func (c *Conn) ID() (int64, bool) { return c.id, c.id > 0 }

// Server returns the server's name ("redis", "valkey") and version as HELLO reported
// them, or empty strings when HELLO was not available.
func (c *Conn) Server() (name, version string) { return c.server, c.serverVersion }

// Capabilities returns this connection's own capability memory.
func (c *Conn) Capabilities() *Capabilities { return &c.caps }

// Err returns the error that broke the connection, or nil while it is usable.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Done is closed when the connection breaks or is closed.
func (c *Conn) Done() <-chan struct{} { return c.dead }

// Close closes the connection, fails every pending command and waits for the
// connection's goroutines to stop. Commands already written get ErrOutcomeUnknown.
func (c *Conn) Close() error {
	c.fatal(ErrClosed)
	c.loops.Wait()
	return nil
}

// Ping sends PING and checks the reply.
func (c *Conn) Ping(ctx context.Context) error {
	_, err := c.Do(ctx, "PING")
	return err
}

// SetPubSubMode switches a RESP2 connection into subscriber mode, where the server's
// frames are pub/sub messages, not replies: every frame then goes to the push handler.
// It has no effect on RESP3, where such frames are pushes already.
func (c *Conn) SetPubSubMode(on bool) {
	if c.proto == 2 {
		c.pubsub2.Store(on)
	}
}

// Do sends one command and waits for its reply. A server error reply is returned as a
// *resp.ServerError; a null reply is a value. If ctx ends first, Do returns at once with
// a *CallError that matches ctx.Err() and either ErrNotSent or ErrOutcomeUnknown; a
// command already written still runs and its reply is read and dropped.
func (c *Conn) Do(ctx context.Context, args ...any) (resp.Value, error) {
	return c.do(ctx, false, args)
}

// DoBlocking is Do for a command that blocks on the server (BLPOP, XREAD BLOCK, WAIT):
// no read timeout applies while it waits; ctx bounds it. Use it on a connection of your
// own, since every command queued behind it waits too.
func (c *Conn) DoBlocking(ctx context.Context, args ...any) (resp.Value, error) {
	return c.do(ctx, true, args)
}

func (c *Conn) do(ctx context.Context, blocking bool, args []any) (resp.Value, error) {
	cl := getCall(1)
	cl.noTimeout = blocking
	if err := c.enqueue(ctx, cl, args); err != nil {
		putCall(cl)
		return resp.Value{}, err
	}
	if err := c.wait(ctx, cl); err != nil {
		return resp.Value{}, err
	}
	v, err := cl.reply, cl.err
	putCall(cl)
	if err != nil {
		return resp.Value{}, err
	}
	if e := v.Err(); e != nil {
		return resp.Value{}, e
	}
	return v, nil
}

// Result is the outcome of one command of a batch.
type Result struct {
	Value resp.Value
	Err   error // a *resp.ServerError for an error reply, else a transport error
}

// resultOf turns a reply into a Result: an error reply becomes Err, with a zero Value.
func resultOf(v resp.Value) Result {
	if err := v.Err(); err != nil {
		return Result{Err: err}
	}
	return Result{Value: v}
}

// ResultOf is resultOf for packages that split batches themselves (transactions).
func ResultOf(v resp.Value) Result { return resultOf(v) }

// DoMulti sends the commands back to back in one write and waits for all their replies.
// It returns an error only when the batch as a whole failed (invalid argument, ctx
// ended, connection lost); then no Result is returned. Error replies of single commands
// are in their Result.
func (c *Conn) DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	cl := getCall(len(cmds))
	cl.multi = true
	cl.replies = make([]resp.Value, 0, len(cmds))
	if err := c.enqueueMulti(ctx, cl, cmds); err != nil {
		putCall(cl)
		return nil, err
	}
	if err := c.wait(ctx, cl); err != nil {
		return nil, err
	}
	replies, err := cl.replies, cl.err
	putCall(cl)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(replies))
	for i, v := range replies {
		out[i] = resultOf(v)
	}
	return out, nil
}

// Send writes a command that gets no reply of its own (SUBSCRIBE and friends, whose
// confirmations arrive as pushes) and returns once it has been written.
func (c *Conn) Send(ctx context.Context, args ...any) error {
	cl := getCall(0)
	if err := c.enqueue(ctx, cl, args); err != nil {
		putCall(cl)
		return err
	}
	if err := c.wait(ctx, cl); err != nil {
		return err
	}
	err := cl.err
	putCall(cl)
	return err
}

// enqueue encodes args into the write buffer and queues cl behind it.
func (c *Conn) enqueue(ctx context.Context, cl *call, args []any) error {
	if err := ctx.Err(); err != nil {
		return &CallError{Err: err}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return &CallError{Err: err}
	}
	start := len(c.wbuf)
	buf, err := resp.AppendCommand(c.wbuf, args...)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.wbuf = buf
	c.queueLocked(cl, start)
	return nil
}

func (c *Conn) enqueueMulti(ctx context.Context, cl *call, cmds [][]any) error {
	if err := ctx.Err(); err != nil {
		return &CallError{Err: err}
	}
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return &CallError{Err: err}
	}
	start := len(c.wbuf)
	buf := c.wbuf
	for i, args := range cmds {
		var err error
		if buf, err = resp.AppendCommand(buf, args...); err != nil {
			c.wbuf = buf[:start]
			c.mu.Unlock()
			return fmt.Errorf("command %d: %w", i, err)
		}
	}
	c.wbuf = buf
	c.queueLocked(cl, start)
	return nil
}

// queueLocked registers cl for the bytes from start to the end of wbuf and wakes the
// writer if this is the first request since its last write. It unlocks c.mu.
func (c *Conn) queueLocked(cl *call, start int) {
	cl.state = stateQueued
	cl.start, cl.end = start, len(c.wbuf)
	c.queued = append(c.queued, cl)
	first := len(c.queued) == 1
	c.mu.Unlock()
	if first {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// wait blocks until cl completes or ctx ends. On a nil return the caller owns cl and
// reads its result. On an error return cl belongs to the connection.
func (c *Conn) wait(ctx context.Context, cl *call) error {
	select {
	case <-cl.done:
		return nil
	case <-ctx.Done():
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
		putCall(cl)
		return &CallError{Err: context.Cause(ctx)}
	default:
		cl.state = stateAbandoned
		c.mu.Unlock()
		return &CallError{Written: true, Err: context.Cause(ctx)}
	}
}

// unqueueLocked removes a call that has not been written, bytes and all, so that it
// never runs.
func (c *Conn) unqueueLocked(cl *call) {
	n := cl.end - cl.start
	c.wbuf = append(c.wbuf[:cl.start], c.wbuf[cl.end:]...)
	idx := -1
	for i, q := range c.queued {
		if q == cl {
			idx = i
		} else if idx >= 0 {
			q.start -= n
			q.end -= n
		}
	}
	c.queued = append(c.queued[:idx], c.queued[idx+1:]...)
}

func (c *Conn) writeLoop() {
	defer c.loops.Done()
	var spare []byte
	for {
		select {
		case <-c.wake:
		case <-c.dead:
			return
		}
		for {
			c.mu.Lock()
			if c.err != nil || len(c.queued) == 0 {
				c.mu.Unlock()
				break
			}
			buf := c.wbuf
			c.wbuf = spare[:0]
			armTimeout := false
			for _, cl := range c.queued {
				if cl.want == 0 {
					cl.state = stateReplied
					cl.done <- struct{}{}
					continue
				}
				cl.state = stateWritten
				c.inflight.push(cl)
				armTimeout = armTimeout || !cl.noTimeout
			}
			clear(c.queued)
			c.queued = c.queued[:0]
			c.armReadDeadlineLocked(armTimeout)
			c.mu.Unlock()

			if c.writeTimeout > 0 {
				c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
			}
			if _, err := c.nc.Write(buf); err != nil {
				c.fatal(err)
				return
			}
			spare = nil
			if cap(buf) <= maxSpareBuffer {
				spare = buf
			}
		}
	}
}

// armReadDeadlineLocked sets the read deadline for what is now in flight: a reply is due
// within the read timeout unless a blocking command waits, in which case there is none.
func (c *Conn) armReadDeadlineLocked(timed bool) {
	if c.readTimeout <= 0 {
		return
	}
	if timed && !c.hasBlockingLocked() {
		c.nc.SetReadDeadline(time.Now().Add(c.readTimeout))
		c.deadlined = true
	} else if c.deadlined {
		c.nc.SetReadDeadline(time.Time{})
		c.deadlined = false
	}
}

func (c *Conn) hasBlockingLocked() bool {
	for _, cl := range c.inflight.items[c.inflight.head:] {
		if cl.noTimeout {
			return true
		}
	}
	return false
}

func (c *Conn) readLoop(rd *resp.Reader) {
	defer c.loops.Done()
	for {
		v, err := rd.Read()
		if err != nil {
			c.fatal(err)
			return
		}
		if v.Kind() == resp.KindPush || c.pubsub2.Load() {
			if c.push != nil {
				c.push(v)
			}
			continue
		}
		if err := c.dispatch(v); err != nil {
			c.fatal(err)
			return
		}
	}
}

// dispatch hands v to the oldest written call.
func (c *Conn) dispatch(v resp.Value) error {
	c.mu.Lock()
	cl := c.inflight.peek()
	if cl == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnexpectedReply, v)
	}
	if !cl.deliver(v) {
		c.mu.Unlock()
		return nil
	}
	c.inflight.pop()
	if c.inflight.len() == 0 && c.deadlined {
		c.nc.SetReadDeadline(time.Time{})
		c.deadlined = false
	} else if c.deadlined {
		// Progress: the next reply gets a full read timeout of its own.
		c.nc.SetReadDeadline(time.Now().Add(c.readTimeout))
	}
	abandoned := cl.state == stateAbandoned
	cl.state = stateReplied
	c.mu.Unlock()
	if abandoned {
		putCall(cl)
	} else {
		cl.done <- struct{}{}
	}
	return nil
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
	queued := c.queued
	c.queued = nil
	c.wbuf = nil
	written := c.inflight.drain()
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
	for _, cl := range queued {
		cl.done <- struct{}{}
	}
	for i, cl := range written {
		if abandoned[i] {
			putCall(cl) // nobody waits for it any more
		} else {
			cl.done <- struct{}{}
		}
	}
}
