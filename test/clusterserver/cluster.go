package clusterserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire/test/testserver"
)

// Timing of the harness. Every wait polls a condition against a deadline.
const (
	settleTimeout = 30 * time.Second      // for the cluster to agree after a change
	pollInterval  = 20 * time.Millisecond // between polls
	migrateBatch  = 100                   // keys per MIGRATE
	migrateTimeo  = "5000"                // MIGRATE's own timeout, in milliseconds
	defaultNodeTO = time.Second           // cluster-node-timeout
)

// Config describes a cluster to start. The zero value is three masters with one replica
// each and a one-second node timeout.
type Config struct {
	// Masters is the number of masters; default 3.
	Masters int
	// Replicas is the number of replicas of each master; default 1. NoReplicas makes it 0.
	Replicas   int
	NoReplicas bool
	// NodeTimeout is cluster-node-timeout: how long a node may be unreachable before
	// it is failed (and its replica promoted). Default 1s.
	NodeTimeout time.Duration
	// Server is the configuration of every node; its Args come after the harness's
	// own cluster arguments. RequirePass also becomes masterauth.
	Server testserver.Config
}

// Node is one redis-server of the cluster.
type Node struct {
	*testserver.Server
	// ID is the node's cluster ID (CLUSTER MYID), fixed for its life.
	ID string
}

// Cluster is a running cluster started by Start.
type Cluster struct {
	cfg Config

	mu    sync.Mutex // guards nodes, which RemoveNode shortens
	nodes []*Node
}

// members returns the nodes of the cluster now.
func (c *Cluster) members() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// Start starts and assembles a cluster described by cfg, and returns once every node
// reports cluster_state:ok and all nodes agree on the slot owners and on which node
// replicates which. The nodes are stopped by the test's cleanup.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Masters <= 0 {
		cfg.Masters = 3
	}
	switch {
	case cfg.NoReplicas:
		cfg.Replicas = 0
	case cfg.Replicas <= 0:
		cfg.Replicas = 1
	}
	if cfg.NodeTimeout <= 0 {
		cfg.NodeTimeout = defaultNodeTO
	}
	c := &Cluster{cfg: cfg}
	srvCfg := cfg.Server
	srvCfg.Args = append([]string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(cfg.NodeTimeout.Milliseconds(), 10),
		// Layout stays as the test built it: no replica moves to an orphaned master.
		"--cluster-allow-replica-migration", "no",
		// A replica can always be elected, however long its link was down.
		"--cluster-replica-validity-factor", "0",
		// Replicas sync at once rather than waiting for more replicas to join a transfer.
		"--repl-diskless-sync-delay", "0",
	}, cfg.Server.Args...)
	if cfg.Server.RequirePass != "" {
		srvCfg.Args = append(srvCfg.Args, "--masterauth", cfg.Server.RequirePass)
	}
	n := cfg.Masters * (1 + cfg.Replicas)
	for i := range n {
		s := testserver.Start(t, srvCfg)
		if s == nil {
			return nil
		}
		node := &Node{Server: s, ID: strings.TrimSpace(s.Do(t, "CLUSTER", "MYID"))}
		// Distinct epochs from the start, as redis-cli --cluster create sets them, so
		// that no epoch collision has to be resolved before the cluster agrees.
		s.Do(t, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1))
		c.nodes = append(c.nodes, node)
	}
	masters := c.nodes[:cfg.Masters]
	for i, m := range masters {
		first := i * 16384 / cfg.Masters
		last := (i+1)*16384/cfg.Masters - 1
		m.Do(t, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last))
	}
	for _, other := range c.nodes[1:] {
		c.nodes[0].Do(t, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(other.Port()))
	}
	c.waitFor(t, "every node to know every other node", func(ctx context.Context) error {
		for _, nd := range c.nodes {
			view, err := nd.view(ctx)
			if err != nil {
				return err
			}
			if len(view) != n {
				return fmt.Errorf("%s knows %d nodes of %d", nd.Addr(), len(view), n)
			}
			for _, e := range view {
				if e.has("handshake") || e.has("noaddr") {
					return fmt.Errorf("%s: node %s is %v", nd.Addr(), e.id, e.flags)
				}
			}
		}
		return nil
	})
	for i, r := range c.nodes[cfg.Masters:] {
		master := masters[i%cfg.Masters]
		r.Do(t, "CLUSTER", "REPLICATE", master.ID)
	}
	c.WaitStable(t)
	// A replica whose link is up can be promoted by CLUSTER FAILOVER at once.
	for _, r := range c.nodes[cfg.Masters:] {
		c.waitFor(t, r.Addr()+" to sync with its master", func(ctx context.Context) error {
			info, err := r.DoErr(ctx, "INFO", "replication")
			if err != nil {
				return err
			}
			if !strings.Contains(info, "master_link_status:up") {
				return errors.New("replication link not up")
			}
			return nil
		})
	}
	return c
}

