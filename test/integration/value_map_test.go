package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// TestValueMapReadsServerPairs checks Value.Map on the replies a real server gives in
// both protocols: pairs (RESP3's ZRANGE WITHSCORES and HRANDFIELD WITHVALUES), flat
// arrays (RESP2) and maps, and that a reply with no map shape is refused rather than
// read into invented keys.
func TestValueMapReadsServerPairs(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, srv, respire.Options{}, func(t *testing.T, c *respire.Client) {
		ctx := context.Background()
		for _, args := range [][]any{
			{"DEL", "z", "h", "l"},
			{"ZADD", "z", 1.5, "a", 2, "b"},
			{"HSET", "h", "f", "v"},
			{"RPUSH", "l", "x", "y", "z"},
		} {
			if _, err := c.Do(ctx, args...); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
		for _, tc := range []struct {
			args []any
			want map[string]any // float64 for scores, string for text
		}{
			{[]any{"ZRANGE", "z", 0, -1, "WITHSCORES"}, map[string]any{"a": 1.5, "b": 2.0}},
			{[]any{"HRANDFIELD", "h", 1, "WITHVALUES"}, map[string]any{"f": "v"}},
			{[]any{"HGETALL", "h"}, map[string]any{"f": "v"}},
		} {
			v, err := c.Do(ctx, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			m, err := v.Map()
			if err != nil || len(m) != len(tc.want) {
				t.Fatalf("%v: Map() of %s = %v, %v; want %v", tc.args, v, m, err, tc.want)
			}
			for k, want := range tc.want {
				got, ok := m[k]
				var match bool
				switch want := want.(type) {
				case float64:
					f, err := got.Float()
					match = err == nil && f == want
				case string:
					s, err := got.Text()
					match = err == nil && s == want
				}
				if !ok || !match {
					t.Fatalf("%v: Map()[%q] = %s, want %v (map %v)", tc.args, k, got, want, m)
				}
			}
		}
		v, err := c.Do(ctx, "LRANGE", "l", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		var te *resp.TypeError
		if m, err := v.Map(); !errors.As(err, &te) {
			t.Fatalf("Map() of a three-element list = %v, %v; want a *resp.TypeError", m, err)
		}
	})
}
