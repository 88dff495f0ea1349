package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// The hot path's allocation budget: nothing per SET, the returned value per GET, and
// nothing per pipelined command beyond its reply. Counts, unlike timings, are exact.
func TestSteadyStateAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	for _, prefix := range []string{"", "tenant:"} {
		c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix})
		ctx := context.Background()
		key, val := "alloc:key", strings.Repeat("v", 1024)
		if _, err := c.Do(ctx, "SET", key, val); err != nil {
			t.Fatal(err)
		}
		// A context that can be cancelled, reused from call to call as a worker's is:
		// the connection registers its watcher once (conn/watch.go).
		cancellable, cancel := context.WithCancel(ctx)
		defer cancel()
		for _, cx := range []struct {
			name string
			ctx  context.Context
		}{{"background", ctx}, {"cancellable", cancellable}} {
			cases := []struct {
				name string
				max  float64
				fn   func()
			}{
				{"SET", 0, func() { c.Do(cx.ctx, "SET", key, val) }},
				{"GET", 1, func() { c.Do(cx.ctx, "GET", key) }},
				{"INCR", 0, func() { c.Do(cx.ctx, "INCR", "alloc:n") }},
			}
			for _, tc := range cases {
				if got := testing.AllocsPerRun(200, tc.fn); got > tc.max {
					t.Errorf("prefix %q, %s context: %s allocates %.1f times per call, budget %.0f",
						prefix, cx.name, tc.name, got, tc.max)
				}
			}
		}
		cmds := make([][]any, 100)
		for i := range cmds {
			cmds[i] = []any{"GET", key}
		}
		if prefix == "" {
			// 100 replies, plus the batch's result slice and its reply buffer.
			if got := testing.AllocsPerRun(50, func() { c.DoMulti(ctx, cmds...) }); got > 102 {
				t.Errorf("pipeline of 100 GETs allocates %.0f times, budget 102", got)
			}
		}
	}
}

// Adding commands to a reused pipeline allocates nothing; Exec allocates its results.
func TestPipelineAllocations(t *testing.T) {
	c := allocClient(t, respire.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := "alloc:pipe"
	p := c.Pipeline()
	run := func() {
		for range 100 {
			p.Do("GET", key)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if got := testing.AllocsPerRun(50, run); got > 3 {
		t.Errorf("a pipeline of 100 GETs allocates %.1f times, budget 3 (results, not per command)", got)
	}
}

// A hit of the client-side cache allocates nothing, whatever the key's type.
func TestCachedHitAllocations(t *testing.T) {
	c := allocClient(t, respire.Options{ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	key := strings.Repeat("k", 10) // not a constant: its conversion to any may allocate
	if _, err := c.Do(ctx, "SET", key, "v"); err != nil {
		t.Fatal(err)
	}
	bkey := []byte(key)
	for _, args := range [][]any{{"GET", key}, {"GET", bkey}} {
		if _, err := c.DoCached(ctx, time.Minute, args...); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(200, func() { c.DoCached(ctx, time.Minute, "GET", key) }); n != 0 {
		t.Errorf("a hit with a string key allocates %.1f times", n)
	}
	if n := testing.AllocsPerRun(200, func() { c.DoCached(ctx, time.Minute, "GET", bkey) }); n != 0 {
		t.Errorf("a hit with a []byte key allocates %.1f times", n)
	}
	if st := c.CacheStats(); st.Misses != 1 {
		t.Errorf("stats: %+v; want one miss (string and []byte keys share the entry)", st)
	}
}

// A script's EVALSHA allocates nothing of its own: not its argument list, not the
// boxes of its keys and arguments (a token, a TTL in milliseconds), which coordination
// sends on every acquisition and release.
func TestScriptAllocations(t *testing.T) {
	c := allocClient(t, respire.Options{})
	ctx := context.Background()
	s := respire.NewScript("return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])")
	keys := []string{"alloc:script"}
	token, ms := strings.Repeat("t", 32), int64(60000)
	if _, err := s.Run(ctx, c, keys, token, ms); err != nil {
		t.Fatal(err)
	}
	if got := testing.AllocsPerRun(200, func() { s.Run(ctx, c, keys, token, ms) }); got > 0 {
		t.Errorf("Script.Run allocates %.1f times per call, budget 0", got)
	}
}

// allocClient is a client of a server of its own, for an allocation test: skipped under
// the race detector, which allocates on its own. o's Addrs is set to the server's.
func allocClient(t *testing.T, o respire.Options) *respire.Client {
	t.Helper()
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	o.Addrs = []string{testserver.Start(t, testserver.Config{}).Addr()}
	return testclient.New(t, o)
}
