package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestClusterAnyNodeSkipsDeadMaster shuts one master of three down (no replica takes
// over): every Subscribe and keyless command, which may use any node, reaches a live
// one, and NewClient with the dead node as its first seed starts. The killed master is
// the second in address order, where the router's rotation starts.
func TestClusterAnyNodeSkipsDeadMaster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{
		NoReplicas: true,
		Server:     testserver.Config{Args: []string{"--cluster-require-full-coverage", "no"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	masters := cl.Masters(t)
	if len(masters) != 3 {
		t.Fatalf("%d masters, want 3", len(masters))
	}
	slices.SortFunc(masters, func(a, b *clusterserver.Node) int { return strings.Compare(a.Addr(), b.Addr()) })
	dead, live := masters[1], []*clusterserver.Node{masters[0], masters[2]}
	c := testclient.New(t, respire.Options{Addrs: []string{live[0].Addr()}, Cluster: true, DialTimeout: time.Second})
	dead.Kill(t)

	for i := range 6 {
		channel := fmt.Sprintf("any.%d", i)
		sub, err := c.Subscribe(ctx, channel)
		if err != nil {
			t.Errorf("Subscribe %d with a master down: %v", i, err)
			continue
		}
		defer sub.Close()
		// PUBLISH reaches every node's subscribers through the cluster bus.
		publishUntilHeard(t, live[i%2].Server, sub, channel, "hello")
	}
	// A keyless command without routing tips goes to any node. (PING is not one: its
	// tips send it to every shard, and it fails while one is down, as the README says.)
	for i := range 6 {
		if _, err := c.Do(ctx, "ECHO", "hi"); err != nil {
			t.Errorf("ECHO %d with a master down: %v", i, err)
		}
	}
	if _, err := c.Do(ctx, "PING"); err == nil {
		t.Error("PING with a master down succeeded, want it to fail: it goes to every master")
	}
	for i := range 3 {
		nc, err := respire.NewClient(ctx, respire.Options{Addrs: []string{dead.Addr(), live[0].Addr(), live[1].Addr()}, Cluster: true, DialTimeout: time.Second})
		if err != nil {
			t.Errorf("NewClient %d with the dead master as first seed: %v", i, err)
			continue
		}
		if _, err := nc.Do(ctx, "ECHO", "hi"); err != nil {
			t.Errorf("ECHO on NewClient %d: %v", i, err)
		}
		nc.Close()
	}
}
