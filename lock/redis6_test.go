package lock

import (
	"slices"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
)

// A Redis 6.0 Cluster (every node emulated in front of Redis 7): the client's topology
// comes from CLUSTER SLOTS, and each node's locks take the Lua path after Redis 6's
// own wording of the unknown DELEX and DELIFEQ (issue 10: releases used to fail there).
func TestLocksOnRedis6Cluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	nodes := cl.Nodes()
	emus := emulator.StartCluster(t, cl.Seeds(), []emulator.Profile{emulator.Redis60, emulator.Redis60, emulator.Redis60})
	keys := make([]string, len(nodes))
	for i, n := range nodes {
		for s := 0; s < cluster.SlotCount; s += 97 {
			if cl.MasterOf(t, s).ID == n.ID {
				keys[i] = clusterserver.KeyIn(s, "six:")
				break
			}
		}
	}
	c := testclient.New(t, respire.Options{Addrs: []string{emus[0].Addr(), emus[1].Addr()}, Cluster: true})
	for _, n := range nodes {
		n.Do(t, "SCRIPT", "FLUSH")
	}
	for _, e := range emus {
		e.Reset()
	}
	locks := New(c)
	for _, k := range keys {
		cycle(t, locks, k)
	}
	want := []string{"SET NX", "SET IFEQ", "EVALSHA", "EVAL", "DELEX", "DELIFEQ", "EVALSHA", "EVAL"}
	for i, e := range emus {
		if got := lockCommands(e); !slices.Equal(got, want) {
			t.Errorf("node %d: %v, want %v", i, got, want)
		}
		if _, version := mustConn(t, c, keys[i]).Server(); version != "6.0.16" {
			t.Errorf("node %d: the client's connection reached a server of version %q", i, version)
		}
	}
	for i, k := range keys {
		if got := nodes[i].Do(t, "EXISTS", k); got != "0" {
			t.Errorf("%s still held after release", k)
		}
	}
}
