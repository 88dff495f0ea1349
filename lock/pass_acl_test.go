package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// A pass whose outcome is unknown and which cannot be cut off (the user may not run
// CLIENT KILL) must not leave the waiter's token in the key, held by nobody, when it
// runs late: the release gives that token back behind it, on the connection that
// carried it. The lock connection is held up on the server by a BLPOP sent ahead of
// the pass, so that the pass runs only once the test unblocks it, after anything sent
// on another connection. Before, the waiter gave the token back on the shared
// connection, which ran first, found the releasing token and left the key to the
// late pass: it held the waiter's token until its TTL.
func TestUncertainPassWithoutClientKill(t *testing.T) {
	srv := testserver.StartGeneration(t, testserver.Redis86, testserver.Config{Users: []testserver.User{
		{Name: "nokill", Password: "pw", Rules: []string{"+@all", "-client|kill", "~*"}},
	}})
	// No reply timeout: the lock connection is blocked while the pass is in flight.
	locks := New(testclient.At(t, srv.Addr(), respire.Options{Username: "nokill", Password: "pw", ReadTimeout: -1}))
	ctx := context.Background()
	const key = "locks:nokill"

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The lock connection is dialled, and knows SET ... IFEQ, before it is blocked.
	if ok, err := held.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	wctx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	got := waitFor(wctx, locks, key, time.Minute)
	asleep(t, locks, key, 1)
	locks.handoff.mu.Lock()
	offered := locks.handoff.waiting[key][0].offer.Token()
	locks.handoff.mu.Unlock()

	block := blockLockLane(t, srv, locks, key)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	released := make(chan error, 1)
	go func() {
		_, err := held.Release(rctx)
		released <- err
	}()
	testkit.WaitFor(t, "the pass to wait behind the BLPOP", func() bool {
		return locks.handoff.waiters(key) == 0 && block.queued(t)
	})
	cancel()
	if err := <-released; !errors.Is(err, ErrOwnershipUncertain) {
		t.Fatalf("the cancelled release: %v, want ownership uncertain", err)
	}
	// The waiter learned what became of its offer, and sleeps again.
	asleep(t, locks, key, 1)
	block.unblock(t)
	owner := srv.Do(t, "GET", key)
	select {
	case a := <-got:
		if a.err != nil || !a.ok || owner != a.mu.Token().b {
			t.Fatalf("the waiter: %v %v, the key %q", a.ok, a.err, owner)
		}
		return
	default:
	}
	if srv.Do(t, "EXISTS", key) != "0" {
		t.Fatalf("the key holds %q (offered %q), held by nobody", owner, offered.b)
	}
	stopWaiting()
	if a := <-got; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the waiter: %v %v", a.ok, a.err)
	}
}
