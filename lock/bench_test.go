package lock

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/testserver"
)

// BenchmarkAcquireRelease is respbench's lock scenario in miniature: goroutines taking
// and releasing locks on distinct keys, on Redis 7 (the release script) and on the
// emulator's Redis 8.4 (DELEX), beside the same commands sent by plain Do ("commands":
// a constant token, no handle), the limit the lock is read against. benchstat the
// pairs; the per-op CPU of the process is what the lock logic adds.
func BenchmarkAcquireRelease(b *testing.B) {
	forBenchServers(b, func(p emulator.Profile, name string, c *respire.Client) {
		b.Run(name+"/lock", func(b *testing.B) { benchCycles(b, lockCycle(New(c))) })
		b.Run(name+"/commands", func(b *testing.B) { benchCycles(b, commandCycle(b, c, p == "", false)) })
		b.Run(name+"/commands-split", func(b *testing.B) { benchCycles(b, commandCycle(b, c, p == "", true)) })
	})
}

// forBenchServers runs fn with a client of Redis 7 (profile "", named redis7) and one
// of the emulator's Redis 8.4 in front of it.
func forBenchServers(b *testing.B, fn func(p emulator.Profile, name string, c *respire.Client)) {
	for _, p := range []emulator.Profile{"", emulator.Redis84} {
		srv := testserver.Start(b, testserver.Config{})
		addr, name := srv.Addr(), "redis7"
		if p != "" {
			addr, name = emulator.Start(b, emulator.Config{Backend: srv.Addr(), Profile: p}).Addr(), string(p)
		}
		c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{addr}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		fn(p, name, c)
	}
}

// benchCycles runs cycle on 16 goroutines (2 CPUs × 8), each on its own key.
func benchCycles(b *testing.B, cycle func(ctx context.Context, key string) error) {
	var id atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("bench:lock:%d", id.Add(1))
		for pb.Next() {
			if err := cycle(context.Background(), key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func lockCycle(locks *Locker) func(ctx context.Context, key string) error {
	return func(ctx context.Context, key string) error {
		mu, ok, err := locks.TryAcquire(ctx, key, 10*time.Second)
		if err != nil || !ok {
			return fmt.Errorf("acquire: %v %w", ok, err)
		}
		out, err := mu.Release(ctx)
		if err != nil || out != Released {
			return fmt.Errorf("release: %v %w", out, err)
		}
		return nil
	}
}

// commandCycle is the lock's SET NX PX and its release (the script on Redis 7, DELEX
// otherwise) by plain Do; split sends the release on the lock connection, as the lock
// does, which measures what splitting a cycle over two connections costs.
func commandCycle(b *testing.B, c *respire.Client, script, split bool) func(ctx context.Context, key string) error {
	const token = "0123456789abcdef0123456789abcdef"
	sha, _ := releaseScript.Local()
	if script {
		if _, err := c.Do(context.Background(), "SCRIPT", "LOAD", releaseScript.Source()); err != nil {
			b.Fatal(err)
		}
	}
	return func(ctx context.Context, key string) error {
		if _, err := c.Do(ctx, "SET", key, token, "NX", "PX", int64(10000)); err != nil {
			return err
		}
		args := []any{"DELEX", key, "IFEQ", token}
		if script {
			args = []any{"EVALSHA", sha, 1, key, token}
		}
		if !split {
			_, err := c.Do(ctx, args...)
			return err
		}
		cn, err := link.Of(c).Conn(ctx, route.LockLane, key)
		if err == nil {
			_, _, err = link.Of(c).Do(ctx, cn, route.LockLane, conn.CallOptions{}, args...)
		}
		return err
	}
}

// BenchmarkHandoff is respbench's lock-contended scenario in miniature: 16 goroutines
// of one Locker taking turns on one key, waiting with WithRetryEvery(1ms); an op is
// one acquisition and its release, so ns/op is the time a hand-off takes: the release's
// delete (the script on Redis 7, DELEX on the emulator's Redis 8.4), then the woken
// waiter's SET NX.
func BenchmarkHandoff(b *testing.B) {
	forBenchServers(b, func(_ emulator.Profile, name string, c *respire.Client) {
		locks := New(c)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					mu, ok, err := locks.TryAcquire(ctx, "bench:handoff", 10*time.Second, WithWait(10*time.Second), WithRetryEvery(time.Millisecond))
					if err != nil || !ok {
						b.Errorf("acquire: %v %v", ok, err)
						return
					}
					if out, err := mu.Release(ctx); err != nil || out != Released {
						b.Errorf("release: %v %v", out, err)
						return
					}
				}
			})
		})
	})
}
