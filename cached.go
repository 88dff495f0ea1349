package respire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// DoCached runs a read command of one key (GET, HGET, HGETALL, SMEMBERS, ...) through
// the client-side cache. A reply read from the server is kept for ttl, or for the
// key's own remaining TTL when that is shorter, and until the server reports the key
// changed: whoever changes it, by whatever means, including expiry, eviction and
// FLUSHALL. A later DoCached of the same command returns the kept reply without a round
// trip. A read racing a change is answered but never kept.
//
// Invalidations arrive asynchronously: a DoCached just after a change made by another
// connection, this client's own Do included, can return the previous reply until the
// server's push has reached this machine, and for at most 100 µs after that. A hit is
// served only while its tracked connection has applied every push that had arrived by
// then, however busy the process is: otherwise it catches the connection up first,
// applying the pushes received itself rather than waiting for the connection's reader
// goroutine to be scheduled, and waits only for a push still arriving or being
// applied by another goroutine. On loopback under 16 readers and a writer, 99% of
// writes stop being read within tens of microseconds of their acknowledgement (the
// README has the figures). Under TLS, and outside Linux, the connection cannot
// measure its lag, and a push is applied when the connection's reader goroutine gets
// to run.
//
// The returned Value may be shared with other callers; Values are immutable.
func (c *Client) DoCached(ctx context.Context, ttl time.Duration, args ...any) (v resp.Value, err error) {
	// A hit needs neither the command table nor the key's slot. An entry matches only
	// the arguments it was stored for, and is filed under their key, so an entry found
	// under args[1] whose arguments are args proves args[1] is the key: the look under
	// it is a hit or nothing, whatever the command. Anything else, errors included,
	// is the miss path's, so that a hit sets up no more than it uses.
	if c.cache == nil || c.closed.Load() || ttl <= 0 || len(args) < 2 {
		return c.doCachedMiss(ctx, ttl, false, args)
	}
	k, ok := argkind.Text(args[1])
	if !ok || k == "" {
		return c.doCachedMiss(ctx, ttl, false, args)
	}
	if c.prefix != "" {
		k = c.prefix + k
	}
	// v is the result itself: a Value is ten words, and every copy of it shows in a
	// hit's cost.
	v, ok, err = c.cache.Hit(ctx, k, args)
	if ok && c.obs == nil {
		return v, nil
	}
	if !ok && err == nil {
		return c.doCachedMiss(ctx, ttl, true, args)
	}
	if err := c.hitOutcome(err); err != nil {
		return resp.Value{}, err
	}
	return v, nil
}

