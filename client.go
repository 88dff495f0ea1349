package respire

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/reauth"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/slogobserve"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
)

// Client is a Redis client safe for use by any number of goroutines. Concurrent calls
// are pipelined on shared connections (auto-pipelining); blocking commands and
// transactions get dedicated connections from a pool; subscriptions own theirs.
type Client struct {
	opts   Options
	route  *route.Router // where commands go: every kind of deployment is behind it
	prefix string
	closed atomic.Bool

	subsMu sync.Mutex
	subs   map[*Subscription]struct{}

	cache    *cache.Cache // nil without Options.ClientSideCache
	tracking *tracking    // the connections cached reads use, with the cache

	link link.Client // what packages lock and coordination use of the client (newLink)

	obs observe.Observer // Options.Observer and Options.Logger together; nil when neither is set

	creds *reauth.Rotation // nil without Options.Credentials (newRotation)

	table   *command.Table  // the command key table (a copy without some commands in tests)
	learned learnedCommands // what COMMAND INFO said of commands the table lacks (keys.go)

	bg background // goroutines the client owns for the packages built on it (link.Client.Go)
}

// NewClient validates opts and connects. It fails when the server cannot be reached
// or refuses the handshake, so a misconfiguration shows at start-up.
func NewClient(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = 10 * runtime.GOMAXPROCS(0)
	}
	if opts.SubscriptionBuffer == 0 {
		opts.SubscriptionBuffer = defaultSubscriptionBuffer
	}
	if opts.SubscriptionHealthCheck == 0 {
		opts.SubscriptionHealthCheck = defaultSubscriptionHealthCheck
	}
	obs := observe.Join(opts.Observer, slogobserve.New(opts.Logger))
	copts := conn.Options{
		Protocol:     opts.Protocol,
		Username:     opts.Username,
		Password:     opts.Password,
		ClientName:   opts.ClientName,
		DB:           opts.DB,
		TLS:          opts.TLS,
		DialTimeout:  opts.DialTimeout,
		ReadTimeout:  opts.ReadTimeout,
		WriteTimeout: opts.WriteTimeout,
		Limits:       opts.Limits,
		Dialer:       opts.Dialer,
		OnConnect:    onConnect(opts.OnConnect),
	}
	copts.Observer = obs
	var creds *reauth.Rotation
	if opts.Credentials != nil {
		creds = newRotation(opts.Credentials, obs, &copts)
	}
	c := &Client{opts: opts, prefix: opts.KeyPrefix, subs: map[*Subscription]struct{}{}, table: command.Default, obs: obs}
	ro := route.Options{
		Conn:            copts,
		PoolSize:        opts.PoolSize,
		MinIdle:         opts.MinIdle,
		ConnMaxLifetime: opts.ConnMaxLifetime,
		ConnMaxIdleTime: opts.ConnMaxIdleTime,
		ReplicaReads:    opts.ReplicaReads,
	}
	var cc *cache.Cache
	if opts.ClientSideCache != nil {
		var err error
		if cc, err = cache.New(*opts.ClientSideCache); err != nil {
			return nil, &cacheOptionsError{err}
		}
		// A key read as missing on a slot's old node is not tracked by the new one.
		ro.OnSlotMoved = func() { flushCache(cc, obs) }
	}
	r, err := newRouter(ctx, &opts, ro)
	if err != nil {
		return nil, err
	}
	c.route = r
	if _, err := r.Shared(ctx, route.Any()); err != nil {
		r.Close()
		return nil, firstConnError(err)
	}
	if cc != nil {
		c.cache, c.tracking = cc, newTracking(r, cc)
		c.tracking.obs = obs
	}
	c.creds = creds
	c.link = c.newLink()
	if creds != nil {
		creds.Start()
	}
	return c, nil
}

// newRouter makes the router of the deployment Options describe.
func newRouter(ctx context.Context, o *Options, ro route.Options) (*route.Router, error) {
	return route.New(ctx, route.Deployment{
		Addrs:            o.Addrs,
		Cluster:          o.Cluster,
		Master:           o.SentinelMaster,
		SentinelUsername: o.SentinelUsername,
		SentinelPassword: o.SentinelPassword,
	}, ro)
}

// Close closes every connection and subscription of the client. Calls in flight fail;
// later calls return ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.bg.close()
	c.subsMu.Lock()
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.subsMu.Unlock()
	for _, s := range subs {
		s.Close()
	}
	if c.tracking != nil {
		c.tracking.close()
	}
	if c.creds != nil {
		c.creds.Close()
	}
	return c.route.Close()
}

