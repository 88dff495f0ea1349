package coordination

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// TestCrossSlotPairErrorText: a fenced-lock pair in different slots on a standalone
// server is refused with a text that says so once, and names the prefix only when
// there is one; the error still matches both cross-slot sentinels.
func TestCrossSlotPairErrorText(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	lease, fence := "lease-a", "fence-b"
	for _, prefix := range []string{"", "app:"} {
		co := New(testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix}))
		_, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Second)
		with := ""
		if prefix != "" {
			with = fmt.Sprintf(" with the key prefix %q", prefix)
		}
		want := fmt.Sprintf(`coordination: keys in different cluster slots: lease key "lease-a" is in slot %d and fence key "fence-b" in slot %d%s; give both one {hash tag}`,
			cluster.PrefixedSlot(prefix, lease), cluster.PrefixedSlot(prefix, fence), with)
		if ok || err == nil || err.Error() != want {
			t.Errorf("prefix %q: %v, %v\nwant %s", prefix, ok, err, want)
		}
		if !errors.Is(err, ErrCrossSlot) || !errors.Is(err, respire.ErrCrossSlot) {
			t.Errorf("prefix %q: %v matches ErrCrossSlot %v, respire.ErrCrossSlot %v", prefix, err,
				errors.Is(err, ErrCrossSlot), errors.Is(err, respire.ErrCrossSlot))
		}
	}
}
