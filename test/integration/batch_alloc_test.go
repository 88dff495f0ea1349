package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// A big batch to one server is copied once, into the connection's write buffer: a
// 2 MiB SET by DoMulti or by a reused Pipeline costs about its size in bytes, and a
// handful of allocations, not a plan that is encoded, copied and dropped each time.
func TestBigBatchAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
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
