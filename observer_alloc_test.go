package respire

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// noopObserver is an Observer that does nothing: what the client itself costs when it
// reports events.
type noopObserver struct{ observe.Base }

// An observer adds no allocation to a command or a batch: the events are built on the
// stack, named from the command table, and passed by value.
func TestObserverAllocations(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: &noopObserver{}, ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	// Not constants: their conversions to any would allocate if an event kept them.
	key, val := strings.Repeat("k", 10), strings.Repeat("v", 1024)
	if _, err := c.Do(ctx, "SET", key, val); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DoCached(ctx, time.Minute, "GET", key); err != nil {
		t.Fatal(err)
	}
	cmds := make([][]any, 100)
	for i := range cmds {
		cmds[i] = []any{"GET", key}
	}
	p := c.Pipeline()
	cases := []struct {
		name string
		max  float64 // the budget without an observer (alloc_test.go)
		fn   func()
	}{
		{"SET", 0, func() { c.Do(ctx, "SET", key, val) }},
		{"GET", 1, func() { c.Do(ctx, "GET", key) }},
		{"INCR", 0, func() { c.Do(ctx, "INCR", "alloc:n") }},
		{"DoCached hit", 0, func() { c.DoCached(ctx, time.Minute, "GET", key) }},
		// 100 replies, plus the batch's result slice and its reply buffer.
		{"DoMulti of 100 GETs", 102, func() { c.DoMulti(ctx, cmds...) }},
		{"Pipeline of 100 GETs", 102, func() {
			for range 100 {
				p.Do("GET", key)
			}
			p.Exec(ctx)
		}},
	}
	for _, tc := range cases {
		if got := testing.AllocsPerRun(100, tc.fn); got > tc.max {
			t.Errorf("with an observer, %s allocates %.1f times per call, budget %.0f", tc.name, got, tc.max)
		}
	}
}
