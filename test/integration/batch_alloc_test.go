package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire"
)

// A big batch to one server is copied once, into the connection's write buffer: a
// 2 MiB SET by DoMulti or by a reused Pipeline costs about its size in bytes, and a
// handful of allocations, not a plan that is encoded, copied and dropped each time.
func TestBigBatchAllocations(t *testing.T) {
	c := allocClient(t, respire.Options{})
	ctx := context.Background()
	val := strings.Repeat("x", 2<<20)
	cmds := [][]any{{"SET", "alloc:big", val}, {"GET", "alloc:key"}}
	p := c.Pipeline()
	cases := []struct {
		name      string
		maxBytes  int64
		maxAllocs int64
		run       func() error
	}{
		{"DoMulti", 5 << 19, 8, func() error { _, err := c.DoMulti(ctx, cmds...); return err }},
		{"reused Pipeline", 5 << 19, 4, func() error {
			p.Do("SET", "alloc:big", val).Do("GET", "alloc:key")
			_, err := p.Exec(ctx)
			return err
		}},
	}
	for _, tc := range cases {
		if err := tc.run(); err != nil {
			t.Fatal(err)
		}
		var runErr error
		r := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := tc.run(); err != nil {
					runErr = err
					return
				}
			}
		})
		if runErr != nil {
			t.Fatal(runErr)
		}
		t.Logf("%s: %d B/op, %d allocs/op", tc.name, r.AllocedBytesPerOp(), r.AllocsPerOp())
		if got := r.AllocedBytesPerOp(); got > tc.maxBytes {
			t.Errorf("a 2 MiB %s allocates %d bytes, budget %d (one copy of the batch)", tc.name, got, tc.maxBytes)
		}
		if got := r.AllocsPerOp(); got > tc.maxAllocs {
			t.Errorf("a 2 MiB %s allocates %d times, budget %d", tc.name, got, tc.maxAllocs)
		}
	}
}
