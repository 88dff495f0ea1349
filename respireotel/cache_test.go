package respireotel

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/testkit"
)

// A cached read misses, then hits; a write by another connection invalidates the key.
func TestCacheEvents(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	const key = "otel:cached"
	if _, err := c.Do(ctx, "SET", key, "v1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if v, err := c.DoCached(ctx, time.Minute, "GET", key); err != nil || !isText(v, "v1") {
			t.Fatalf("DoCached: %v %v", v, err)
		}
	}
	if hits, misses := h.sum(t, "respire.cache.hits"), h.sum(t, "respire.cache.misses"); hits != 1 || misses != 1 {
		t.Errorf("%d hits and %d misses, want 1 and 1", hits, misses)
	}
	srv.Do(t, "SET", key, "v2")
	testkit.WaitWithin(t, 5*time.Second, "the invalidation", func() bool {
		return h.sum(t, "respire.cache.invalidations") >= 1
	})
}
