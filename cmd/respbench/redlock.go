package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
)

// redlockNodes is the size of the Redlock group: three independent servers, the
// smallest group Redlock allows.
const redlockNodes = 3

// redlockSpecs lists the Redlock implementations the redlock scenario measures. Each
// opens over the redlockNodes addresses of its endpoint, one standalone client or pool
// per server. They are not lockerSpecs() entries: those run on the one server of the
// lock scenarios.
var redlockSpecs = []lockerSpec{
	{
		name:    "respire-redlock",
		respire: true,
		retry:   "coordination.NewRedlockGroup over 3 default Respire clients, TryAcquire (one attempt), its default NodeTimeout 1s and DriftFactor 0.01",
		open:    openRespireRedlock,
	},
	{
		name:  "redsync-goredis-3",
		retry: "redsync.New over 3 go-redis pools (default clients), WithTries(1) and WithExpiry(10s) as Respire's one attempt and TTL, its default drift and timeout factors",
		open:  openRedsync3(goRedisPool),
	},
	{
		name:  "redsync-rueidis-3",
		retry: "redsync.New over 3 rueidiscompat pools (default rueidis clients), WithTries(1) and WithExpiry(10s), its default drift and timeout factors",
		open:  openRedsync3(rueidisPool),
	},
}

// serverSet is independent redis-server processes respbench starts for the redlock
// scenario, whatever -addr and -cluster say: Redlock needs standalone servers that
// share nothing, which neither one server nor a cluster's nodes are.
type serverSet struct {
	nodes []*server
	dir   string
}

// startServers starts n standalone redis-servers, each on a free loopback port in a
// directory of its own, and returns once each answers PING.
func startServers(ctx context.Context, serverBin string, n int) (*serverSet, error) {
	bin, err := lookServer(serverBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "respbench-redlock-")
	if err != nil {
		return nil, fmt.Errorf("respbench: temporary directory: %w", err)
	}
	ss := &serverSet{dir: dir}
	for i := range n {
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o700); err != nil {
			ss.stop()
			return nil, fmt.Errorf("respbench: temporary directory: %w", err)
		}
		s, err := launchRetrying(ctx, bin, nodeDir)
		if err != nil {
			ss.stop()
			return nil, err
		}
		ss.nodes = append(ss.nodes, s)
	}
	return ss, nil
}

// addrs returns every server's address.
func (ss *serverSet) addrs() []string {
	out := make([]string, len(ss.nodes))
	for i, s := range ss.nodes {
		out[i] = s.addr
	}
	return out
}

// stop stops every server and removes their directory.
func (ss *serverSet) stop() {
	for _, s := range ss.nodes {
		s.stop()
	}
	os.RemoveAll(ss.dir)
}

// respireRedlock is package coordination's RedlockGroup over one default Respire
// client per server.
type respireRedlock struct {
	clients []*respire.Client
	g       *coordination.RedlockGroup
}

func openRespireRedlock(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
	l := &respireRedlock{}
	for _, addr := range ep.addrs {
		c, err := respire.NewClient(ctx, respire.Options{Addrs: []string{addr}})
		if err != nil {
			l.close()
			return nil, fmt.Errorf("%s: %w", addr, err)
		}
		l.clients = append(l.clients, c)
	}
	g, err := coordination.NewRedlockGroup(l.clients, coordination.RedlockOptions{})
	if err != nil {
		l.close()
		return nil, err
	}
	l.g = g
	return l, nil
}

func (l *respireRedlock) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	rl, ok, err := l.g.TryAcquire(ctx, key, lockTTL)
	if err != nil || !ok {
		return nil, false, err
	}
	return func(ctx context.Context) error {
		ok, err := rl.Release(ctx)
		if err == nil && !ok {
			err = fmt.Errorf("respire-redlock: release of %s not confirmed by a quorum", key)
		}
		return err
	}, true, nil
}

// close closes the clients; the group does not own them.
func (l *respireRedlock) close() {
	for _, c := range l.clients {
		c.Close()
	}
}

// redsyncPool opens one redsync pool on a standalone server, and what closes it.
type redsyncPool func(ctx context.Context, addr string) (redsyncredis.Pool, func(), error)

func goRedisPool(ctx context.Context, addr string) (redsyncredis.Pool, func(), error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return redsyncgoredis.NewPool(rdb), func() { rdb.Close() }, nil
}

func rueidisPool(_ context.Context, addr string) (redsyncredis.Pool, func(), error) {
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, nil, err
	}
	return redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c)), c.Close, nil
}

// openRedsync3 returns the opener of redsync over one pool per server of the
// endpoint: its Redlock. One try, as Respire's TryAcquire makes one attempt: a
// failure on distinct keys is then an error in the report, not a retry hidden in the
// latency.
func openRedsync3(open redsyncPool) func(ctx context.Context, ep endpoint, o lockerOptions) (locker, error) {
	return func(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
		var (
			pools  []redsyncredis.Pool
			closes []func()
		)
		closeAll := func() {
			for _, c := range closes {
				c()
			}
		}
		for _, addr := range ep.addrs {
			p, closeFn, err := open(ctx, addr)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("%s: %w", addr, err)
			}
			pools, closes = append(pools, p), append(closes, closeFn)
		}
		return &redsyncLocker{
			rs:      redsync.New(pools...),
			opts:    []redsync.Option{redsync.WithTries(1), redsync.WithExpiry(lockTTL)},
			closeFn: closeAll,
		}, nil
	}
}
