package respire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/emulator"
)

// A command the table lacks, added to a Cluster Pipeline before COMMAND INFO was asked
// about it, is resolved at Exec and goes to the node that owns its key, in its place
// in the batch; a command nobody knows, or a blocking one behind it, fails Exec with
// nothing sent.
func TestClusterPipelineResolvesUnknownCommands(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	emus := emulator.StartCluster(t, cl.Seeds(), nil)
	byBackend := map[string]*emulator.Emulator{}
	for i, n := range cl.Nodes() {
		byBackend[n.Addr()] = emus[i]
	}
	ctx := clusterTestContext(t)
	reset := func() {
		for _, e := range emus {
			e.Reset()
		}
	}

	t.Run("resolved at Exec", func(t *testing.T) {
		c := newClientT(t, Options{Addrs: []string{emus[0].Addr()}, Cluster: true})
		withoutCommands(c, "getdel")
		keys := clusterserver.SampleKeys(6, "pci:")
		p := c.Pipeline()
		for i, k := range keys {
			p.Do("SET", k, fmt.Sprint("v", i)).Do("GETDEL", k).Do("EXISTS", k)
		}
		reset()
		res, err := p.Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 3*len(keys) {
			t.Fatalf("%d results for %d commands", len(res), 3*len(keys))
		}
		for i, k := range keys {
			set, getdel, exists := res[3*i], res[3*i+1], res[3*i+2]
			if set.Err != nil || getdel.Err != nil || text(getdel.Value) != fmt.Sprint("v", i) || exists.Value.String() != "0" {
				t.Fatalf("key %s: SET %v %v, GETDEL %v %v, EXISTS %v %v", k, set.Value, set.Err, getdel.Value, getdel.Err, exists.Value, exists.Err)
			}
		}
		var asked int64
		for _, e := range emus {
			asked += e.Count("COMMAND INFO")
		}
		if asked != 1 {
			t.Errorf("COMMAND INFO asked %d times, want once", asked)
		}
		for _, k := range keys {
			owner := byBackend[cl.MasterOf(t, cluster.Slot(k)).Addr()]
			if owner.Count("GETDEL") == 0 {
				t.Errorf("GETDEL %s did not reach the owner %s", k, owner.Addr())
			}
		}
		var moved int64
		for _, e := range emus {
			moved += e.Count("GETDEL")
		}
		if moved != int64(len(keys)) {
			t.Errorf("GETDEL sent %d times for %d keys: a detour by MOVED", moved, len(keys))
		}
	})

	for _, tt := range []struct {
		name    string
		cmds    [][]any
		wantErr error
	}{
		{"unknown to the server", [][]any{{"SET", "pci:x", "1"}, {"NOSUCHCMD", "pci:x"}, {"GET", "pci:x"}}, ErrUnknownKeys},
		{"blocking after an unresolved one", [][]any{{"SET", "pci:x", "1"}, {"GETDEL", "pci:x"}, {"BLPOP", "pci:l", 0}}, ErrBlockingInBatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClientT(t, Options{Addrs: []string{emus[0].Addr()}, Cluster: true})
			withoutCommands(c, "getdel")
			p := c.Pipeline()
			for _, cmd := range tt.cmds {
				p.Do(cmd...)
			}
			reset()
			if _, err := p.Exec(ctx); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Exec: %v; want %v", err, tt.wantErr)
			}
			for _, e := range emus {
				for _, name := range []string{"SET", "GETDEL", "NOSUCHCMD", "BLPOP"} {
					if n := e.Count(name); n != 0 {
						t.Errorf("%s reached %s %d times", name, e.Addr(), n)
					}
				}
			}
			if p.Len() != 0 {
				t.Errorf("the pipeline holds %d commands after Exec", p.Len())
			}
		})
	}
}
