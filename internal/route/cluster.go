package route

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
)

// Cluster routing tunables. Variables, not constants, so that tests can shorten them.
var (
	// RefreshInterval is the period of the background topology refresh.
	RefreshInterval = 15 * time.Second
	// RefreshGap is the least time between two refreshes, so a cluster in trouble is
	// not asked for its topology in a tight loop.
	RefreshGap = 50 * time.Millisecond
	// FetchTimeout bounds one node's answer to CLUSTER SHARDS.
	FetchTimeout = 2 * time.Second
)

const (
	// MaxRedirects bounds the MOVED/ASK hops of one command; more means the cluster is
	// reconfiguring faster than the client can follow, or is misconfigured.
	MaxRedirects = 16
	// MaxClusterRetries bounds the retries after TRYAGAIN and CLUSTERDOWN.
	MaxClusterRetries = 8
)

// Cluster routes by hash slot to the nodes of a Redis Cluster. Each slot points at a
// shard (a master and its replicas); each node is an endpoint: one auto-pipelined
// connection and one pool of dedicated connections. The slot table is read without
// locks; MOVED replies patch one slot and topology refreshes rewrite the table.
type Cluster struct {
	o     Options
	seeds []string

	slots   [cluster.SlotCount]atomic.Pointer[clusterShard]
	masters atomic.Pointer[[]*clusterNode] // masters that serve slots, for keyless commands
	all     atomic.Pointer[[]*clusterNode] // those masters and all their replicas
	next    atomic.Uint32                  // round-robin over masters and replicas

	mu     sync.Mutex
	nodes  map[string]*clusterNode // every node in use, by address
	closed bool

	refresher *cluster.Refresher
	fetches   atomic.Uint64 // topology replies read, for tests

}

// notifySlotMoved tells the router's owner that a slot changed masters
// (Options.OnSlotMoved).
func (r *Cluster) notifySlotMoved() {
	if f := r.o.OnSlotMoved; f != nil {
		f()
	}
}

// clusterShard is the master serving a set of slots and the replicas that may serve its
// reads.
type clusterShard struct {
	master   *clusterNode
	replicas []*clusterNode
}

// clusterNode is the endpoint of one node.
type clusterNode struct {
	endpoint
	gone atomic.Bool // removed from the cluster and closed
}

// NewCluster reads the topology from the first of seeds that answers and returns the
// router of that cluster, which then refreshes the topology in the background.
func NewCluster(ctx context.Context, seeds []string, o Options) (*Router, error) {
	r := &Cluster{
		o:     o,
		seeds: slices.Clone(seeds),
		nodes: map[string]*clusterNode{},
	}
	if err := r.refresh(ctx); err != nil {
		r.closeNodes()
		return nil, err
	}
	r.refresher = cluster.NewRefresher(r.refresh, cluster.RefresherOptions{
		Interval: RefreshInterval,
		MinGap:   RefreshGap,
	})
	return &Router{d: r}, nil
}

// newNode opens nothing yet: the shared connection is dialled on first use, the pool
// dials on demand.
func (r *Cluster) newNode(addr string) (*clusterNode, error) {
	copts := r.o.Conn
	dial := func(ctx context.Context) (*conn.Conn, error) { return conn.Dial(ctx, addr, copts) }
	var sharedDial dialFunc
	if r.o.ReplicaReads {
		// READONLY lets a replica serve reads of its master's slots; on a master it
		// changes nothing, so every shared connection can send it, whatever the
		// node's role becomes after a failover.
		sharedDial = func(ctx context.Context) (*conn.Conn, error) {
			cn, err := dial(ctx)
			if err != nil {
				return nil, err
			}
			if _, err := cn.Do(ctx, "READONLY"); err != nil {
				cn.Close()
				return nil, fmt.Errorf("respire: READONLY on %s: %w", addr, err)
			}
			return cn, nil
		}
	}
	e, err := newEndpoint(&r.o, addr, dial, sharedDial)
	if err != nil {
		return nil, err
	}
	return &clusterNode{endpoint: *e}, nil
}