// doCachedMiss is DoCached past the look under args[1] (lookedUnderArg1: made, and
// missed), and what it refuses.
func (c *Client) doCachedMiss(ctx context.Context, ttl time.Duration, lookedUnderArg1 bool, args []any) (resp.Value, error) {
	if c.cache == nil {
		return resp.Value{}, ErrNoCache
	}
	if c.closed.Load() {
		return resp.Value{}, ErrClosed
	}
	if ttl <= 0 {
		return resp.Value{}, fmt.Errorf("%w: DoCached ttl %v is not positive", ErrInvalidArg, ttl)
	}
	if len(args) == 0 {
		return resp.Value{}, resp.ErrEmptyCommand
	}
	// The one look-up of the command (a typed command's name carries its entry); a
	// command the table lacks is not cacheable, so COMMAND INFO is never asked.
	info, _ := c.entry(args)
	var keyBuf [2]int
	keys, err := cacheableKeys(info, args, keyBuf[:0])
	if err != nil {
		return resp.Value{}, err
	}
	key, ok := keyText(args[keys[0]])
	if !ok {
		return resp.Value{}, fmt.Errorf("%w: the key is not a string or []byte", ErrNotCacheable)
	}
	if key == "" {
		return resp.Value{}, fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	slot := c.keySlot(key)
	if c.prefix != "" {
		key = c.prefix + key // the name the server uses, and puts in invalidations
	}
	switch {
	case keys[0] == 1 && lookedUnderArg1:
		c.cache.CountMiss() // the look in DoCached was under the key
	default:
		if v, ok, err := c.cache.Get(ctx, key, args); ok || err != nil {
			if err := c.hitOutcome(err); err != nil {
				return resp.Value{}, err
			}
			return v, nil
		}
	}
	if obs := c.obs; obs != nil {
		obs.Cache(observe.Cache{Kind: observe.CacheMiss, Keys: 1})
		var o conn.CallOptions
		if c.prefix != "" {
			o = conn.CallOptions{KeyPrefix: c.prefix, Keys: keys}
		}
		p := c.observeCommand(ctx, obs, info, args, c.expectedAddr(o, info, args))
		defer p.end()
		var v resp.Value
		v, p.last, p.err = c.readMiss(p.ctx, ttl, slot, key, keys, info, args)
		return v, p.err
	}
	v, _, err := c.readMiss(ctx, ttl, slot, key, keys, info, args)
	return v, err
}

// readMiss reads a command (args, of entry info) DoCached did not find in the cache,
// and returns the connection that read it.
func (c *Client) readMiss(ctx context.Context, ttl time.Duration, slot int, key string, keys []int, info *command.Info, args []any) (resp.Value, *conn.Conn, error) {
	v, last, err := c.readThrough(ctx, ttl, slot, key, keys, args)
	if err != nil && retryable(ctx, err, info) {
		// Lost with its tracked connection; as Do does for a read, try once more on a
		// new one.
		v, last, err = c.readThrough(ctx, ttl, slot, key, keys, args)
	}
	return v, last, err
}

// hitOutcome is the error DoCached returns for a look that found its entry (err nil: a
// hit) or failed while the entry's source caught up (nothing was sent). Only a hit is
// a CacheHit event.
func (c *Client) hitOutcome(err error) error {
	if err != nil {
		return &conn.CallError{Err: err}
	}
	if obs := c.obs; obs != nil {
		obs.Cache(observe.Cache{Kind: observe.CacheHit, Keys: 1})
	}
	return nil
}

// CacheStats returns the client-side cache's counters; zero without a cache.
func (c *Client) CacheStats() cache.Stats {
	if c.cache == nil {
		return cache.Stats{}
	}
	return c.cache.Stats()
}

// cacheableKeys checks that args, of entry info (nil: the table lacks it), is a
// read-only, non-blocking command of exactly one key and returns the key's position.
func cacheableKeys(info *command.Info, args []any, dst []int) ([]int, error) {
	if info == nil {
		return nil, fmt.Errorf("%w: unknown command %q", ErrNotCacheable, argName(args[0]))
	}
	if info.Flags&command.FlagReadonly == 0 || info.Flags&command.FlagBlocking != 0 {
		return nil, fmt.Errorf("%w: %s is not a read-only command", ErrNotCacheable, info.Name)
	}
	if why, ok := uncacheable[info.Name]; ok {
		return nil, fmt.Errorf("%w: %s %s", ErrNotCacheable, info.Name, why)
	}
	keys := command.InfoKeyIndexes(info, args, dst)
	if len(keys) != 1 {
		return nil, fmt.Errorf("%w: %s reads %d keys; DoCached takes commands of one key", ErrNotCacheable, info.Name, len(keys))
	}
	return keys, nil
}

// argName is a copy of a command name for an error message: the message must not hold
// the caller's argument, or every argument would escape to the heap.
func argName(a any) string {
	if s, ok := keyText(a); ok {
		return strings.Clone(s)
	}
	return "(not a string)"
}

// uncacheable are read-only commands of one key whose reply can change while the key
// does not, so no invalidation would ever correct a kept reply.
var uncacheable = map[string]string{
	"srandmember":     "returns random members",
	"hrandfield":      "returns random fields",
	"zrandmember":     "returns random members",
	"ttl":             "changes with time",
	"pttl":            "changes with time",
	"httl":            "changes with time",
	"hpttl":           "changes with time",
	"hexpiretime":     "is read with the key's TTL already",
	"hpexpiretime":    "is read with the key's TTL already",
	"expiretime":      "is read with the key's TTL already",
	"pexpiretime":     "is read with the key's TTL already",
	"object|idletime": "changes with time",
	"object|freq":     "changes with time",
	"eval_ro":         "may read keys it does not declare, which are not tracked",
	"evalsha_ro":      "may read keys it does not declare, which are not tracked",
	"fcall_ro":        "may read keys it does not declare, which are not tracked",
	"sort_ro":         "may read other keys (BY, GET), which are not tracked",
}

// keyText is the text of a key argument of a string or []byte kind. For a []byte kind
// it is a view, not a copy: the cache copies what it keeps (cache.Reserve).
func keyText(a any) (string, bool) { return argkind.Text(a) }

// readThrough reads args from the server on a tracked connection and keeps the reply
// unless an invalidation of key raced it. The read is three commands sent back to
// back: CLIENT CACHING YES (track the next command's key), PTTL key (the key's own
// TTL) and the command. It returns the connection that read it (nil if none did).
func (c *Client) readThrough(ctx context.Context, ttl time.Duration, slot int, key string, keys []int, args []any) (resp.Value, *conn.Conn, error) {
	cn, err := c.tracking.conn(ctx, slot)
	if err != nil {
		return resp.Value{}, nil, err
	}
	var prefixKeys [][]int
	if c.prefix != "" {
		prefixKeys = [][]int{nil, {1}, keys}
	}
	ticket := c.cache.Reserve(key, (*trackedSource)(cn))
	res, err := cn.DoMultiWith(ctx, c.prefix, prefixKeys,
		[]any{"CLIENT", "CACHING", "YES"}, []any{"PTTL", args[keys[0]]}, args)
	if err != nil {
		c.cache.Cancel(ticket)
		return resp.Value{}, cn, err
	}
	for _, r := range res {
		if resp.HasCode(r.Err, "MOVED") || resp.HasCode(r.Err, "ASK") {
			// The slot moved: read it the ordinary way, which follows the redirection
			// and updates the slot table; the next DoCached tracks the key on the
			// node that serves it now.
			c.cache.Cancel(ticket)
			return c.do(ctx, args)
		}
	}
	if res[0].Err != nil {
		c.cache.Cancel(ticket)
		return resp.Value{}, cn, fmt.Errorf("%w: CLIENT CACHING: %w", ErrNoTracking, res[0].Err)
	}
	if res[2].Err != nil {
		c.cache.Cancel(ticket)
		return resp.Value{}, cn, res[2].Err
	}
	pttl, err := res[1].Value.Int()
	if err != nil || res[1].Err != nil {
		c.cache.Cancel(ticket) // answered, but without a TTL to trust
		return res[2].Value, cn, nil
	}
	c.cache.Store(ticket, args, res[2].Value, cache.TTL(ttl, pttl))
	return res[2].Value, cn, nil
}

// maxInvalidationLag bounds how long after an invalidation reaches this machine a hit
// may still return the reply it removes: a hit is served without a system call only
// while its tracked connection has caught up (conn.Conn.CatchUp) at most this long ago.
// Past it, the hit catches up first, which costs one getsockopt and, when pushes were
// received and not yet applied, applying them.
const maxInvalidationLag = 100 * time.Microsecond

// trackedSource is a tracked connection as the entries it read see it; a conversion,
// so a miss allocates no source. Where the connection cannot measure its lag (TLS, a
// platform without TCP_INFO), hits do not wait and an invalidation is applied when the
// connection's reader gets to it.
type trackedSource conn.Conn

func (s *trackedSource) Current(now int64) bool {
	cn := (*conn.Conn)(s)
	return !cn.Measurable() || cn.CurrentAt(now, maxInvalidationLag)
}

func (s *trackedSource) CatchUp(ctx context.Context) error { return (*conn.Conn)(s).CatchUp(ctx) }

// tracking owns the connections that cached reads use: one per server, each with
// CLIENT TRACKING ON OPTIN and a push handler that feeds invalidations to the cache.
// A tracked connection that is lost flushes the cache, since the invalidations it
// would have carried are lost with it. Outside a Cluster there is one server at a
// time: on a Sentinel failover the router closes the connections it dialled to the old
// master, this one included, which flushes the cache (and a miss that finds another
// master closes the old connection too). On a Cluster, the cache is flushed whenever
// a slot changes hands, since a key read as missing on its old node is not tracked by
// the new one.
type tracking struct {
	route *route.Router
	cache *cache.Cache
	obs   observe.Observer // the client's; nil when it has none

	mu     sync.Mutex
	conns  map[string]*conn.Conn // by server address
	dials  map[string]*route.Dialing
	failed map[string]dialFailure // by server address: the last failure, for a while
	closed bool
	ctx    context.Context // ends with close: stops dials and watchers
	cancel context.CancelFunc
	wg     sync.WaitGroup
	keys   keyWatches // WatchKey's armed watches (keywatch.go)
}

// dialFailure is a failed attempt to open a tracked connection. It is returned to the
// misses that follow for trackingRetryAfter instead of dialling again for each: a server
// that refuses tracking (ACL, a proxy) would otherwise cost a dial per miss.
type dialFailure struct {
	err   error
	until time.Time
}

const trackingRetryAfter = time.Second

func newTracking(r *route.Router, c *cache.Cache) *tracking {
	ctx, cancel := context.WithCancel(context.Background())
	return &tracking{
		ctx: ctx, cancel: cancel,
		route: r, cache: c,
		conns: map[string]*conn.Conn{}, dials: map[string]*route.Dialing{}, failed: map[string]dialFailure{},
	}
}

// conn returns the tracked connection of the server that serves slot (anySlot outside
// a Cluster: the master), dialling it once however many callers ask at the same moment.
func (t *tracking) conn(ctx context.Context, slot int) (*conn.Conn, error) {
	shared, err := t.route.Shared(ctx, route.Slot(slot))
	if err != nil {
		return nil, err
	}
	addr := shared.Addr()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	if cn := t.conns[addr]; cn != nil && cn.Err() == nil {
		t.mu.Unlock()
		return cn, nil
	}
	if f, ok := t.failed[addr]; ok && time.Now().Before(f.until) {
		t.mu.Unlock()
		return nil, f.err
	}
	d := t.dials[addr]
	if d == nil {
		d = route.NewDialing()
		t.dials[addr] = d
		t.wg.Add(1)
		go t.dial(d, addr, slot)
	}
	t.mu.Unlock()
	return d.Wait(ctx)
}

// dial opens the tracked connection of addr for the callers waiting on d; it belongs
// to t, not to the caller that asked, so a caller giving up does not waste it.
func (t *tracking) dial(d *route.Dialing, addr string, slot int) {
	defer t.wg.Done()
	cn, err := t.open(slot)
	t.mu.Lock()
	delete(t.dials, addr)
	d.Finish(t.installLocked(addr, cn, err))
	t.mu.Unlock()
}

// open dials a connection to slot's server and turns tracking on.
func (t *tracking) open(slot int) (*conn.Conn, error) {
	src := &pushSource{t: t}
	cn, err := t.route.Dial(t.ctx, route.Slot(slot), func(o *conn.Options) {
		o.PushHandler = src.onPush
		o.Protocol = 3
	})
	if err != nil {
		return nil, err
	}
	src.addr.Store(cn.Addr())
	if err := startTracking(t.ctx, cn); err != nil {
		cn.Close()
		return nil, err
	}
	return cn, nil
}

// installLocked makes cn, just opened for addr (or err, its failure), the tracked
// connection of its server and returns the one callers should use.
func (t *tracking) installLocked(addr string, cn *conn.Conn, err error) (*conn.Conn, error) {
	switch {
	case err != nil:
		if errors.Is(err, ErrNoTracking) {
			t.failed[addr] = dialFailure{err: err, until: time.Now().Add(trackingRetryAfter)}
		}
		return nil, err
	case t.closed:
		cn.Close()
		return nil, ErrClosed
	}
	delete(t.failed, addr)
	// Filed under the address it reached, which differs from addr only if the
	// topology changed meanwhile; that server may then have a tracked connection
	// already, which stays.
	if live := t.conns[cn.Addr()]; live != nil && live.Err() == nil {
		cn.Close()
		return live, nil
	}
	t.conns[cn.Addr()] = cn
	t.wg.Add(1)
	go t.watch(cn)
	return cn, nil
}

// startTracking turns tracking on for cn, in OPTIN mode: only reads preceded by CLIENT
// CACHING YES are tracked, so the server's tracking table holds the keys we cache and
// no others.
func startTracking(ctx context.Context, cn *conn.Conn) error {
	if cn.Protocol() != 3 {
		return fmt.Errorf("%w: the server answered in RESP%d", ErrNoTracking, cn.Protocol())
	}
	if _, err := cn.Do(ctx, "CLIENT", "TRACKING", "ON", "OPTIN"); err != nil {
		return fmt.Errorf("%w: CLIENT TRACKING: %w", ErrNoTracking, err)
	}
	return nil
}

// watch flushes the cache when cn is lost or closed. Only a connection that broke is
// reported lost: one closed on purpose (by Client.Close, or by the router, which
// closes the old master's connections at a Sentinel failover) ends with
// conn.ErrClosed.
func (t *tracking) watch(cn *conn.Conn) {
	defer t.wg.Done()
	defer t.keys.connLost(cn)
	select {
	case <-cn.Done():
		t.cache.Flush()
		if !errors.Is(cn.Err(), conn.ErrClosed) {
			observeCache(t.obs, observe.CacheTrackingLost, 0, cn.Addr())
		}
	case <-t.ctx.Done():
		return
	}
	t.mu.Lock()
	if t.conns[cn.Addr()] == cn {
		delete(t.conns, cn.Addr())
	}
	t.mu.Unlock()
}

// pushSource is the push handler of one tracked connection, which knows its server's
// address for the events it reports. The address is stored once the dial returns,
// before tracking is on and so before any invalidation arrives; it is atomic because
// the connection's reader reads it.
type pushSource struct {
	t    *tracking
	addr atomic.Value // string
}

// onPush runs on the reader of a tracked connection, in the order of the frames, so an
// invalidation reaches the cache before any reply that follows it is handed out.
func (s *pushSource) onPush(v resp.Value) {
	t := s.t
	inv, ok := cache.ParseInvalidation(v)
	switch {
	case !ok:
	case inv.All:
		t.cache.Flush()
		t.keys.fireAll()
		if t.obs != nil {
			addr, _ := s.addr.Load().(string)
			t.obs.Cache(observe.Cache{Kind: observe.CacheFlush, Addr: addr})
		}
	default:
		for _, k := range inv.Keys {
			t.cache.Invalidate(k)
			t.keys.fire(k)
		}
		if t.obs != nil {
			addr, _ := s.addr.Load().(string)
			t.obs.Cache(observe.Cache{Kind: observe.CacheInvalidate, Keys: len(inv.Keys), Addr: addr})
		}
	}
}

// flushCache drops every entry of cc when the Cluster's topology changed (a key read
// as missing on a slot's old node is not tracked by the new one), and tells obs.
func flushCache(cc *cache.Cache, obs observe.Observer) {
	cc.Flush()
	observeCache(obs, observe.CacheFlush, 0, "")
}

func (t *tracking) close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.cancel()
	conns := t.conns
	t.conns = nil
	t.mu.Unlock()
	for _, cn := range conns {
		cn.Close()
	}
	t.wg.Wait()
}
