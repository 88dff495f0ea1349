package cmds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/clusterserver"
)

// TestCluster runs typed commands on a Cluster with a key prefix: each is routed by
// its keys as Client.Do routes it, single commands, a pipeline across slots and a
// transaction in one slot.
func TestCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c, err := respire.NewClient(ctx, respire.Options{Addrs: cl.Seeds()[:2], Cluster: true, Protocol: proto, KeyPrefix: "typed:"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := NewPipeline(c)
			sets := make([]Reply[string], 30)
			for i := range sets {
				sets[i] = Set(fmt.Sprintf("k%d", i), i).In(p)
			}
			if err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range sets {
				if s, err := sets[i].Result(); s != "OK" || err != nil {
					t.Fatalf("SET k%d in a pipeline: %q %v", i, s, err)
				}
				if got, err := Get(fmt.Sprintf("k%d", i)).Do(ctx, c); got != fmt.Sprint(i) || err != nil {
					t.Fatalf("GET k%d: %q %v", i, got, err)
				}
			}
			// The prefix is applied: typed:{p}k holds the value, typed:typed:{p}k not.
			if _, err := Set("{p}k", 1).Do(ctx, c); err != nil {
				t.Fatal(err)
			}
			if n, err := Exists("typed:{p}k", "{p}k").Do(ctx, c); n != 1 || err != nil {
				t.Errorf("EXISTS with and without the prefix: %d %v", n, err)
			}
			if _, err := ZAdd("{u}board", Z{"a", 1}, Z{"b", 2}).Do(ctx, c); err != nil {
				t.Fatal(err)
			}
			var zs Reply[[]Z]
			err = c.Watch(ctx, func(tx *respire.Tx) error {
				tp := NewTxPipeline(tx)
				ZIncrBy("{u}board", 5, "a").In(tp)
				zs = ZRangeWithScores("{u}board", "0", "-1").In(tp)
				return tp.Exec(ctx)
			}, "{u}board")
			if got := zs.Val(); err != nil || len(got) != 2 || got[1] != (Z{"a", 6}) {
				t.Errorf("transaction: %v %v %v", got, zs.Err(), err)
			}
		})
	}
}