func (n *clusterNode) close() {
	n.gone.Store(true)
	n.endpoint.close()
}

// nodeLocked returns the node at addr, creating it. The caller holds r.mu.
func (r *Cluster) nodeLocked(addr string) (*clusterNode, error) {
	if n := r.nodes[addr]; n != nil {
		return n, nil
	}
	if r.closed {
		return nil, ErrClosed
	}
	n, err := r.newNode(addr)
	if err != nil {
		return nil, err
	}
	r.nodes[addr] = n
	return n, nil
}

func (r *Cluster) node(addr string) (*clusterNode, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodeLocked(addr)
}

// knownNode returns the node at addr when the cluster still has it, creating none: a
// node that left (its SCAN cursor went with it) must not be dialled again. A node it
// does not know fails as not sent.
func (r *Cluster) knownNode(addr string) (*clusterNode, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[addr]; n != nil {
		return n, nil
	}
	if r.closed {
		return nil, ErrClosed
	}
	return nil, &conn.CallError{Err: fmt.Errorf("%w: %s is no longer a node of the cluster", ErrClosed, addr)}
}

// nodeFor returns the node t is for: the node at t.Addr when set; else the master of
// t.Slot, or with t.Replica one of its replicas when it has any; for AnySlot, one of
// the masters in turn.
func (r *Cluster) nodeFor(ctx context.Context, t Target) (*clusterNode, error) {
	if t.Addr != "" {
		return r.node(t.Addr)
	}
	if t.Slot == AnySlot {
		return r.anyMaster(ctx)
	}
	s := r.slots[t.Slot].Load()
	if s == nil {
		// Not served as far as we know: the cluster may have changed under us.
		if err := r.refresher.Refresh(ctx); err != nil {
			return nil, err
		}
		if s = r.slots[t.Slot].Load(); s == nil {
			return nil, fmt.Errorf("%w: no node serves slot %d", ErrClusterDown, t.Slot)
		}
	}
	if t.Replica && len(s.replicas) > 0 {
		return s.replicas[int(r.next.Add(1))%len(s.replicas)], nil
	}
	return s.master, nil
}

func (r *Cluster) anyMaster(ctx context.Context) (*clusterNode, error) {
	ms := r.masters.Load()
	if ms == nil || len(*ms) == 0 {
		if err := r.refresher.Refresh(ctx); err != nil {
			return nil, err
		}
		if ms = r.masters.Load(); ms == nil || len(*ms) == 0 {
			return nil, fmt.Errorf("%w: no master serves any slot", ErrClusterDown)
		}
	}
	return (*ms)[int(r.next.Add(1))%len(*ms)], nil
}

// masterNodes returns the masters that serve slots, in address order.
func (r *Cluster) masterNodes(ctx context.Context) ([]*clusterNode, error) {
	if ms := r.masters.Load(); ms != nil && len(*ms) > 0 {
		return *ms, nil
	}
	if _, err := r.anyMaster(ctx); err != nil {
		return nil, err
	}
	return *r.masters.Load(), nil
}

// allNodes returns the masters that serve slots and their replicas, as the last
// topology read named them (masterNodes has read one): healthy or not, since a
// command for every node that cannot reach one must say so.
func (r *Cluster) allNodes() []*clusterNode {
	if all := r.all.Load(); all != nil {
		return *all
	}
	return nil
}

func (r *Cluster) masterTargets(ctx context.Context) ([]Target, error) {
	ms, err := r.masterNodes(ctx)
	if err != nil {
		return nil, err
	}
	ts := make([]Target, len(ms))
	for i, n := range ms {
		ts[i] = Node(n.addr)
	}
	return ts, nil
}

