package route

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/respire/respire/conn"
)

// oneShard answers the topology of a cluster with one shard: master nodeA, replica
// nodeB (Redis 6: no CLUSTER SHARDS); ok is false for other commands.
func oneShard(args []string) (string, bool) {
	if len(args) == 2 && args[0] == "CLUSTER" {
		if args[1] == "SHARDS" {
			return "-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n", true
		}
		return "*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$1\r\na\r\n*3\r\n$8\r\n10.0.0.2\r\n:7000\r\n$1\r\nb\r\n", true
	}
	return "", false
}

// With replica reads on, a read that the replica answers TRYAGAIN is retried on a
// replica, not on the master.
func TestClusterReplicaReadRetryStaysOnReplica(t *testing.T) {
	var tries atomic.Int32
	handle := func(addr string, args []string) string {
		if r, ok := oneShard(args); ok {
			return r
		}
		if args[0] == "READONLY" {
			return "+OK\r\n"
		}
		if addr == nodeB && tries.Add(1) == 1 {
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		}
		return "$1\r\nv\r\n"
	}
	emptyPools()
	defer emptyPools()
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(t, handle)
		defer nodes.close()
		o := nodes.options()
		o.ReplicaReads = true
		r, err := NewCluster(t.Context(), []string{nodeA}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		v, cn, err := r.Do(t.Context(), get("k"), &Call{})
		if s, _ := v.Text(); err != nil || s != "v" {
			t.Fatalf("GET = %v, %v", v, err)
		}
		if cn.Addr() != nodeB {
			t.Errorf("the retry went to %s, want the replica %s", cn.Addr(), nodeB)
		}
		if got := nodes.count(nodeA, "GET k"); got != 0 {
			t.Errorf("the master saw %d GETs, want 0", got)
		}
		if got := nodes.count(nodeB, "GET k"); got != 2 {
			t.Errorf("the replica saw %d GETs, want 2", got)
		}
	})
}

// A master that left the cluster after Masters named it is not dialled again for its
// SCAN: the call fails as not sent, and the router does not know the node again.
func TestClusterScanOfRemovedNodeIsNotSent(t *testing.T) {
	var onlyA atomic.Bool
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			if r[0] != '*' || onlyA.Load() {
				return r
			}
			return twoMastersSlots(-1)
		}
		return "*2\r\n$1\r\n0\r\n*0\r\n"
	}
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		ms, err := r.Masters(ctx)
		if err != nil || len(ms) != 2 || ms[1].Addr != nodeB {
			t.Fatalf("Masters = %v, %v; want %s and %s", ms, err, nodeA, nodeB)
		}
		onlyA.Store(true)
		if err := r.Resolve(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Inspect().Node(nodeB); ok {
			t.Fatalf("%s still known after it left", nodeB)
		}
		_, _, err = r.Do(ctx, &Cmd{Args: []any{"SCAN", "0"}}, &Call{Addr: nodeB})
		if !errors.Is(err, conn.ErrNotSent) || !errors.Is(err, ErrClosed) {
			t.Errorf("SCAN on a node that left: %v; want ErrNotSent and ErrClosed", err)
		}
		if _, ok := r.Inspect().Node(nodeB); ok {
			t.Errorf("%s known again after its SCAN", nodeB)
		}
		if got := withoutTopology(nodes.seen(nodeB)); len(got) > 0 {
			t.Errorf("%s, which left the cluster, saw %q", nodeB, got)
		}
	})
}