// Nodes returns every node, in the order they were started: the initial masters
// first, then the replicas.
func (c *Cluster) Nodes() []*Node { return c.members() }

// Seeds returns the addresses of every node, for a client's seed list.
func (c *Cluster) Seeds() []string {
	nodes := c.members()
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr()
	}
	return out
}

// NodeAt returns the node listening on addr, or nil.
func (c *Cluster) NodeAt(addr string) *Node {
	for _, n := range c.members() {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// byID returns the node with a cluster ID, or nil.
func (c *Cluster) byID(id string) *Node {
	for _, n := range c.members() {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Masters returns the nodes that serve slots now, as a live node sees it.
func (c *Cluster) Masters(t testing.TB) []*Node {
	t.Helper()
	var out []*Node
	for _, e := range c.liveView(t) {
		if e.has("master") && len(e.slots) > 0 {
			out = append(out, c.byID(e.id))
		}
	}
	return out
}

// MasterOf returns the node that serves slot now, as a live node sees it.
func (c *Cluster) MasterOf(t testing.TB, slot int) *Node {
	t.Helper()
	for _, e := range c.liveView(t) {
		if e.has("master") && e.serves(slot) {
			return c.byID(e.id)
		}
	}
	t.Fatalf("clusterserver: no node serves slot %d", slot)
	return nil
}

// ReplicasOf returns the live replicas of master.
func (c *Cluster) ReplicasOf(t testing.TB, master *Node) []*Node {
	t.Helper()
	var out []*Node
	for _, e := range c.liveView(t) {
		if e.master == master.ID && !e.has("fail") {
			out = append(out, c.byID(e.id))
		}
	}
	return out
}

// liveView is the CLUSTER NODES of the first node that answers.
func (c *Cluster) liveView(t testing.TB) []entry {
	t.Helper()
	var errs []error
	for _, n := range c.members() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		view, err := n.view(ctx)
		cancel()
		if err == nil {
			return view
		}
		errs = append(errs, err)
	}
	t.Fatalf("clusterserver: no node answers: %v", errors.Join(errs...))
	return nil
}

// WaitStable waits until every live node reports cluster_state:ok and all of them
// agree on the owner of every slot and on the master of every live replica.
func (c *Cluster) WaitStable(t testing.TB) {
	t.Helper()
	c.waitFor(t, "the cluster to agree", func(ctx context.Context) error {
		var ref string
		var refNode string
		for _, n := range c.members() {
			info, err := n.DoErr(ctx, "CLUSTER", "INFO")
			if err != nil {
				if isDown(err) {
					continue // a killed node
				}
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster state not ok", n.Addr())
			}
			view, err := n.view(ctx)
			if err != nil {
				return err
			}
			sum := summary(view)
			if ref == "" {
				ref, refNode = sum, n.Addr()
			} else if sum != ref {
				return fmt.Errorf("%s and %s disagree:\n%s\nvs\n%s", refNode, n.Addr(), ref, sum)
			}
		}
		if ref == "" {
			return errors.New("no node answers")
		}
		return nil
	})
}

// isDown reports whether err says nothing listens (a killed node).
func isDown(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection refused")
}

// waitFor polls cond until it returns nil, failing the test with its last error after
// settleTimeout.
func (c *Cluster) waitFor(t testing.TB, what string, cond func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := cond(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("clusterserver: waited %v for %s: %v", settleTimeout, what, err)
			return
		}
		time.Sleep(pollInterval) // polling a condition, not synchronising
	}
}