// Reauthenticate asks Options.Credentials now and re-authenticates every live
// connection of the client (shared, dedicated, tracking, subscription) with what it
// returns, each in order with its traffic and never inside a transaction; the
// schedule then follows the new credentials' ExpiresAt. It returns once every
// connection has answered, and every dial in progress as it began has ended (each
// such connection is authenticated with the new credentials before it is handed out),
// or ctx has ended, with the provider's error (matching conn.ErrCredentials) or the
// connections' errors joined. A connection still busy with an older re-authentication
// is waited for and then re-authenticated with the new credentials. Connections not
// yet authenticated with them as ctx ends (their AUTH still waiting behind a blocking
// command or a transaction, or behind an older re-authentication, or their dial not
// yet done) make the error match ErrReauthPending: they follow once their AUTH has
// gone. RESP2 subscriptions, which the server does not let re-authenticate, keep
// their credentials until they reconnect. Without Options.Credentials it returns
// ErrInvalidOptions.
func (c *Client) Reauthenticate(ctx context.Context) error {
	if c.creds == nil {
		return fmt.Errorf("%w: Reauthenticate without Options.Credentials", ErrInvalidOptions)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return c.creds.Rotate(ctx)
}

// newRotation returns the rotation of provide's credentials (package reauth has how
// and when) and has the dials of copts ask it and register their connections with it, after
// the user's OnConnect.
func newRotation(provide func(context.Context) (Credentials, error), obs observe.Observer, copts *conn.Options) *reauth.Rotation {
	r := reauth.New(reauth.Options{
		Provider: func(ctx context.Context) (reauth.Credentials, error) {
			cr, err := provide(ctx)
			return reauth.Credentials(cr), err
		},
		Observer: obs,
		Pending:  ErrReauthPending,
		Closed:   ErrClosed,
	})
	copts.Credentials = func(ctx context.Context) (Credentials, error) {
		cr, err := r.ForDial(ctx)
		return Credentials(cr), err
	}
	user := copts.OnConnect
	copts.OnConnect = func(ctx context.Context, cn *conn.Conn) error {
		if user != nil {
			if err := user(ctx, cn); err != nil {
				return err
			}
		}
		return r.Register(ctx, rotatedConn{cn})
	}
	return r
}

// rotatedConn is a connection as the credential rotation sees it (reauth.Conn): the
// rotation's credentials converted to the connection's.
type rotatedConn struct{ cn *conn.Conn }

func (r rotatedConn) Reauth(ctx context.Context, cr reauth.Credentials) error {
	return r.cn.Reauth(ctx, Credentials(cr))
}

func (r rotatedConn) AuthenticatedWith(cr reauth.Credentials) bool {
	return r.cn.AuthenticatedWith(Credentials(cr))
}

func (r rotatedConn) Done() <-chan struct{} { return r.cn.Done() }

// PoolStats reports the dedicated-connection pool's counters.
func (c *Client) PoolStats() pool.Stats { return c.route.Stats() }

// Do sends one command and returns its reply. Arguments may be string, []byte, any
// integer kind, float32/64 or bool, or a named type of one of those kinds
// (time.Duration is sent as nanoseconds; see resp.AppendArg). A server error reply is
// an error that errors.As matches to *resp.ServerError; a null reply is a value
// (v.IsNull()).
//
// Blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) run on a dedicated connection;
// commands that would change the state of a shared connection (MULTI, SUBSCRIBE,
// SELECT, ...) are refused with ErrConnState. If ctx ends, Do returns at once; the
// error matches conn.ErrNotSent when the command never reached the server and
// conn.ErrOutcomeUnknown when it may have run.
func (c *Client) Do(ctx context.Context, args ...any) (resp.Value, error) {
	if obs := c.obs; obs != nil {
		return c.doObserved(ctx, obs, args)
	}
	// do's body, written out: through do, the reply would be copied once more on the
	// stack (it does not fit in registers with do's other results): 45 instructions a
	// command, under callgrind.
	args, err := c.confine(args)
	if err != nil {
		return resp.Value{}, err
	}
	var keys [8]int
	o, info, err := c.callOptionsCtx(ctx, args, keys[:0])
	if err != nil {
		return resp.Value{}, err
	}
	cmd := route.Cmd{Options: o, Args: args, Info: info}
	v, _, err := c.route.Do(ctx, &cmd, &route.Call{Fanout: true})
	return v, err
}

// doObserved is Do between the observer's CommandStart and CommandEnd. The command is
// looked up once, before the start event, which carries its name and server; only a
// command the table lacks, whose keys are needed, is looked up again once COMMAND INFO
// has answered.
func (c *Client) doObserved(ctx context.Context, obs observe.Observer, args []any) (resp.Value, error) {
	conf, cerr := c.confine(args)
	var keys [8]int
	var o conn.CallOptions
	var info *command.Info
	var err error
	addr := ""
	if cerr == nil {
		args = conf
		if o, info, err = c.callOptionsInfo(args, keys[:0]); err == nil {
			addr = c.expectedAddr(o, info, args)
		}
	}
	// info apart from cmd: what the observer keeps of it must not take the arguments
	// with it (escape analysis does not tell a struct's fields apart).
	p := c.observeCommand(ctx, obs, info, args, addr)
	defer p.end()
	var v resp.Value
	switch {
	case cerr != nil:
		p.err = cerr
	case err != nil:
		v, p.last, p.err = c.doResolved(p.ctx, args, err)
	default:
		cmd := route.Cmd{Options: o, Args: args, Info: info}
		v, p.last, p.err = c.route.Do(p.ctx, &cmd, &route.Call{Fanout: true})
	}
	return v, p.err
}

// doResolved sends args, which callOptionsInfo refused with err: once COMMAND INFO has
// answered when err says it must be asked, else not at all.
func (c *Client) doResolved(ctx context.Context, args []any, err error) (resp.Value, *conn.Conn, error) {
	var ue *unresolvedError
	if !errors.As(err, &ue) {
		return resp.Value{}, nil, err
	}
	return c.do(ctx, args)
}

// do is Do without the observer, for confined arguments; it also returns the
// connection that produced the reply (nil when none did).
func (c *Client) do(ctx context.Context, args []any) (resp.Value, *conn.Conn, error) {
	var keys [8]int
	o, info, err := c.callOptionsCtx(ctx, args, keys[:0])
	if err != nil {
		return resp.Value{}, nil, err
	}
	cmd := route.Cmd{Options: o, Args: args, Info: info}
	return c.route.Do(ctx, &cmd, &route.Call{Fanout: true})
}

// cacheOptionsError is the error of NewClient for unusable Options.ClientSideCache:
// it matches both ErrInvalidOptions and cache.ErrInvalidOptions, and says "invalid
// options" once.
type cacheOptionsError struct{ err error }

func (e *cacheOptionsError) Error() string {
	detail := strings.TrimPrefix(e.err.Error(), cache.ErrInvalidOptions.Error()+": ")
	return ErrInvalidOptions.Error() + ": ClientSideCache: " + detail
}

func (e *cacheOptionsError) Unwrap() []error { return []error{ErrInvalidOptions, e.err} }

// connectError is the error of NewClient's first connection, which sent no command:
// its text is the dial's alone, not "command not sent", while errors.Is and errors.As
// still find the *conn.CallError and conn.ErrNotSent.
type connectError struct{ ce *conn.CallError }

func (e *connectError) Error() string { return e.ce.Err.Error() }

func (e *connectError) Unwrap() error { return e.ce }

// firstConnError is err, the error of NewClient's first connection, as a
// connectError when it says that nothing was sent.
func firstConnError(err error) error {
	if ce, ok := err.(*conn.CallError); ok && !ce.Written {
		return &connectError{ce}
	}
	return err
}

// retryable says whether a failed command, of entry info, may be sent again on a new
// connection (route.Retryable).
func retryable(ctx context.Context, err error, info *command.Info) bool {
	return route.Retryable(ctx, err, info)
}

// reusable says whether a dedicated connection can go back to the pool after err
// (route.Reusable).
func reusable(err error) bool { return route.Reusable(err) }

// DoMulti sends the commands as one pipeline on a shared connection and returns their
// results in order. The error is for the batch as a whole (invalid argument, ctx ended,
// connection lost); single commands' error replies are in their Result. Blocking
// commands are refused (ErrBlockingInBatch), as are connection-state commands
// (ErrConnState).
//
// On a Cluster the batch is split by node, each node's part is one pipeline, and the
// results come back in the caller's order; a command redirected by MOVED or ASK is
// retried alone. A command whose keys hash to different slots fails the batch before
// anything is sent (ErrCrossSlot).
func (c *Client) DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	if obs := c.obs; obs != nil {
		return c.doMultiObserved(ctx, obs, cmds)
	}
	cmds, err := c.confineAll(cmds)
	if err != nil {
		return nil, err
	}
	s := newBatchScratch()
	defer s.release()
	b, err := c.batchOf(ctx, cmds, s, false)
	if err != nil {
		return nil, err
	}
	res, _, err := c.route.DoMulti(ctx, &b)
	return res, err
}