// addr is t's node as the slot map has it now (as nodeFor picks it): "" for any
// master, a replica (picked when the command is sent) or a slot no node serves.
func (r *Cluster) addr(t Target) string {
	if t.Addr != "" {
		return t.Addr
	}
	if t.Slot < 0 || t.Slot >= len(r.slots) {
		return ""
	}
	s := r.slots[t.Slot].Load()
	if s == nil || t.Replica && len(s.replicas) > 0 {
		return ""
	}
	return s.master.addr
}

// conn returns n's shared connection; a failure to connect asks for a topology refresh,
// since the node may have died or left.
func (r *Cluster) conn(ctx context.Context, n *clusterNode) (*conn.Conn, error) {
	cn, err := n.shared.Get(ctx)
	if err != nil {
		r.refresher.Trigger()
	}
	return cn, err
}

func (r *Cluster) shared(ctx context.Context, t Target) (*conn.Conn, error) {
	if anyNode(t) {
		return r.sharedConn(ctx, t, nil)
	}
	for attempt := 0; ; attempt++ {
		n, err := r.nodeFor(ctx, t)
		if err != nil {
			return nil, err
		}
		cn, err := r.conn(ctx, n)
		if err != nil && n.gone.Load() && attempt < 3 {
			continue // the node left while we looked it up: look again
		}
		return cn, err
	}
}

// anyNode reports whether t lets any master serve it (no key, no node named, no
// replica asked for).
func anyNode(t Target) bool { return t.Slot == AnySlot && t.Addr == "" && !t.Replica }

// tryMasters connects to a master of the caller's choice for a target any node
// serves: from the next one in the rotation, it tries each master once until connect
// succeeds or ctx ends, so a master that is down (a Cluster without replicas still
// lists it) gives way to one that is up. It returns the last failure.
func (r *Cluster) tryMasters(ctx context.Context, connect func(*clusterNode) (*conn.Conn, error)) (*conn.Conn, error) {
	ms, err := r.masterNodes(ctx)
	if err != nil {
		return nil, err
	}
	start := int(r.next.Add(1))
	for i := range len(ms) {
		var cn *conn.Conn
		if cn, err = connect(ms[(start+i)%len(ms)]); err == nil || ctx.Err() != nil {
			return cn, err
		}
	}
	return nil, err
}

func (r *Cluster) peer(ctx context.Context, t Target) (*SharedConn, error) {
	n, err := r.nodeFor(ctx, t)
	if err != nil {
		return nil, err
	}
	return n.shared, nil
}

func (r *Cluster) dedicated(ctx context.Context, t Target) (*conn.Conn, error) {
	if anyNode(t) {
		return r.tryMasters(ctx, func(n *clusterNode) (*conn.Conn, error) { return r.dedicatedOn(ctx, n) })
	}
	for attempt := 0; ; attempt++ {
		n, err := r.nodeFor(ctx, t)
		if err != nil {
			return nil, err
		}
		cn, err := n.get(ctx)
		if err != nil {
			if n.gone.Load() && attempt < 3 && t.Addr == "" {
				continue
			}
			if t.Addr == "" {
				r.refresher.Trigger()
			}
		}
		return cn, err
	}
}

// dedicatedOn checks out a connection to n, asking for a topology refresh when n cannot
// be reached.
func (r *Cluster) dedicatedOn(ctx context.Context, n *clusterNode) (*conn.Conn, error) {
	cn, err := n.get(ctx)
	if err != nil {
		r.refresher.Trigger()
	}
	return cn, err
}

func (r *Cluster) release(cn *conn.Conn, reusable bool) {
	r.mu.Lock()
	n := r.nodes[cn.Addr()]
	r.mu.Unlock()
	if n == nil {
		cn.Close() // its node left; its pool is closed
		return
	}
	n.release(cn, reusable)
}

