package cmds

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/respire/respire"
)

// TestExpireZeroIsNoExpiration checks that Expire(0) sends no expiration, as go-redis's
// Set(ctx, key, value, 0) does: the server refuses EX 0, and a go-redis user porting
// a call with expiration 0 means a key that does not expire.
func TestExpireZeroIsNoExpiration(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := Set("ez:k", "v").Expire(time.Minute).Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := Set("ez:k", "v").Expire(0).Do(ctx, c); err != nil {
			t.Fatalf("SET with Expire(0): %v", err)
		}
		if ttl, err := TTL("ez:k").Do(ctx, c); err != nil || ttl != -1 {
			t.Errorf("TTL after SET with Expire(0): %d, %v; want -1 (no expiration)", ttl, err)
		}
		// The last method of the group wins: Expire(0) undoes KeepTTL.
		if got, want := Set("ez:k", "v").KeepTTL().Expire(0).Args(), []any{"SET", "ez:k", "v"}; !slices.Equal(got, want) {
			t.Errorf("KeepTTL().Expire(0) sends %v, want %v", got, want)
		}
	})
}
