package coordination

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// tagIn returns a hash tag whose keys are in slot.
func tagIn(slot int) string {
	for i := 0; ; i++ {
		if tag := "t" + strconv.Itoa(i); cluster.Slot(tag) == slot {
			return tag
		}
	}
}

// exercise runs the fenced-lock cycle every deployment must support, checking on
// srv, the server that holds the pair, what was stored.
func exercise(t *testing.T, plain, tracked *Coordinator, srv *testserver.Server, tag string) {
	t.Helper()
	ctx := context.Background()
	lease, fence := "{"+tag+"}:lease", "{"+tag+"}:fence"
	first, ok, err := plain.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := tracked.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second); ok || err != nil {
		t.Fatal("a second owner:", ok, err)
	}
	if srv.Do(t, "GET", fence) != strconv.FormatInt(first.FencingToken(), 10) {
		t.Fatalf("the counter is not on the expected node: %q", srv.Do(t, "GET", fence))
	}
	res, err := plain.Resource("{"+tag+"}:res", "{"+tag+"}:accepted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(ctx, first.FencingToken(), "SET", "first"); err != nil {
		t.Fatal(err)
	}
	if ok, err := first.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got := startWaiter(t, srv, tracked, lease, fence)
	if out, err := first.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	var next *FencedLock
	select {
	case w := <-got:
		next = w.fl
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
	if next == nil || next.FencingToken() <= first.FencingToken() {
		t.Fatal("successor", next)
	}
	if _, err := res.Write(ctx, next.FencingToken(), "SET", "next"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(ctx, first.FencingToken(), "SET", "stale"); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("stale write: %v", err)
	}
	if srv.Do(t, "GET", "{"+tag+"}:res") != "next" {
		t.Fatal("the stale write landed")
	}
	if held, err := next.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatal(held, err)
	}
	if out, err := next.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
}

func TestFencedLocksOnCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	plain := New(testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true}))
	tracked := New(testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true, ClientSideCache: &cache.Options{}}))
	for _, slot := range []int{100, 6000, 12000} {
		t.Run("slot"+strconv.Itoa(slot), func(t *testing.T) {
			exercise(t, plain, tracked, cl.MasterOf(t, slot).Server, tagIn(slot))
		})
	}
	// On a Cluster the server would refuse the script too; the client refuses first.
	if _, _, err := plain.TryAcquireFencedLock(context.Background(), "lease-a", "fence-b", time.Second); !errors.Is(err, ErrCrossSlot) {
		t.Fatal(err)
	}
}

func TestFencedLocksOnSentinel(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: 1, Sentinels: 1})
	opts := respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName()}
	plain := New(testclient.New(t, opts))
	opts.ClientSideCache = &cache.Options{}
	tracked := New(testclient.New(t, opts))
	exercise(t, plain, tracked, d.Master(t), "sentinel")
}