func (r *Cluster) dial(ctx context.Context, t Target, adjust func(*conn.Options)) (*conn.Conn, error) {
	opts := r.o.Conn
	if adjust != nil {
		adjust(&opts)
	}
	connect := func(n *clusterNode) (*conn.Conn, error) {
		cn, err := conn.Dial(ctx, n.addr, opts)
		if err != nil {
			r.refresher.Trigger()
		}
		return cn, err
	}
	if anyNode(t) {
		return r.tryMasters(ctx, connect)
	}
	n, err := r.nodeFor(ctx, t)
	if err != nil {
		return nil, err
	}
	return connect(n)
}

func (r *Cluster) observe(context.Context, error) {}

func (r *Cluster) stats() pool.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	var sum pool.Stats
	for _, n := range r.nodes {
		s := n.pool.Stats()
		sum.Hits += s.Hits
		sum.Misses += s.Misses
		sum.Timeouts += s.Timeouts
		sum.Dials += s.Dials
		sum.DialErrors += s.DialErrors
		sum.Closed += s.Closed
		sum.Total += s.Total
		sum.Idle += s.Idle
		sum.InUse += s.InUse
		sum.Dialing += s.Dialing
		sum.Waiters += s.Waiters
	}
	return sum
}

func (r *Cluster) close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	if r.refresher != nil {
		r.refresher.Close()
	}
	r.closeNodes()
	return nil
}

func (r *Cluster) closeNodes() {
	r.mu.Lock()
	nodes := make([]*clusterNode, 0, len(r.nodes))
	for _, n := range r.nodes {
		nodes = append(nodes, n)
	}
	clear(r.nodes)
	r.closed = true
	r.mu.Unlock()
	for _, n := range nodes {
		n.close()
	}
}

// moved records that slot now belongs to the node at addr (a MOVED reply) and asks for
// a refresh, which brings the rest of the table, replicas included, up to date.
func (r *Cluster) moved(slot int, addr string) (*clusterNode, error) {
	r.mu.Lock()
	n, err := r.nodeLocked(addr)
	changed := false
	if err == nil {
		if cur := r.slots[slot].Load(); cur == nil || cur.master != n {
			r.slots[slot].Store(&clusterShard{master: n})
			changed = cur != nil
		}
	}
	r.mu.Unlock()
	if changed {
		r.notifySlotMoved()
	}
	if r.refresher != nil {
		r.refresher.Trigger()
	}
	return n, err
}

// refresh reads the topology from the first node that answers and applies it.
func (r *Cluster) refresh(ctx context.Context) error {
	obs := r.o.Conn.Observer
	var start time.Time
	if obs != nil {
		start = time.Now()
	}
	var e observe.Topology
	t, addr, err := r.fetch(ctx)
	if err == nil {
		e.Nodes, e.Changed, err = r.apply(t)
	}
	if obs != nil {
		e.Addr, e.Duration, e.Err = addr, time.Since(start), err
		obs.Topology(e)
	}
	return err
}

