package route

import (
	"context"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// An observer costs the routers' data paths no allocation: a command, a batch and a
// dedicated checkout allocate as often with an observer that embeds observe.Base as
// with none.
func TestObserverAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	ctx := context.Background()
	routers := []struct {
		name string
		open func(Options) (*Router, error)
	}{
		{"standalone", func(o Options) (*Router, error) { return NewStandalone(srv.Addr(), o) }},
		{"cluster", func(o Options) (*Router, error) { return NewCluster(ctx, cl.Seeds(), o) }},
	}
	args := []any{"SET", "alloc:k", "v"}
	info, _ := command.LookupArgs(args)
	set := &Cmd{Args: args, Info: info}
	for _, rt := range routers {
		t.Run(rt.name, func(t *testing.T) {
			var allocs [2]map[string]float64
			for i, obs := range []observe.Observer{nil, struct{ observe.Base }{}} {
				r, err := rt.open(Options{Conn: conn.Options{Observer: obs}, PoolSize: 2})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				slot := r.KeySlot("", "alloc:k")
				runs := map[string]func(){
					"Do": func() { r.Do(ctx, set, &Call{}) },
					"Dedicated": func() {
						if cn, err := r.Dedicated(ctx, Slot(slot)); err == nil {
							r.Release(cn, true)
						}
					},
					"batch": func() {
						p := r.NewPlan()
						for range 10 {
							p.Add(info, "", nil, args)
						}
						r.DoPlan(ctx, p)
					},
				}
				allocs[i] = map[string]float64{}
				for name, run := range runs {
					run() // connections dialled, pools filled
					allocs[i][name] = testing.AllocsPerRun(100, run)
				}
			}
			for name, without := range allocs[0] {
				if with := allocs[1][name]; with > without {
					t.Errorf("%s allocates %.1f times with an observer, %.1f without", name, with, without)
				}
			}
			t.Logf("allocations without an observer %v, with one %v", allocs[0], allocs[1])
		})
	}
}
