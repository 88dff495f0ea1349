package cmds

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTypedAllocations checks that a typed command allocates no more than the same
// command by Client.Do: its arguments stay on the caller's stack.
func TestTypedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	c, ctx := benchClient(t), context.Background()
	// Keys and values made at run time: a constant would be sent from static data
	// and hide an allocation of its interface value.
	key, hkey, nkey := strings.Clone("bench:key"), strings.Clone("bench:hash"), strings.Clone("bench:n")
	field, val := strings.Clone("f"), strings.Repeat("v", 16)
	p := NewPipeline(c)
	raw := c.Pipeline()
	for _, tc := range []struct {
		name      string
		typed, do func()
	}{
		{"GET", func() { Get(key).Do(ctx, c) }, func() { v, _ := c.Do(ctx, "GET", key); v.Text() }},
		{"SET", func() { Set(key, val).Do(ctx, c) }, func() { v, _ := c.Do(ctx, "SET", key, val); v.Text() }},
		{"SET EX", func() { Set(key, val).Expire(time.Minute).Do(ctx, c) }, func() { v, _ := c.Do(ctx, "SET", key, val, "EX", 60); v.Text() }},
		{"HGET", func() { HGet(hkey, field).Do(ctx, c) }, func() { v, _ := c.Do(ctx, "HGET", hkey, field); v.Text() }},
		{"INCR", func() { Incr(nkey).Do(ctx, c) }, func() { v, _ := c.Do(ctx, "INCR", nkey); v.Int() }},
		{"pipelined GET", func() {
			r := Get(key).In(p)
			p.Exec(ctx)
			r.Result()
		}, func() {
			raw.Do("GET", key)
			res, _ := raw.Exec(ctx)
			res[0].Value.Text()
		}},
	} {
		typed, do := testing.AllocsPerRun(200, tc.typed), testing.AllocsPerRun(200, tc.do)
		if typed > do {
			t.Errorf("%s: typed allocates %.1f times, Client.Do %.1f", tc.name, typed, do)
		}
	}
}