// doMultiObserved is DoMulti between the observer's BatchStart and BatchEnd. The
// commands are looked up before the start event, which carries the name they share.
func (c *Client) doMultiObserved(ctx context.Context, obs observe.Observer, cmds [][]any) ([]Result, error) {
	s := newBatchScratch()
	defer s.release()
	cmds, err := c.confineAll(cmds)
	var b route.Batch
	if err == nil {
		b, err = c.batchOf(ctx, cmds, s, false)
	}
	name := ""
	if err == nil {
		name = c.batchNameOf(b.Infos, cmds)
	} else {
		name = c.batchName(cmds)
	}
	p := observeBatch(ctx, obs, observe.Multi, len(cmds), name, c.batchAddr())
	defer p.end()
	if err != nil {
		p.err = err
		return nil, err
	}
	p.res, p.last, p.err = c.route.DoMulti(p.ctx, &b)
	return p.res, p.err
}

// batchOf checks each of cmds as Do does (asking COMMAND INFO about a command the
// table lacks when its keys are needed) and returns them as the router sends them:
// each one's entry, and where the key prefix goes, in s, which the batch uses until s
// is released. A blocking command is refused (a batch must not wait behind it) unless
// inTx: between MULTI and EXEC the server runs it as its non-blocking form (BLPOP as
// LPOP, XREAD BLOCK without waiting), and the transaction's connection is its own
// anyway.
func (c *Client) batchOf(ctx context.Context, cmds [][]any, s *batchScratch, inTx bool) (route.Batch, error) {
	for i, args := range cmds {
		var keys [8]int
		o, info, err := c.callOptionsCtx(ctx, args, keys[:0])
		if err == nil && o.Blocking && !inTx {
			err = blockingInBatch(args)
		}
		if err != nil {
			return route.Batch{}, fmt.Errorf("command %d: %w", i, err)
		}
		s.infos = append(s.infos, info)
		if c.prefix != "" {
			s.flat = append(s.flat, o.Keys...)
			s.ends = append(s.ends, len(s.flat))
		}
	}
	b := route.Batch{Cmds: cmds, Infos: s.infos, Prefix: c.prefix}
	if c.prefix != "" {
		start := 0
		for _, end := range s.ends {
			s.keys = append(s.keys, s.flat[start:end:end])
			start = end
		}
		b.Keys = s.keys
	}
	return b, nil
}

