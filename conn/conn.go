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
	"syscall"
	"time"

	"github.com/respire/respire/observe"
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

	// Credentials, when set, gives the username and password for the handshake in
	// place of Username and Password, which must then be empty. It is asked at every
	// dial, with the dial's context (bounded by DialTimeout, and ended as Dial returns,
	// whatever the outcome: the client's credential rotation waits for it), before
	// anything is dialled; its error fails Dial with an error matching ErrCredentials.
	Credentials func(ctx context.Context) (Credentials, error)

	// OnConnect runs after the handshake, before the connection is handed out; an error
	// closes it and fails Dial. Its ctx is the dial's.
	OnConnect func(ctx context.Context, cn *Conn) error

	// Observer receives this connection's events (dialled, dial failed, lost,
	// re-authenticated); nil for none.
	Observer observe.Observer
}

// Credentials are an ACL user and password, and when they stop being valid (zero:
// never).
type Credentials struct {
	Username  string // "default" when empty
	Password  string
	ExpiresAt time.Time
}

// DefaultDialTimeout bounds a dial and its handshake when Options.DialTimeout is zero;
// routers that bound other steps of making a connection ready by DialTimeout use it too.
const DefaultDialTimeout = 5 * time.Second

const (
	defaultReadTimeout  = 3 * time.Second
	defaultWriteTimeout = 3 * time.Second
	maxSpareBuffer      = 1 << 20  // larger write buffers are dropped after use, not kept
	maxBatch            = 64 << 10 // the writer goroutine stops waiting for more commands at this size
	// keptBuffer: write buffers up to this size are always kept for reuse. Four batches'
	// worth: the commands held during a burst leave together, so a batch passes
	// maxBatch (64 goroutines writing 1 KiB values do), and a buffer grown past a
	// smaller bound was dropped after the next small batch and allocated again, about
	// 1 KB a command in BenchmarkClientSetParallel.
	keptBuffer = 4 * maxBatch
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
	case o.Credentials != nil && (o.Username != "" || o.Password != ""):
		return fmt.Errorf("%w: Credentials together with Username or Password", ErrInvalidOptions)
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
//
// Its state is in four parts, one concern each, all under the one lock mu except where
// a field says otherwise: the write side (encoding and writing batches), the read side
// (decoding replies and matching them to calls), the context watch (waking callers
// whose context ends), and the identity learned in the handshake. One lock, not one
// per part, because a batch moves from one side to the other in one step.
type Conn struct {
	nc    net.Conn
	raw   syscall.RawConn  // the plain TCP socket, for non-blocking writes and polls; nil under TLS
	ident identity         // set by the handshake, then read-only
	obs   observe.Observer // Options.Observer; nil for none

	mu    sync.Mutex
	peek  idlePeek // the peek at raw before a command after an idle spell (lockForEnqueue), bound once
	w     writeSide
	r     readSide
	watch contextWatch
	auth  authState     // the credentials in use and a re-authentication kept out of a transaction (auth.go)
	open  bool          // Dial returned the connection: a failure from now on is a lost connection
	err   error         // first fatal error; set once
	dead  chan struct{} // closed by fatal
	loops sync.WaitGroup
	calls *sync.Pool // where its calls are recycled (call.go)
	// timers are the stopped timers of waits for a call's deadline (awaitDone),
	// reused: a timer made per wait costs two allocations. They are the connection's
	// own, like its calls in a testing/synctest bubble: a timer belongs to the bubble
	// it was made in.
	timers sync.Pool
}

// identity is what a connection is and what it learned of its server in the handshake.
type identity struct {
	addr    string
	proto   int
	id      int64
	server  string
	version string
	caps    Capabilities // synchronised on its own
	scripts sync.Map     // Lua source → the digest its SCRIPT LOAD gave (scriptdigest.go)
}

// writeSide is the write role's state: the commands encoded and queued, and the batch
// being written.
type writeSide struct {
	timeout time.Duration    // longest socket write; 0 for none
	buf     []byte           // encoded commands not yet written
	spare   []byte           // the previous write buffer, reused by the next batch
	tail    []byte           // the unwritten rest of a batch, for the writer goroutine
	queued  []*call          // the calls whose bytes are in buf, in order
	writing bool             // the write role is held (by a caller or the writer goroutine)
	wake    chan struct{}    // hands the write role to the writer goroutine
	due     int64            // nanotime of the write deadline; used only by the write role
	nbw     nonBlockingWrite // used only by the write role
}

// readSide is the read role's state: the decoder, the calls awaiting replies, and the
// read deadline.
type readSide struct {
	timeout time.Duration    // longest wait for the next reply while requests are in flight; 0 for none
	push    func(resp.Value) // the push handler; nil for none
	// alwaysRead: a push handler is set, so the reader goroutine reads all the time,
	// pushes arriving while no command waits included.
	alwaysRead bool
	pubsub2    atomic.Bool   // RESP2 pub/sub mode: every frame is a push
	wake       chan struct{} // hands the read role to the reader goroutine

	// Used only by the holder of the read role.
	dec  *resp.Reader
	buf  *bufio.Reader  // under dec, for waits that must not parse (inlineread.go)
	spin spinWait       // polling for a reply the caller reads itself (spin.go)
	pos  streamPosition // how far the reader is through the stream (catchup.go)

	inflight         callQueue // written calls awaiting replies, in write order
	reading          bool      // the read role is held (by a caller or the reader goroutine)
	blockingInflight int       // written blocking commands awaiting replies: no read deadline then
	idleSince        int64     // nanotime when the last reply left nothing in flight; 0 before any
	deadlined        bool      // a read deadline is armed, for due
	due              int64     // nanotime of the armed read deadline
	deadline         time.Time // the deadline requests in flight really have, even while interrupted
	by               int64     // nanotime of the deadline of the call whose caller reads (CallOptions.Deadline); 0 for none
	// burst: the holder of the read role has a whole frame of its last read to hand
	// out, while a reply that is not a blocking command's is awaited. Commands queued
	// meanwhile are held for one batch (pipeline.go). Written by the holder of the
	// read role only, under mu.
	burst bool
	// afterBurst: a burst that woke several callers ended with nothing left in
	// flight. They are about to queue their next commands: the first does not write
	// alone as on a quiet connection, the writer goroutine waits for the others
	// (pipeline.go). Under mu; the next batch taken clears it.
	afterBurst bool
	burstCalls int // calls completed since the burst began, by the holder of the read role
}

// contextWatch is the one context a connection watches (watch.go), and the
// interruption of a cancellable caller's own read (inlineread.go).
type contextWatch struct {
	ctx           context.Context // the context the watcher is registered for
	done          <-chan struct{} // its Done channel
	cancel        func() bool     // deregisters that watcher
	waiters       int             // calls waiting for the watcher to wake them
	lastDone      <-chan struct{} // the Done channel of the last call that was not watched
	interruptible bool            // a read for ctx is under way
	interrupted   bool            // the watcher moved the read deadline into the past
	interruptFn   func()          // c.interrupt, bound once
}

// Dial connects to addr, performs the handshake (HELLO, AUTH, SETNAME, SELECT), learns
// the connection's CLIENT ID, runs Options.OnConnect and starts its reader and writer
// goroutines. With Options.Credentials it asks the provider first; its error fails the
// dial with an error matching ErrCredentials and the provider's error, before anything
// is dialled.
func Dial(ctx context.Context, addr string, opts Options) (*Conn, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Observer == nil {
		return dial(ctx, addr, &opts)
	}
	start := time.Now()
	c, err := dial(ctx, addr, &opts)
	e := observe.Conn{Kind: observe.ConnDialed, Addr: addr, Duration: time.Since(start), Err: err}
	if err != nil {
		e.Kind = observe.ConnDialFailed
	}
	opts.Observer.Conn(e)
	return c, err
}

func dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(opts.DialTimeout, DefaultDialTimeout))
	defer cancel()
	cr, err := credentialsOf(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w for %s: %w", ErrCredentials, addr, err)
	}
	nc, err := dialTransport(ctx, addr, opts)
	if err != nil {
		return nil, dialError(addr, err)
	}
	c := newConn(nc, addr, opts)
	c.auth.track = opts.Credentials != nil
	if err := c.handshake(ctx, opts, cr); err != nil {
		c.Close()
		return nil, &stepError{step: "handshake with", addr: addr, err: err}
	}
	if opts.OnConnect != nil {
		if err := opts.OnConnect(ctx, c); err != nil {
			c.Close()
			return nil, &stepError{step: "OnConnect for", addr: addr, err: err}
		}
	}
	c.mu.Lock()
	c.open = true
	c.mu.Unlock()
	return c, nil
}

