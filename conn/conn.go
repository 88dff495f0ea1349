package conn

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
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
	ReadTimeout  time.Duration // longest wait for the next reply while requests are in flight (noticed within 1.5x); default 3s, -1 for none
	WriteTimeout time.Duration // longest socket write (noticed within 1.5x); default 3s, -1 for none

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
	maxSpareBuffer      = 1 << 20  // larger write buffers are dropped after use, not kept
	keptBuffer          = 64 << 10 // write buffers up to this size are always kept for reuse
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

	rd   *resp.Reader    // used only by the holder of the read role
	br   *bufio.Reader   // under rd, for waits that must not parse (inlineread.go)
	raw  syscall.RawConn // the plain TCP socket, for non-blocking writes; nil under TLS
	nbw  nonBlockingWrite
	spin spinWait       // polling for a reply the caller reads itself (spin.go)
	pos  streamPosition // how far the reader is through the stream (catchup.go)

	mu        sync.Mutex
	wbuf      []byte    // encoded commands not yet written
	spare     []byte    // the previous write buffer, reused by the next batch
	tail      []byte    // the unwritten rest of a batch, for the writer goroutine
	queued    []*call   // the calls whose bytes are in wbuf, in order
	inflight  callQueue // written calls awaiting replies, in write order
	writing   bool      // the write role is held (by a caller or the writer goroutine)
	reading   bool      // the read role is held (by a caller or the reader goroutine)
	err       error     // first fatal error; set once
	deadlined bool      // a read deadline is armed, for readDue
	readDue   int64     // nanotime of the armed read deadline
	writeDue  int64     // nanotime of the write deadline; used only by the write role

	blockingInflight int   // written blocking commands awaiting replies: no read deadline then
	idleSince        int64 // nanotime when the last reply left nothing in flight; 0 before any

	// The interruption of a cancellable caller's own read (inlineread.go).
	readDeadline  time.Time       // the deadline requests in flight really have
	watched       context.Context // the context the watcher is registered for (watch.go)
	watchedDone   <-chan struct{} // its Done channel
	unwatch       func() bool     // deregisters that watcher
	watchWaiters  int             // calls waiting for the watcher to wake them
	lastDone      <-chan struct{} // the Done channel of the last call that was not watched
	interruptible bool            // a read for watched is under way
	interrupted   bool            // the watcher moved the deadline into the past
	interruptFn   func()          // c.interrupt, bound once

	// alwaysRead: a push handler is set, so the reader goroutine reads all the time,
	// pushes arriving while no command waits included.
	alwaysRead bool
	pubsub2    atomic.Bool   // RESP2 pub/sub mode: every frame is a push
	wake       chan struct{} // hands the write role to the writer goroutine
	readWake   chan struct{} // hands the read role to the reader goroutine
	dead       chan struct{} // closed by fatal
	loops      sync.WaitGroup
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
	if tc, ok := nc.(*net.TCPConn); ok && rawIO {
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
		readWake:     make(chan struct{}, 1),
		dead:         make(chan struct{}),
		alwaysRead:   opts.PushHandler != nil,
	}
	c.br = bufio.NewReaderSize(countingReader{c}, 64<<10)
	c.rd = resp.NewReader(c.br, opts.Limits)
	c.interruptFn = c.interrupt
	if tc, ok := nc.(*net.TCPConn); ok && rawIO {
		c.raw, _ = tc.SyscallConn()
		c.nbw.fn = c.nbw.write
		c.spin.fn, c.spin.budget = c.spin.poll, spinBudget
	}
	c.reading = c.alwaysRead
	c.startCounting()
	c.loops.Add(2)
	go c.readLoop()
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
	return c.DoWith(ctx, CallOptions{}, args...)
}

// DoBlocking is Do for a command that blocks on the server (BLPOP, XREAD BLOCK, WAIT):
// no read timeout applies while it waits; ctx bounds it. Use it on a connection of your
// own, since every command queued behind it waits too.
func (c *Conn) DoBlocking(ctx context.Context, args ...any) (resp.Value, error) {
	return c.DoWith(ctx, CallOptions{Blocking: true}, args...)
}

