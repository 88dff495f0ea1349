package respire

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
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

	link link.Client // what packages lock and coordination use of the client (lockseam.go)

	obs observe.Observer // Options.Observer and Options.Logger together; nil when neither is set

	creds *credentialRotation // nil without Options.Credentials (credentials.go)

	table   *command.Table  // the command key table (a copy without some commands in tests)
	learned learnedCommands // what COMMAND INFO said of commands the table lacks (commandinfo.go)
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
	obs := observe.Join(opts.Observer, newLogObserver(opts.Logger))
	creds := newCredentialRotation(&opts, obs)
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
		Credentials:  creds.provider(),
		OnConnect:    creds.hook(onConnect(opts.OnConnect)),
	}
	copts.Observer = obs
	c := &Client{opts: opts, prefix: opts.KeyPrefix, subs: map[*Subscription]struct{}{}, table: command.Default, obs: obs}
	r, err := newRouter(ctx, &opts, route.Options{
		Conn:            copts,
		PoolSize:        opts.PoolSize,
		MinIdle:         opts.MinIdle,
		ConnMaxLifetime: opts.ConnMaxLifetime,
		ConnMaxIdleTime: opts.ConnMaxIdleTime,
		ReplicaReads:    opts.ReplicaReads,
	})
	if err != nil {
		return nil, err
	}
	c.route = r
	if _, err := r.Shared(ctx, route.Any()); err != nil {
		r.Close()
		return nil, firstConnError(err)
	}
	if opts.ClientSideCache != nil {
		cc, err := cache.New(*opts.ClientSideCache)
		if err != nil {
			r.Close()
			return nil, &cacheOptionsError{err}
		}
		c.cache, c.tracking = cc, newTracking(r, cc)
		c.tracking.obs = obs
		// A key read as missing on a slot's old node is not tracked by the new one.
		r.OnTopologyChange(c.tracking.flushAll)
	}
	c.creds = creds
	c.link = c.newLink()
	creds.start()
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
	c.creds.close()
	return c.route.Close()
}

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

// doObserved is Do between the observer's CommandStart and CommandEnd.
func (c *Client) doObserved(ctx context.Context, obs observe.Observer, args []any) (resp.Value, error) {
	p := c.observeCommand(ctx, obs, args, c.expectedAddr(args))
	defer p.end()
	var v resp.Value
	v, p.last, p.err = c.do(p.ctx, args)
	return v, p.err
}

// do is Do without the observer; it also returns the connection that produced the
// reply (nil when none did).
func (c *Client) do(ctx context.Context, args []any) (resp.Value, *conn.Conn, error) {
	args, err := c.confine(args)
	if err != nil {
		return resp.Value{}, nil, err
	}
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

// retryable says whether a failed command may be sent again on a new connection
// (route.Retryable).
func retryable(ctx context.Context, err error, args []any) bool {
	return route.Retryable(ctx, err, args)
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
	res, _, err := c.route.DoMulti(ctx, cmds, (*batchCommands)(c))
	return res, err
}

// doMultiObserved is DoMulti between the observer's BatchStart and BatchEnd.
func (c *Client) doMultiObserved(ctx context.Context, obs observe.Observer, cmds [][]any) ([]Result, error) {
	p := observeBatch(ctx, obs, observe.Multi, len(cmds), c.batchName(cmds), c.batchAddr())
	defer p.end()
	cmds, err := c.confineAll(cmds)
	if err != nil {
		p.err = err
		return nil, err
	}
	p.res, p.last, p.err = c.route.DoMulti(p.ctx, cmds, (*batchCommands)(c))
	return p.res, p.err
}

// batchCommands is the client as route.Commands: how each command of a batch is sent.
// Its method is not the client's, so that it stays out of the public API.
type batchCommands Client

// Command checks args with the client's key table and prefix (asking COMMAND INFO
// about a command the table lacks when its keys are needed) and refuses a blocking
// command: a batch must not wait behind it.
func (b *batchCommands) Command(ctx context.Context, args []any, keys []int) (conn.CallOptions, *command.Info, error) {
	o, info, err := (*Client)(b).callOptionsCtx(ctx, args, keys)
	if err == nil && o.Blocking {
		return conn.CallOptions{}, nil, blockingInBatch(args)
	}
	return o, info, err
}

// txCommands is the client as route.Commands for the commands of a transaction. Unlike
// batchCommands it accepts a blocking command: between MULTI and EXEC the server runs
// it as its non-blocking form (BLPOP as LPOP, XREAD BLOCK without waiting), and the
// transaction's connection is its own anyway.
type txCommands Client

// Command checks args with the client's key table and prefix, as batchCommands does.
func (t *txCommands) Command(ctx context.Context, args []any, keys []int) (conn.CallOptions, *command.Info, error) {
	return (*Client)(t).callOptionsCtx(ctx, args, keys)
}

// txKeys checks every command of a transaction and returns their key positions when a
// key prefix is set (nil otherwise).
func (c *Client) txKeys(ctx context.Context, cmds [][]any) ([][]int, error) {
	_, keys, err := route.BatchKeys(ctx, cmds, (*txCommands)(c))
	return keys, err
}

// keySlot is the slot a key (without the client's prefix) is served by, route.AnySlot
// where slots do not route.
func (c *Client) keySlot(key string) int { return c.route.KeySlot(c.prefix, key) }
