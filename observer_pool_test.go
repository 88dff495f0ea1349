package respire

import (
	"context"
	"testing"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/testserver"
)

// A checkout of a dedicated connection that waits for the pool is one PoolWait, with
// the server's address; one that does not wait is none.
func TestObserverPoolWait(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Observer: rec, PoolSize: 1})
	ctx := context.Background()
	_, release, err := c.Dedicated(ctx, "obs:k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, release, err := c.Dedicated(ctx, "obs:k")
		if err == nil {
			release(true)
		}
		got <- err
	}()
	testkit.WaitFor(t, "the second checkout to wait", func() bool { return c.PoolStats().Waiters == 1 })
	release(true)
	if err := <-got; err != nil {
		t.Fatalf("second checkout: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.waits) != 1 || rec.waits[0].Addr != srv.Addr() || rec.waits[0].Err != nil || rec.waits[0].Wait <= 0 {
		t.Errorf("PoolWait events %+v, want one from %s without error", rec.waits, srv.Addr())
	}
}
