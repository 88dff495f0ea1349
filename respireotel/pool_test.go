package respireotel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
)

// With PoolSize 1, a second Dedicated waits for the first: ObservePool shows one
// connection used and one checkout pending meanwhile, the wait is a
// db.client.connection.wait_time point, and a checkout whose context ends first counts
// as a timeout. After stop the pool is no longer reported.
func TestPoolWait(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{PoolSize: 1})
	stop, err := h.obs.ObservePool(c, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pool := poolNameKey.String(srv.Addr())

	_, release, err := c.Dedicated(ctx, "otel:k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, release2, err := c.Dedicated(ctx, "otel:k")
		if err == nil {
			release2(true)
		}
		got <- err
	}()
	testkit.WaitWithin(t, 10*time.Second, "a waiting checkout", func() bool { return c.PoolStats().Waiters == 1 })
	if n := h.sum(t, "db.client.connection.count", pool, connStateKey.String("used")); n != 1 {
		t.Errorf("%d connections used, want 1", n)
	}
	if n := h.sum(t, "db.client.connection.pending_requests", pool); n != 1 {
		t.Errorf("%d checkouts pending, want 1", n)
	}
	release(true)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := h.count(t, "db.client.connection.wait_time", pool); n != 1 {
		t.Errorf("%d waits recorded, want 1", n)
	}
	if n := h.sum(t, "db.client.connection.count", pool, connStateKey.String("idle")); n != 1 {
		t.Errorf("%d connections idle after both releases, want 1", n)
	}

	_, release, err = c.Dedicated(ctx, "otel:k")
	if err != nil {
		t.Fatal(err)
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if _, _, err := c.Dedicated(tctx, "otel:k"); err == nil {
		t.Fatal("a checkout from a full pool succeeded")
	}
	cancel()
	release(true)
	if n := h.sum(t, "db.client.connection.timeouts", pool); n != 1 {
		t.Errorf("%d checkout timeouts, want 1", n)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := h.sum(t, "db.client.connection.count", pool); n != 0 {
		t.Errorf("%d connections reported after stop", n)
	}
}

// ObservePool refuses a nil client and an empty pool name, which would otherwise make
// every collection panic or report a pool the conventions cannot name, and registers
// nothing for them.
func TestObservePoolInvalidArgs(t *testing.T) {
	srv, h, c := standalone(t, respire.Options{})
	for _, tc := range []struct {
		name   string
		client *respire.Client
		pool   string
	}{
		{"nil client", nil, srv.Addr()},
		{"empty name", c, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop, err := h.obs.ObservePool(tc.client, tc.pool)
			if err == nil {
				stop()
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalidArg) {
				t.Errorf("error %v does not match ErrInvalidArg", err)
			}
			if stop != nil {
				t.Errorf("a stop function with the error")
			}
		})
	}
	if m, ok := find(h.collect(t), "db.client.connection.count"); ok {
		t.Errorf("pool reported after refused calls: %+v", m.Data)
	}
}
