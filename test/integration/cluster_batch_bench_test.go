//go:build unix

package integration

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkPipelineGet100 is respbench's pipeline scenarios as a Go benchmark: a fresh
// Pipeline of 100 GETs per batch, on a standalone server, and on a 3-master Cluster
// with one key (one node) and with keys spread over every master.
func BenchmarkPipelineGet100(b *testing.B) {
	const depth = 100
	ctx := context.Background()
	run := func(b *testing.B, c *respire.Client, keys []string) {
		for _, k := range keys {
			if _, err := c.Do(ctx, "SET", k, "0123456789abcdef"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		cpu0 := processCPU()
		for b.Loop() {
			p := c.Pipeline()
			for _, k := range keys {
				p.Do("GET", k)
			}
			if _, err := p.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*depth), "ns/cmd")
		// The servers are processes of their own: this is the client's CPU, which a
		// machine shared with other work disturbs less than the elapsed time.
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*depth), "cpu-ns/cmd")
	}
	spread := clusterserver.SampleKeys(depth, "bench:")
	one := make([]string, depth)
	for i := range one {
		one[i] = spread[0]
	}
	b.Run("standalone", func(b *testing.B) {
		srv := testserver.Start(b, testserver.Config{})
		run(b, openBench(b, respire.Options{Addrs: []string{srv.Addr()}}), one)
	})
	cl := clusterserver.Start(b, clusterserver.Config{NoReplicas: true})
	c := openBench(b, respire.Options{Addrs: cl.Seeds(), Cluster: true})
	b.Run("cluster-one-node", func(b *testing.B) { run(b, c, one) })
	b.Run("cluster-spread", func(b *testing.B) { run(b, c, spread) })
}

// openBench opens a client for a benchmark, closed when it ends.
func openBench(b *testing.B, o respire.Options) *respire.Client {
	c, err := respire.NewClient(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
