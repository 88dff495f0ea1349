package lock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkAcquireRelease is respbench's lock scenario in miniature: goroutines taking
// and releasing locks on distinct keys.
func BenchmarkAcquireRelease(b *testing.B) {
	srv := testserver.Start(b, testserver.Config{})
	c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	locks := New(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("bench:lock:%d", id.Add(1))
		for pb.Next() {
			mu, ok, err := locks.TryAcquire(ctx, key, 10*time.Second)
			if err != nil || !ok {
				b.Error(ok, err)
				return
			}
			if _, err := mu.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
