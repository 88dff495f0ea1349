package clusterserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
)

// keyInSlot finds a key that hashes to slot, and checks it with the server.
func keyInSlot(t *testing.T, n *Node, slot int, tag string) string {
	t.Helper()
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", tag, i)
		if cluster.Slot(k) != slot {
			continue
		}
		if s, _ := strconv.Atoi(n.Do(t, "CLUSTER", "KEYSLOT", k)); s != slot {
			t.Fatalf("CLUSTER KEYSLOT %s = %d, want %d", k, s, slot)
		}
		return k
	}
}

func TestLifecycle(t *testing.T) {
	start := time.Now()
	c := Start(t, Config{})
	t.Logf("3 masters + 3 replicas ready in %v", time.Since(start))
	if got := len(c.Nodes()); got != 6 {
		t.Fatalf("%d nodes, want 6", got)
	}
	masters := c.Masters(t)
	if len(masters) != 3 {
		t.Fatalf("%d masters, want 3", len(masters))
	}
	for _, m := range masters {
		if r := c.ReplicasOf(t, m); len(r) != 1 {
			t.Fatalf("master %s has %d replicas, want 1", m.Addr(), len(r))
		}
	}
	for _, n := range c.Nodes() {
		if info := n.Do(t, "CLUSTER", "INFO"); !strings.Contains(info, "cluster_state:ok") {
			t.Fatalf("%s: %s", n.Addr(), info)
		}
	}

	// Live migration of a slot with keys in it.
	slot := 100
	src := c.MasterOf(t, slot)
	var dst *Node
	for _, m := range masters {
		if m.ID != src.ID {
			dst = m
			break
		}
	}
	var keys []string
	for i := range 5 {
		k := keyInSlot(t, src, slot, fmt.Sprintf("k%d-", i))
		src.Do(t, "SET", k, "v"+k)
		keys = append(keys, k)
	}
	mig := c.BeginMigration(t, slot, dst)
	mig.MoveKeys(t, keys[0])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := src.DoErr(ctx, "GET", keys[0]); err == nil || !strings.HasPrefix(err.Error(), "ASK ") {
		t.Fatalf("GET of a moved key on the source: %v, want ASK", err)
	}
	mig.MoveAll(t)
	phase := time.Now()
	mig.Finish(t)
	t.Logf("finish migration: %v", time.Since(phase))
	if got := c.MasterOf(t, slot); got.ID != dst.ID {
		t.Fatalf("slot %d served by %s after migration, want %s", slot, got.Addr(), dst.Addr())
	}
	for _, k := range keys {
		if v := dst.Do(t, "GET", k); v != "v"+k {
			t.Fatalf("GET %s on the target = %q", k, v)
		}
	}
	if _, err := src.DoErr(ctx, "GET", keys[1]); err == nil || !strings.HasPrefix(err.Error(), "MOVED ") {
		t.Fatalf("GET on the old owner: %v, want MOVED", err)
	}

	// Coordinated failover, then a crash.
	m := c.MasterOf(t, 0)
	r := c.ReplicasOf(t, m)[0]
	phase = time.Now()
	c.Failover(t, r)
	t.Logf("failover: %v", time.Since(phase))
	if got := c.MasterOf(t, 0); got.ID != r.ID {
		t.Fatalf("after FAILOVER, slot 0 is served by %s, want %s", got.Addr(), r.Addr())
	}
	start = time.Now()
	promoted := c.KillMaster(t, r)
	t.Logf("kill -9 failover took %v", time.Since(start))
	if promoted.ID != m.ID {
		t.Fatalf("promoted %s, want %s", promoted.Addr(), m.Addr())
	}
	phase = time.Now()
	c.Restart(t, r)
	t.Logf("restart: %v", time.Since(phase))
	if got := c.ReplicasOf(t, m); len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("after restart, replicas of %s: %v", m.Addr(), got)
	}
}
