package integration

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/respire/respire"
)

// 64 goroutines writing 1 KiB values make batches larger than the writer's 64 KiB
// bound (the commands held during a burst leave together): the connection keeps the
// buffers those batches grow, instead of dropping one after a smaller batch and
// allocating it again, about 1 KB a SET before. Bytes, not counts: a buffer is one
// allocation every few hundred SETs, a count that rounds to nothing.
func TestParallelSetKeepsItsWriteBuffers(t *testing.T) {
	c := allocClient(t, respire.Options{})
	ctx := context.Background()
	val := strings.Repeat("x", 1024)
	r := testing.Benchmark(func(b *testing.B) {
		b.SetParallelism(max(64/runtime.GOMAXPROCS(0), 1)) // 64 goroutines, as respbench's set-par
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Do(ctx, "SET", "alloc:parallel", val); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	if r.N == 0 {
		t.Fatal("the benchmark did not run")
	}
	if got := r.AllocedBytesPerOp(); got > 256 {
		t.Errorf("a parallel SET of 1 KiB allocates %d B, want at most 256 (its write buffers reused)", got)
	}
}
