package respire

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// Each round trip of Scan is a command the observer sees, as HScan's are: named SCAN,
// with the server's address.
func TestObserverScan(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for i := range 30 {
		srv.Do(t, "SET", fmt.Sprintf("scan:%d", i), "v")
	}
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec})
	n := 0
	for _, err := range c.Scan(context.Background(), ScanOptions{Count: 5}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 30 {
		t.Fatalf("Scan yielded %d keys, want 30", n)
	}
	rec.lastEnd(t) // every start ended
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.ends) < 2 {
		t.Errorf("%d CommandEnd events for a Scan of 30 keys by 5, want one a round trip", len(rec.ends))
	}
	for _, e := range rec.ends {
		if e.Name != "SCAN" || e.Addr != srv.Addr() || e.Outcome != observe.OK {
			t.Errorf("CommandEnd %+v, want SCAN on %s, ok", e, srv.Addr())
		}
	}
}

// On a Cluster, a batch whose keys are all on one node (a hash tag) names that node in
// BatchEnd.Addr, DoMulti's and a Pipeline's alike; one split across nodes names none.
func TestObserverClusterBatchAddr(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := clusterTestContext(t)
	rec := &recorder{}
	c := clusterClient(t, cl, Options{Observer: rec})
	const slot = 4242
	one := [][]any{{"SET", keyIn(slot, "a"), "1"}, {"GET", keyIn(slot, "b")}}
	spread := [][]any{{"GET", keyIn(0, "obs")}, {"GET", keyIn(cluster.SlotCount-1, "obs")}}
	owner := cl.MasterOf(t, slot).Addr()
	pipeline := func(cmds [][]any) ([]Result, error) {
		p := c.Pipeline()
		for _, args := range cmds {
			p.Do(args...)
		}
		return p.Exec(ctx)
	}
	for _, tc := range []struct {
		name string
		run  func(cmds [][]any) ([]Result, error)
	}{
		{"multi", func(cmds [][]any) ([]Result, error) { return c.DoMulti(ctx, cmds...) }},
		{"pipeline", pipeline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.run(one); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != owner || e.Outcome != observe.OK {
				t.Errorf("batch on %s alone: BatchEnd %+v", owner, e)
			}
			if _, err := tc.run(spread); err != nil {
				t.Fatal(err)
			}
			if e := rec.lastBatch(t); e.Addr != "" || e.Outcome != observe.OK {
				t.Errorf("batch split across nodes: BatchEnd %+v", e)
			}
		})
	}
}

// The tracked connection of a server that stopped being the master, closed on purpose
// when the new master's is installed (a Sentinel failover), is not reported lost; a
// tracked connection that breaks is.
func TestObserverTrackingReplacedIsNotLost(t *testing.T) {
	oldMaster := testserver.Start(t, testserver.Config{})
	newMaster := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := cachedClientT(t, oldMaster, Options{Observer: rec})
	ctx := context.Background()
	cachedText(t, c, time.Hour, "GET", "obs:r")
	// A push handler keeps the reader on, which finds the connection broken.
	cn, err := conn.Dial(ctx, newMaster.Addr(), conn.Options{Protocol: 3, PushHandler: func(resp.Value) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := startTracking(ctx, cn); err != nil {
		t.Fatal(err)
	}
	tr := c.tracking
	tr.mu.Lock()
	_, err = tr.installLocked(newMaster.Addr(), cn, nil)
	tr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if killTracked(t, newMaster) == 0 {
		t.Fatal("no tracking connection to kill")
	}
	eventually(t, "the tracking-lost event of the broken connection", func() bool {
		_, ok := rec.cacheEvent(observe.CacheTrackingLost)
		return ok
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, e := range rec.caches {
		if e.Kind == observe.CacheTrackingLost && e.Addr != newMaster.Addr() {
			t.Errorf("CacheTrackingLost %+v for the connection closed on purpose", e)
		}
	}
}
