//go:build unix

package cmds_test

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/cmds"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// The benchmarks of this file call the typed commands from another package, as every
// user does: the compiler inlines and analyses a call from outside package cmds
// differently from one inside it. Each runs a command typed and by Client.Do on the
// same client, standalone and on a Cluster of three masters, so that their client
// CPU per command (cpu-ns/op) and allocations compare directly.

// callerParallelism is how many goroutines per CPU the parallel benchmarks run, 64 on
// two CPUs as respbench's get-par.
const callerParallelism = 32

// callerClients returns a standalone client and a Cluster client, each with key set to
// a 16-byte value.
func callerClients(b *testing.B, key string) map[string]*respire.Client {
	srv := testserver.Start(b, testserver.Config{})
	cl := clusterserver.Start(b, clusterserver.Config{NoReplicas: true})
	clients := map[string]*respire.Client{
		"standalone": testclient.At(b, srv.Addr(), respire.Options{}),
		"cluster":    testclient.New(b, respire.Options{Addrs: cl.Seeds()[:2], Cluster: true}),
	}
	for _, c := range clients {
		if _, err := c.Do(context.Background(), "SET", key, strings.Repeat("v", 16)); err != nil {
			b.Fatal(err)
		}
	}
	return clients
}

func BenchmarkCallerGet(b *testing.B) {
	key := strings.Clone("bench:key")
	clients := callerClients(b, key)
	ctx := context.Background()
	for _, deployment := range []string{"standalone", "cluster"} {
		c := clients[deployment]
		for _, par := range []bool{false, true} {
			name := deployment + "/sequential"
			if par {
				name = deployment + "/parallel"
			}
			b.Run(name+"/typed", func(b *testing.B) {
				callerLoop(b, par, func() error {
					_, err := cmds.Get(key).Do(ctx, c)
					return err
				})
			})
			b.Run(name+"/Do", func(b *testing.B) {
				callerLoop(b, par, func() error {
					v, err := c.Do(ctx, "GET", key)
					if err != nil {
						return err
					}
					_, err = v.Text()
					return err
				})
			})
		}
	}
}

func BenchmarkCallerPipelineGet(b *testing.B) {
	const depth = 100
	clients := callerClients(b, "bench:key")
	keys := clusterserver.SampleKeys(depth, "bench:")
	ctx := context.Background()
	for _, deployment := range []string{"standalone", "cluster"} {
		c := clients[deployment]
		for _, k := range keys {
			if _, err := c.Do(ctx, "SET", k, strings.Repeat("v", 16)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(deployment+"/typed", func(b *testing.B) {
			replies := make([]cmds.Reply[string], depth)
			callerLoop(b, false, func() error {
				p := cmds.NewPipeline(c)
				for i, k := range keys {
					replies[i] = cmds.Get(k).In(p)
				}
				if err := p.Exec(ctx); err != nil {
					return err
				}
				for _, r := range replies {
					if _, err := r.Result(); err != nil {
						return err
					}
				}
				return nil
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/cmd")
		})
		b.Run(deployment+"/Do", func(b *testing.B) {
			callerLoop(b, false, func() error {
				p := c.Pipeline()
				for _, k := range keys {
					p.Do("GET", k)
				}
				res, err := p.Exec(ctx)
				if err != nil {
					return err
				}
				for _, r := range res {
					if r.Err != nil {
						return r.Err
					}
					if _, err := r.Value.Text(); err != nil {
						return err
					}
				}
				return nil
			})
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/cmd")
		})
	}
}

// callerLoop runs call b.N times, from callerParallelism goroutines per CPU when
// parallel, reporting allocations and the client's CPU per call.
func callerLoop(b *testing.B, parallel bool, call func() error) {
	b.ReportAllocs()
	defer cmds.CPUPerOp(b)()
	if !parallel {
		for b.Loop() {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism(callerParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
