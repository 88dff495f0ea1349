package cmds_test

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/cmds"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// TestTypedPipelineAllocations checks that a typed pipeline of 100 GETs allocates no
// more than Client.Pipeline does for the same batch, standalone and on a Cluster
// whose three masters each serve a share of it. The test is in package cmds_test on
// purpose: escape analysis treats a caller in another package, as every user is,
// differently from one inside cmds.
func TestTypedPipelineAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	const depth = 100
	val := strings.Repeat("v", 16)

	srv := testserver.Start(t, testserver.Config{})
	standalone := testclient.At(t, srv.Addr(), respire.Options{})
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	clustered := testclient.New(t, respire.Options{Addrs: cl.Seeds()[:2], Cluster: true})

	spread := clusterserver.SampleKeys(depth, "typed-alloc:")
	one := make([]string, depth)
	for i := range one {
		one[i] = strings.Clone(spread[0])
	}
	for _, c := range []*respire.Client{standalone, clustered} {
		for _, k := range spread {
			if _, err := c.Do(ctx, "SET", k, val); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, tc := range []struct {
		name string
		c    *respire.Client
		keys []string
	}{
		{"standalone", standalone, one},
		{"cluster one node", clustered, one},
		{"cluster three nodes", clustered, spread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replies := make([]cmds.Reply[string], depth)
			check := func(err error) {
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range replies {
					if s, err := r.Result(); err != nil || s != val {
						t.Fatalf("GET %s: %q %v", tc.keys[i], s, err)
					}
				}
			}
			typedReused, rawReused := cmds.NewPipeline(tc.c), tc.c.Pipeline()
			runs := []struct {
				how        string
				typed, raw func()
			}{
				{"fresh pipeline", func() {
					p := cmds.NewPipeline(tc.c)
					for i, k := range tc.keys {
						replies[i] = cmds.Get(k).In(p)
					}
					check(p.Exec(ctx))
				}, func() {
					p := tc.c.Pipeline()
					for _, k := range tc.keys {
						p.Do("GET", k)
					}
					if _, err := p.Exec(ctx); err != nil {
						t.Fatal(err)
					}
				}},
				{"reused pipeline", func() {
					for i, k := range tc.keys {
						replies[i] = cmds.Get(k).In(typedReused)
					}
					check(typedReused.Exec(ctx))
				}, func() {
					for _, k := range tc.keys {
						rawReused.Do("GET", k)
					}
					if _, err := rawReused.Exec(ctx); err != nil {
						t.Fatal(err)
					}
				}},
			}
			for _, run := range runs {
				run.typed()
				run.raw()
				typed, raw := testing.AllocsPerRun(50, run.typed), testing.AllocsPerRun(50, run.raw)
				t.Logf("%s: typed %.0f, Client.Pipeline %.0f allocations per batch of %d", run.how, typed, raw, depth)
				// The typed pipeline is the untyped one with its own Pipeline around it:
				// one allocation more when made afresh, none per command.
				if budget := raw + 1; typed > budget {
					t.Errorf("%s: typed %.0f allocations per batch of %d, budget %.0f (Client.Pipeline's %.0f and one)",
						run.how, typed, depth, budget, raw)
				}
			}
		})
	}
}
