//go:build unix

package cmds

import (
	"context"
	"slices"
	"testing"

	"github.com/respire/respire"
)

// A one-of choice whose specification gives it a keyword of its own (ZUNION's
// AGGREGATE, CLIENT LIST's TYPE and SKIPME, COMMAND LIST's FILTERBY) sends that keyword
// before the alternative chosen; without it the server answers a syntax error.
func TestChoiceKeywordIsSent(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		for _, args := range [][]any{{"DEL", "ck:z1", "ck:z2"}, {"ZADD", "ck:z1", 1, "a", 5, "b"}, {"ZADD", "ck:z2", 3, "a"}} {
			if _, err := c.Do(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := ZUnion("ck:z1", "ck:z2").Max().Args(), []any{"ZUNION", int64(2), "ck:z1", "ck:z2", "AGGREGATE", "MAX"}; !slices.Equal(got, want) {
			t.Fatalf("ZUNION ... MAX args %v, want %v", got, want)
		}
		n, err := ZUnionStore("ck:zd", "ck:z1", "ck:z2").Max().Do(ctx, c)
		if err != nil || n != 2 {
			t.Fatalf("ZUNIONSTORE AGGREGATE MAX: %v %v", n, err)
		}
		if score, err := ZScore("ck:zd", "a").Do(ctx, c); err != nil || score != 3 {
			t.Fatalf("the max of a's scores: %v %v, want 3", score, err)
		}
		if _, err := ZInterStore("ck:zi", "ck:z1", "ck:z2").Min().Do(ctx, c); err != nil {
			t.Fatalf("ZINTERSTORE AGGREGATE MIN: %v", err)
		}
		if _, err := ClientList().Normal().Do(ctx, c); err != nil {
			t.Fatalf("CLIENT LIST TYPE normal: %v", err)
		}
		if _, err := CommandList().Pattern("get*").Do(ctx, c); err != nil {
			t.Fatalf("COMMAND LIST FILTERBY PATTERN: %v", err)
		}
	})
}
