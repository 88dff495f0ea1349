package clusterserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// WaitReplicasOnline waits until every live node's CLUSTER SHARDS reports every live
// replica as "online", for a test whose client must see the replicas (replica reads)
// in the first topology it reads. A replica that has just synced, its master not
// having streamed anything to it yet, reports replication offset 0, which CLUSTER
// SHARDS calls "loading" (a client leaves such a replica alone) until a write reaches
// it: a SET and a DEL of one key on each master give every replica an offset to
// report, and leave the data as it was. Servers before 7.0 have no CLUSTER SHARDS and
// no health to wait for.
func (c *Cluster) WaitReplicasOnline(t testing.TB) {
	t.Helper()
	view := c.liveView(t)
	var replicas []string
	for _, e := range view {
		switch {
		case e.has("fail"):
		case e.master != "-":
			replicas = append(replicas, e.id)
		case len(e.slots) > 0:
			m := c.byID(e.id)
			if major, _, _ := strings.Cut(m.Version(t), "."); mustAtoi(t, major) < 7 {
				return
			}
			k := KeyIn(e.slots[0][0], "clusterserver:online:")
			m.Do(t, "SET", k, "1")
			m.Do(t, "DEL", k)
		}
	}
	c.waitFor(t, "every replica to be reported online", func(ctx context.Context) error {
		for _, n := range c.members() {
			shards, err := n.DoErr(ctx, "CLUSTER", "SHARDS")
			if isDown(err) {
				continue // a killed node
			}
			if err != nil {
				return err
			}
			for _, id := range replicas {
				if h := health(shards, id); h != "online" {
					return fmt.Errorf("%s reports replica %s as %q", n.Addr(), id, h)
				}
			}
		}
		return nil
	})
}

// health is the health that shards, a CLUSTER SHARDS reply as text (every element on
// a line of its own), gives the node id; "" when it does not list the node.
func health(shards, id string) string {
	lines := strings.Split(shards, "\n")
	for i := 1; i < len(lines); i++ {
		if lines[i] != id || lines[i-1] != "id" {
			continue
		}
		for j := i + 1; j+1 < len(lines) && lines[j] != "id"; j++ {
			if lines[j] == "health" {
				return lines[j+1]
			}
		}
	}
	return ""
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("clusterserver: version %q: %v", s, err)
	}
	return n
}