// dialError is the error of a failed dial of addr. The net package's own error says
// "dial tcp addr" already; any other (a custom Dialer's, a TLS handshake's) is told
// here what was dialled.
func dialError(addr string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("conn: %w", err)
	}
	return fmt.Errorf("conn: dial %s: %w", addr, err)
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
		nc:    nc,
		ident: identity{addr: addr, proto: 2},
		obs:   opts.Observer,
		w: writeSide{
			timeout: orDefault(opts.WriteTimeout, defaultWriteTimeout),
			wake:    make(chan struct{}, 1),
		},
		r: readSide{
			timeout:    orDefault(opts.ReadTimeout, defaultReadTimeout),
			push:       opts.PushHandler,
			alwaysRead: opts.PushHandler != nil,
			wake:       make(chan struct{}, 1),
		},
		dead: make(chan struct{}),
	}
	c.r.buf = bufio.NewReaderSize(countingReader{c}, 64<<10)
	c.r.dec = resp.NewReader(c.r.buf, opts.Limits)
	c.watch.interruptFn = c.interrupt
	c.calls = callsFor(time.Now())
	if tc, ok := nc.(*net.TCPConn); ok && rawIO {
		c.raw, _ = tc.SyscallConn()
		c.w.nbw.fn = c.w.nbw.write
		c.r.spin.fn, c.r.spin.budget = c.r.spin.poll, spinBudget
		c.peek.fn = c.peek.peek
	}
	c.r.reading = c.r.alwaysRead
	c.startCounting()
	c.loops.Add(2)
	go c.readLoop()
	go c.writeLoop()
	return c
}