// CallOptions adjust how one command is encoded and awaited.
type CallOptions struct {
	// Blocking: the command blocks on the server, so no read timeout applies (as
	// DoBlocking).
	Blocking bool
	// KeyPrefix is prepended, while encoding, to the arguments at the positions in
	// Keys (ascending, 0 being the command name): a client's key prefix, applied
	// without copying the caller's arguments.
	KeyPrefix string
	Keys      []int
}

// DoWith is Do with options.
func (c *Conn) DoWith(ctx context.Context, o CallOptions, args ...any) (resp.Value, error) {
	cl := getCall(1)
	cl.noTimeout = o.Blocking
	if err := c.enqueue(ctx, cl, o.KeyPrefix, o.Keys, args); err != nil {
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

// ResultOf turns a reply into a Result: an error reply becomes Err, with a zero Value.
// Packages that split batches themselves (transactions) use it too.
func ResultOf(v resp.Value) Result {
	if err := v.Err(); err != nil {
		return Result{Err: err}
	}
	return Result{Value: v}
}

// DoMulti sends the commands back to back in one write and waits for all their replies.
// It returns an error only when the batch as a whole failed (invalid argument, ctx
// ended, connection lost); then no Result is returned. Error replies of single commands
// are in their Result.
func (c *Conn) DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error) {
	return c.DoMultiWith(ctx, "", nil, cmds...)
}

// DoMultiWith is DoMulti with keyPrefix prepended to the arguments at keys[i] of
// cmds[i] (see CallOptions.KeyPrefix); keys may be nil.
func (c *Conn) DoMultiWith(ctx context.Context, keyPrefix string, keys [][]int, cmds ...[]any) ([]Result, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	if keys != nil && len(keys) != len(cmds) {
		return nil, fmt.Errorf("%w: %d key lists for %d commands", ErrInvalidOptions, len(keys), len(cmds))
	}
	cl := getCall(len(cmds))
	cl.multi = true
	cl.results = make([]Result, 0, len(cmds))
	if err := c.enqueueMulti(ctx, cl, keyPrefix, keys, cmds); err != nil {
		putCall(cl)
		return nil, err
	}
	return c.waitResults(ctx, cl)
}

// DoEncoded sends n commands already encoded back to back in payload (as
// resp.AppendCommand writes them) and waits for their n replies. It is how a pipeline
// that encoded its commands as they were added sends them without a second pass.
// payload must hold exactly n complete commands: a wrong n desynchronises the
// connection, which then breaks on the first reply without a request.
func (c *Conn) DoEncoded(ctx context.Context, n int, payload []byte) ([]Result, error) {
	if n <= 0 || len(payload) == 0 {
		return nil, fmt.Errorf("%w: %d commands in %d bytes", ErrInvalidOptions, n, len(payload))
	}
	cl := getCall(n)
	cl.multi = true
	cl.results = make([]Result, 0, n)
	if err := c.lockForEnqueue(ctx); err != nil {
		putCall(cl)
		return nil, err
	}
	start := len(c.wbuf)
	c.wbuf = append(c.wbuf, payload...)
	c.submitLocked(ctx, cl, start)
	return c.waitResults(ctx, cl)
}

func (c *Conn) waitResults(ctx context.Context, cl *call) ([]Result, error) {
	if err := c.wait(ctx, cl); err != nil {
		return nil, err
	}
	results, err := cl.results, cl.err
	putCall(cl)
	if err != nil {
		return nil, err
	}
	return results, nil
}

// Send writes a command that gets no reply of its own (SUBSCRIBE and friends, whose
// confirmations arrive as pushes) and returns once it has been written.
func (c *Conn) Send(ctx context.Context, args ...any) error {
	cl := getCall(0)
	if err := c.enqueue(ctx, cl, "", nil, args); err != nil {
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