// fetch asks the known masters, then the other known nodes, then the seeds, for
// CLUSTER SHARDS (CLUSTER SLOTS on servers before 7.0). addr is the node that
// answered, or the last one asked.
func (r *Cluster) fetch(ctx context.Context) (t *cluster.Topology, addr string, err error) {
	var candidates []*clusterNode
	if ms := r.masters.Load(); ms != nil {
		candidates = slices.Clone(*ms)
		rand.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	}
	r.mu.Lock()
	for _, n := range r.nodes {
		if !slices.Contains(candidates, n) {
			candidates = append(candidates, n)
		}
	}
	r.mu.Unlock()
	var errs []error
	tried := map[string]bool{}
	for _, n := range candidates {
		tried[n.addr] = true
		addr = n.addr
		t, err := r.fetchFrom(ctx, n.addr, func(ctx context.Context) (*conn.Conn, func(), error) {
			cn, err := n.shared.Get(ctx)
			return cn, func() {}, err
		})
		if err == nil {
			return t, addr, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	for _, seed := range r.seeds {
		if tried[seed] || ctx.Err() != nil {
			continue
		}
		addr = seed
		t, err := r.fetchFrom(ctx, seed, func(ctx context.Context) (*conn.Conn, func(), error) {
			cn, err := conn.Dial(ctx, seed, r.o.Conn)
			if err != nil {
				return nil, nil, err
			}
			return cn, func() { cn.Close() }, nil
		})
		if err == nil {
			return t, addr, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		errs = append(errs, context.Cause(ctx))
	}
	return nil, addr, fmt.Errorf("respire: no cluster node answered with its topology: %w", errors.Join(errs...))
}

func (r *Cluster) fetchFrom(ctx context.Context, addr string, open func(context.Context) (*conn.Conn, func(), error)) (*cluster.Topology, error) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	cn, done, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	useTLS := r.o.Conn.TLS != nil
	v, err := cn.Do(ctx, "CLUSTER", "SHARDS")
	var t *cluster.Topology
	switch {
	case err == nil:
		t, err = cluster.ParseShards(v, addr, useTLS)
	case resp.IsUnknownSubcommand(err, "CLUSTER", "SHARDS"):
		// Before Redis 7.0, in the wording of either generation.
		if v, err = cn.Do(ctx, "CLUSTER", "SLOTS"); err == nil {
			t, err = cluster.ParseSlots(v, addr)
		}
	}
	if err != nil {
		if resp.IsClusterDisabled(err) {
			return nil, fmt.Errorf("%w: %s is not a cluster node (cluster-enabled is no): %v", ErrInvalidOptions, addr, err)
		}
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if t.Covered() == 0 {
		return nil, fmt.Errorf("%w: %s: no slot is assigned to any node", ErrClusterDown, addr)
	}
	r.fetches.Add(1)
	return t, nil
}

// apply rewrites the slot table from t, creating nodes that are new, and closes the
// nodes that are no longer part of the cluster. It returns how many masters serve
// slots now, and whether a slot that had a master got another.
func (r *Cluster) apply(t *cluster.Topology) (masterCount int, changed bool, err error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return 0, false, ErrClosed
	}
	live := map[*clusterNode]bool{}
	var owners [cluster.SlotCount]*clusterShard
	var masters, all []*clusterNode
	for _, s := range t.Shards {
		if s.Master.Addr == "" {
			continue
		}
		m, err := r.nodeLocked(s.Master.Addr)
		if err != nil {
			r.mu.Unlock()
			return 0, false, err
		}
		live[m] = true
		sh := &clusterShard{master: m}
		for _, rep := range s.Replicas {
			n, err := r.nodeLocked(rep.Addr)
			if err != nil {
				r.mu.Unlock()
				return 0, false, err
			}
			live[n] = true
			if rep.Healthy {
				sh.replicas = append(sh.replicas, n)
			}
			if len(s.Slots) > 0 {
				all = append(all, n)
			}
		}
		if len(s.Slots) > 0 {
			masters = append(masters, m)
			all = append(all, m)
		}
		for _, rg := range s.Slots {
			for slot := rg.First; slot <= rg.Last; slot++ {
				owners[slot] = sh
			}
		}
	}
	for slot := range owners {
		if cur := r.slots[slot].Load(); cur != nil && owners[slot] != nil && cur.master != owners[slot].master {
			changed = true
		}
		r.slots[slot].Store(owners[slot])
	}
	slices.SortFunc(masters, func(a, b *clusterNode) int { return strings.Compare(a.addr, b.addr) })
	r.masters.Store(&masters)
	slices.SortFunc(all, func(a, b *clusterNode) int { return strings.Compare(a.addr, b.addr) })
	r.all.Store(&all)
	var left []*clusterNode
	for addr, n := range r.nodes {
		if !live[n] {
			delete(r.nodes, addr)
			left = append(left, n)
		}
	}
	r.mu.Unlock()
	for _, n := range left {
		n.close()
	}
	if changed {
		r.notifySlotMoved()
	}
	return len(masters), changed, nil
}