// Addr returns the address the connection was dialled to.
func (c *Conn) Addr() string { return c.ident.addr }

// Protocol returns 3 when the connection speaks RESP3, else 2.
func (c *Conn) Protocol() int { return c.ident.proto }

// ID returns the server-assigned CLIENT ID, and false when it could not be learned
// (for instance when an ACL denies CLIENT ID on a server without HELLO).
func (c *Conn) ID() (int64, bool) { return c.ident.id, c.ident.id > 0 }

// Server returns the server's name ("redis", "valkey") and version as HELLO reported
// them, or empty strings when HELLO was not available.
func (c *Conn) Server() (name, version string) { return c.ident.server, c.ident.version }

// Capabilities returns this connection's own capability memory.
func (c *Conn) Capabilities() *Capabilities { return &c.ident.caps }

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
// frames are pub/sub messages, not replies: every array frame then goes to the push
// handler, and so does every other frame (an error reply such as -MOVED to an
// SSUBSCRIBE) while no call waits. A non-array frame that comes while a call waits is
// that call's reply (an AUTH queued before the switch). It has no effect on RESP3,
// where such frames are pushes already.
func (c *Conn) SetPubSubMode(on bool) {
	if c.ident.proto == 2 {
		c.r.pubsub2.Store(on)
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
	// Deadline, when not zero, is when the caller stops waiting for the reply, as if
	// ctx had that deadline: the call then fails with a *CallError that matches
	// context.DeadlineExceeded and says whether the command was written (its reply is
	// read and dropped). It costs no derived context: for callers that bound each of
	// many calls (a Redlock bounds each server's part), where a context per call, and
	// the watch of each on every connection it reaches, would be most of what a call
	// allocates.
	Deadline time.Time
}

// DoWith is Do with options.
func (c *Conn) DoWith(ctx context.Context, o CallOptions, args ...any) (resp.Value, error) {
	cl, err := c.startOne(ctx, o, args, readByAny)
	if err != nil {
		return resp.Value{}, err
	}
	return c.replyOf(ctx, cl, o.Deadline)
}

// startOne queues one command with the options o for a call whose replies reader may
// read (DoWith's caller may take the read role, StartWith's may not).
func (c *Conn) startOne(ctx context.Context, o CallOptions, args []any, reader readRole) (*call, error) {
	if !o.Deadline.IsZero() && !time.Now().Before(o.Deadline) {
		return nil, &CallError{Err: context.DeadlineExceeded}
	}
	cl := c.getCall(1)
	cl.noTimeout = o.Blocking
	cl.reader = reader
	if err := c.enqueueBounded(ctx, cl, o.KeyPrefix, o.Keys, args, !o.Deadline.IsZero()); err != nil {
		c.putCall(cl)
		return nil, err
	}
	return cl, nil
}

// replyOf waits for the reply of cl, a call of one command that startOne queued,
// until ctx ends or by (if not zero) passes, and returns it as DoWith does.
func (c *Conn) replyOf(ctx context.Context, cl *call, by time.Time) (resp.Value, error) {
	if err := c.waitBy(ctx, cl, by); err != nil {
		return resp.Value{}, err
	}
	v, err := cl.reply, cl.err
	c.putCall(cl)
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
	cl := c.getCall(len(cmds))
	cl.results = make([]Result, 0, len(cmds))
	if err := c.enqueueMulti(ctx, cl, keyPrefix, keys, cmds); err != nil {
		c.putCall(cl)
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
	p, err := c.startEncoded(ctx, n, payload, nil, true)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

func (c *Conn) waitResults(ctx context.Context, cl *call) ([]Result, error) {
	if err := c.wait(ctx, cl); err != nil {
		return nil, err
	}
	results, err := cl.results, cl.err
	c.putCall(cl)
	if err != nil {
		return nil, err
	}
	return results, nil
}

// DoConfirmed sends a pub/sub command whose success is n confirmation frames of kind
// confirm and whose refusal is one error reply, and waits for either: SUBSCRIBE a b
// ("subscribe", 2), SSUBSCRIBE, PSUBSCRIBE, or PING on a connection in subscriber mode
// ("pong", 1; a RESP3 +PONG counts too). The confirmations are pushes under RESP3 and
// arrays under RESP2, taken out of the push handler's stream; an error is an ordinary
// reply in both, which is why such a command cannot be sent with Send: its refusal
// (-NOPERM for a channel the user may not use) would arrive with no call waiting, or be
// handed to a later call. It returns a refusal as *resp.ServerError, and a transport or
// context error as Do does.
func (c *Conn) DoConfirmed(ctx context.Context, confirm string, n int, args ...any) error {
	if n < 1 || !confirmationKinds[confirm] {
		return fmt.Errorf("%w: %d confirmations of kind %q", ErrInvalidOptions, n, confirm)
	}
	cl := c.getCall(n)
	cl.confirm = confirm
	if err := c.enqueue(ctx, cl, "", nil, args); err != nil {
		c.putCall(cl)
		return err
	}
	if err := c.wait(ctx, cl); err != nil {
		return err
	}
	v, err := cl.reply, cl.err
	c.putCall(cl)
	if err != nil {
		return err
	}
	return v.Err()
}

// Send writes a command that gets no reply of its own (UNSUBSCRIBE and friends, whose
// confirmations arrive as pushes) and returns once it has been written. A command the
// server may refuse with an error reply is sent with DoConfirmed instead.
func (c *Conn) Send(ctx context.Context, args ...any) error {
	cl := c.getCall(0)
	if err := c.enqueue(ctx, cl, "", nil, args); err != nil {
		c.putCall(cl)
		return err
	}
	if err := c.wait(ctx, cl); err != nil {
		return err
	}
	err := cl.err
	c.putCall(cl)
	return err
}
