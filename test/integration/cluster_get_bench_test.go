//go:build unix

package integration

import (
	"context"
	"runtime"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkGetParallel64 is respbench's get-par as a Go benchmark: 64 goroutines GET
// one key, on a standalone server and on a 3-master Cluster (where the key is one
// node's), so that what the Cluster's routing adds per command shows as the
// difference between the two: in allocations and in the client's CPU per GET.
func BenchmarkGetParallel64(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, c *respire.Client) {
		if _, err := c.Do(ctx, "SET", "bench:key", "0123456789abcdef"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.SetParallelism(64 / runtime.GOMAXPROCS(0))
		cpu0 := processCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Do(ctx, "GET", "bench:key"); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		// The servers are processes of their own: this is the client's CPU.
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("standalone", func(b *testing.B) {
		srv := testserver.Start(b, testserver.Config{})
		run(b, openBench(b, respire.Options{Addrs: []string{srv.Addr()}}))
	})
	b.Run("cluster", func(b *testing.B) {
		cl := clusterserver.Start(b, clusterserver.Config{NoReplicas: true})
		run(b, openBench(b, respire.Options{Addrs: cl.Seeds(), Cluster: true}))
	})
}