// batchScratch is the space batchOf fills: pooled, so that a batch of the usual size
// is checked without allocating.
type batchScratch struct {
	infos []*command.Info
	keys  [][]int
	flat  []int // every command's key positions, back to back
	ends  []int // where each command's end in flat
}

// maxPooledScratch is the most commands a batchScratch keeps room for when it goes
// back to the pool: one huge batch must not pin its space for good.
const maxPooledScratch = 1 << 14

var batchScratchPool = sync.Pool{New: func() any { return new(batchScratch) }}

func newBatchScratch() *batchScratch { return batchScratchPool.Get().(*batchScratch) }

// release empties s and puts it back in the pool.
func (s *batchScratch) release() {
	if cap(s.infos) > maxPooledScratch || cap(s.flat) > 8*maxPooledScratch {
		return
	}
	clear(s.infos)
	clear(s.keys)
	s.infos, s.keys, s.flat, s.ends = s.infos[:0], s.keys[:0], s.flat[:0], s.ends[:0]
	batchScratchPool.Put(s)
}

// keySlot is the slot a key (without the client's prefix) is served by, route.AnySlot
// where slots do not route.
func (c *Client) keySlot(key string) int { return c.route.KeySlot(c.prefix, key) }

// The packages built on the client (lock, coordination) reach its router, prefix,
// observer and key watches through the internal link, not through Client's public
// methods.
func init() {
	link.Register(func(c *Client) *link.Client { return &c.link })
}

// newLink returns what packages lock and coordination use of c, once c's router,
// observer and tracking are set.
func (c *Client) newLink() link.Client {
	return link.Client{
		Router:       c.route,
		Table:        c.table,
		Prefix:       c.prefix,
		Observer:     c.obs,
		Standalone:   c.route.Standalone(),
		CanWatchKeys: c.tracking != nil,
		WatchInTurn:  c.linkWatch,
		Closed:       &c.closed,
		Name:         c.linkName,
		Outcome:      outcomeOf,
		Go:           c.bg.run,
	}
}

// linkWatch is WatchKeyInTurn for the link; a prev that is not a *KeyWatch (a test's
// script) counts as none.
func (c *Client) linkWatch(ctx context.Context, key string, prev link.KeyWatch) (link.KeyWatch, error) {
	p, _ := prev.(*KeyWatch)
	w, err := c.watchKey(ctx, key, true, p)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return w, nil
}

// linkName is observedName for the link's commands, given their first argument.
func (c *Client) linkName(info *command.Info, name string) string {
	args := [1]any{name}
	return c.observedName(info, args[:])
}
