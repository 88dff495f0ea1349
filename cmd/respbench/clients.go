package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/cmds"
)

// dataClient is one client configuration, used the way its documentation shows:
// typed methods or a command builder, a fresh pipeline per batch, the reply read as a
// string.
type dataClient interface {
	get(ctx context.Context, key string) (string, error)
	set(ctx context.Context, key, value string) error
	// getPipeline sends n GETs of key as one explicit pipeline.
	getPipeline(ctx context.Context, key string, n int) error
	close()
}

// cachedClient reads through a client-side cache.
type cachedClient interface {
	cachedGet(ctx context.Context, key string) (string, error)
	close()
}

// clientSpec names a client configuration and how to open it.
type clientSpec struct {
	name    string
	respire bool
	// reference marks a limit row (limits.go), not a client.
	reference bool
	// open opens the configuration for the data scenarios; nil when it takes no part.
	open func(ctx context.Context, ep endpoint) (dataClient, error)
	// openCached opens the configuration's client-side cache; nil when it has none.
	openCached func(ctx context.Context, ep endpoint) (cachedClient, error)
	// cacheNotOnCluster marks a cache that is not measured on a cluster.
	cacheNotOnCluster bool
	// scenarios names the data scenarios the configuration takes part in; nil for
	// every one. A variant of another row runs only where it answers a question, so
	// that it does not lengthen the whole run.
	scenarios []string
}

// takesPart reports whether the configuration runs the data scenario sc.
func (s clientSpec) takesPart(sc *scenario) bool {
	return s.scenarios == nil || slices.Contains(s.scenarios, sc.name)
}

// rueidisFlushDelay is rueidis's documented tuning ("something like 20 microseconds").
const rueidisFlushDelay = 20 * time.Microsecond

// cacheTTL is the client-side TTL of cached reads.
const cacheTTL = time.Minute

// cacheMaxEntries bounds the client-side caches that are bounded by entries.
const cacheMaxEntries = 10_000

// clientSpecs lists the client configurations, Respire first.
var clientSpecs = []clientSpec{
	{name: "respire", respire: true, open: openRespire, openCached: openRespireCached},
	{name: "respire-typed", respire: true, open: openRespireTyped, scenarios: []string{"get-par", "pipeline", "pipeline-spread"}},
	{name: "respire-observed", respire: true, open: openRespireObserved},
	{name: "go-redis", open: openGoRedis(false), openCached: openGoRedisCached, cacheNotOnCluster: true},
	{name: "go-redis-autopipe", open: openGoRedis(true)},
	{name: "rueidis", open: openRueidis(0), openCached: openRueidisCached},
	{name: "rueidis-flush20us", open: openRueidis(rueidisFlushDelay)},
}

// errShortValue is returned when a GET reads something other than what was stored.
var errShortValue = errors.New("respbench: GET returned an unexpected value")

// Respire, default options.

type respireClient struct{ c *respire.Client }

func openRespire(ctx context.Context, ep endpoint) (dataClient, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return respireClient{c}, nil
}

func (r respireClient) get(ctx context.Context, key string) (string, error) {
	v, err := r.c.Do(ctx, "GET", key)
	if err != nil {
		return "", err
	}
	return v.Text()
}

func (r respireClient) set(ctx context.Context, key, value string) error {
	_, err := r.c.Do(ctx, "SET", key, value)
	return err
}

func (r respireClient) getPipeline(ctx context.Context, key string, n int) error {
	p := r.c.Pipeline()
	for range n {
		p.Do("GET", key)
	}
	return execPipeline(ctx, p)
}

// execPipeline sends p and returns its first error, the batch's or a command's.
func execPipeline(ctx context.Context, p *respire.Pipeline) error {
	res, err := p.Exec(ctx)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

func (r respireClient) close() { r.c.Close() }

// Respire with the typed commands of package cmds, default options.

type respireTypedClient struct{ c *respire.Client }

func openRespireTyped(ctx context.Context, ep endpoint) (dataClient, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return respireTypedClient{c}, nil
}

func (r respireTypedClient) get(ctx context.Context, key string) (string, error) {
	return cmds.Get(key).Do(ctx, r.c)
}

func (r respireTypedClient) set(ctx context.Context, key, value string) error {
	_, err := cmds.Set(key, value).Do(ctx, r.c)
	return err
}

func (r respireTypedClient) getPipeline(ctx context.Context, key string, n int) error {
	p := cmds.NewPipeline(r.c)
	replies := make([]cmds.Reply[string], n)
	for i := range replies {
		replies[i] = cmds.Get(key).In(p)
	}
	return execTyped(ctx, p, replies)
}

// execTyped sends p and reads every typed reply, as a caller of cmds does, returning
// the first error, the batch's or a command's.
func execTyped(ctx context.Context, p *cmds.Pipeline, replies []cmds.Reply[string]) error {
	if err := p.Exec(ctx); err != nil {
		return err
	}
	for _, reply := range replies {
		if _, err := reply.Result(); err != nil {
			return err
		}
	}
	return nil
}

func (r respireTypedClient) close() { r.c.Close() }

// Respire client-side caching: Options.ClientSideCache with the same bound as
// go-redis's, read through DoCached.
func openRespireCached(ctx context.Context, ep endpoint) (cachedClient, error) {
	c, err := respire.NewClient(ctx, respire.Options{
		Addrs:           ep.addrs,
		Cluster:         ep.cluster,
		ClientSideCache: &cache.Options{MaxEntries: cacheMaxEntries},
	})
	if err != nil {
		return nil, err
	}
	return respireClient{c}, nil
}

func (r respireClient) cachedGet(ctx context.Context, key string) (string, error) {
	v, err := r.c.DoCached(ctx, cacheTTL, "GET", key)
	if err != nil {
		return "", err
	}
	return v.Text()
}

// go-redis v9: the default pool, or the blocking AutoPipeline face with its default
// options (DefaultBlockingAutoPipelineOptions, which its documentation recommends for
// that face).

type goRedisCmds interface {
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
	Pipeline() redis.Pipeliner
}

type goRedisClient struct {
	rdb  redis.UniversalClient
	ap   *redis.AutoPipeliner // nil without autopipelining
	cmds goRedisCmds
}

// goRedisAutoPipeliner is what *redis.Client and *redis.ClusterClient share.
type goRedisAutoPipeliner interface {
	redis.UniversalClient
	AutoPipeline() (*redis.AutoPipeliner, error)
}

// newGoRedis returns go-redis's client for ep: redis.NewClient, or
// redis.NewClusterClient for a cluster, each with only the address(es) set.
func newGoRedis(ep endpoint) goRedisAutoPipeliner {
	if ep.cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: ep.addrs})
	}
	return redis.NewClient(&redis.Options{Addr: ep.addrs[0]})
}

