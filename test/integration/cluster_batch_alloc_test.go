package integration

import (
	"context"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/clusterserver"
)

// A Cluster pipeline costs per command what a standalone one does, plus the slot: the
// replies, and per batch its results and a goroutine for each node beyond the first.
// Planning, splitting and merging allocate nothing. Counts, unlike timings, are exact.
func TestClusterPipelineAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const depth = 100
	for _, prefix := range []string{"", "tenant:"} {
		c := clusterClient(t, cl, respire.Options{KeyPrefix: prefix})
		spread := clusterserver.SampleKeys(depth, "alloc:")
		for _, k := range spread {
			if _, err := c.Do(ctx, "SET", k, "0123456789abcdef"); err != nil {
				t.Fatal(err)
			}
		}
		one := make([]string, depth)
		for i := range one {
			one[i] = spread[0]
		}
		reused := c.Pipeline()
		for _, tc := range []struct {
			name string
			keys []string
			// budget is for the whole batch of depth commands.
			budget float64
		}{
			// The results (1), and room for a chunk of reply space now and then.
			{"one node", one, 2},
			// Three parts' results, the merged results, the goroutines of two parts
			// (6), and room for reply space.
			{"three nodes", spread, 8},
		} {
			cmds := make([][]any, depth)
			for i, k := range tc.keys {
				cmds[i] = []any{"GET", k}
			}
			check := func(res []respire.Result, err error) {
				if err != nil || len(res) != depth {
					t.Fatalf("%d results, %v", len(res), err)
				}
				for i, r := range res {
					if s, _ := r.Value.Text(); r.Err != nil || s != "0123456789abcdef" {
						t.Fatalf("GET %s: %v %v", tc.keys[i], r.Value, r.Err)
					}
				}
			}
			runs := []struct {
				how string
				fn  func()
			}{
				{"fresh Pipeline", func() {
					p := c.Pipeline()
					for _, k := range tc.keys {
						p.Do("GET", k)
					}
					check(p.Exec(ctx))
				}},
				{"reused Pipeline", func() {
					for _, k := range tc.keys {
						reused.Do("GET", k)
					}
					check(reused.Exec(ctx))
				}},
				{"DoMulti", func() { check(c.DoMulti(ctx, cmds...)) }},
			}
			for _, run := range runs {
				run.fn()
				got := testing.AllocsPerRun(100, run.fn)
				t.Logf("prefix %q, %s, %s: %.2f allocations per batch of %d", prefix, tc.name, run.how, got, depth)
				if got > tc.budget {
					t.Errorf("prefix %q, %s, %s: %.1f allocations per batch of %d, budget %.0f",
						prefix, tc.name, run.how, got, depth, tc.budget)
				}
			}
		}
	}
}