func openGoRedis(autopipeline bool) func(ctx context.Context, ep endpoint) (dataClient, error) {
	return func(ctx context.Context, ep endpoint) (dataClient, error) {
		rdb := newGoRedis(ep)
		if err := rdb.Ping(ctx).Err(); err != nil {
			rdb.Close()
			return nil, err
		}
		c := &goRedisClient{rdb: rdb, cmds: rdb}
		if autopipeline {
			ap, err := rdb.AutoPipeline()
			if err != nil {
				rdb.Close()
				return nil, fmt.Errorf("go-redis AutoPipeline: %w", err)
			}
			c.ap, c.cmds = ap, ap
		}
		return c, nil
	}
}

func (g *goRedisClient) get(ctx context.Context, key string) (string, error) {
	return g.cmds.Get(ctx, key).Result()
}

func (g *goRedisClient) set(ctx context.Context, key, value string) error {
	return g.cmds.Set(ctx, key, value, 0).Err()
}

func (g *goRedisClient) getPipeline(ctx context.Context, key string, n int) error {
	pipe := g.cmds.Pipeline()
	for range n {
		pipe.Get(ctx, key)
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (g *goRedisClient) close() {
	if g.ap != nil {
		g.ap.Close()
	}
	g.rdb.Close()
}

// go-redis client-side caching, its documented configuration.
type goRedisCached struct{ rdb *redis.Client }

func openGoRedisCached(ctx context.Context, ep endpoint) (cachedClient, error) {
	if ep.cluster {
		return nil, errors.New("respbench: go-redis's client-side cache is not measured on a cluster")
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                  ep.addrs[0],
		Protocol:              3,
		ClientSideCacheConfig: &redis.ClientSideCacheConfig{MaxEntries: cacheMaxEntries},
	})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, err
	}
	return goRedisCached{rdb}, nil
}

func (g goRedisCached) cachedGet(ctx context.Context, key string) (string, error) {
	return g.rdb.Get(ctx, key).Result()
}

func (g goRedisCached) close() { g.rdb.Close() }

// rueidis: defaults, or MaxFlushDelay.

type rueidisClient struct{ c rueidis.Client }

// rueidis finds out by itself whether its InitAddress is a cluster.
func openRueidis(flushDelay time.Duration) func(ctx context.Context, ep endpoint) (dataClient, error) {
	return func(ctx context.Context, ep endpoint) (dataClient, error) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: ep.addrs, MaxFlushDelay: flushDelay})
		if err != nil {
			return nil, err
		}
		return rueidisClient{c}, nil
	}
}

func (r rueidisClient) get(ctx context.Context, key string) (string, error) {
	return r.c.Do(ctx, r.c.B().Get().Key(key).Build()).ToString()
}

func (r rueidisClient) set(ctx context.Context, key, value string) error {
	return r.c.Do(ctx, r.c.B().Set().Key(key).Value(value).Build()).Error()
}

func (r rueidisClient) getPipeline(ctx context.Context, key string, n int) error {
	cmds := make(rueidis.Commands, n)
	for i := range cmds {
		cmds[i] = r.c.B().Get().Key(key).Build()
	}
	for _, res := range r.c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}

func (r rueidisClient) close() { r.c.Close() }

func openRueidisCached(ctx context.Context, ep endpoint) (cachedClient, error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: ep.addrs})
	if err != nil {
		return nil, err
	}
	return rueidisClient{c}, nil
}

func (r rueidisClient) cachedGet(ctx context.Context, key string) (string, error) {
	return r.c.DoCache(ctx, r.c.B().Get().Key(key).Cache(), cacheTTL).ToString()
}
