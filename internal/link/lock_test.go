package link_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// newClient returns a client made with opts, closed when the test ends, and its link.
func newClient(t *testing.T, opts respire.Options) (*respire.Client, *link.Client) {
	t.Helper()
	c := testclient.New(t, opts)
	return c, link.Of(c)
}

// The lock lane is the server's, apart from the shared one: killing it leaves
// the shared connection and its commands alone, the next call dials a fresh one, and
// it closes with the client.
func TestLockLaneIsApart(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c, ln := newClient(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()

	shared, err := ln.Conn(ctx, route.SharedLane, "k")
	if err != nil {
		t.Fatal(err)
	}
	lc, err := ln.Conn(ctx, route.LockLane, "k")
	if err != nil {
		t.Fatal(err)
	}
	if lc == shared || lc.Addr() != shared.Addr() {
		t.Fatalf("lock connection %p to %s, shared %p to %s: want another connection to the same server", lc, lc.Addr(), shared, shared.Addr())
	}
	if again, err := ln.Conn(ctx, route.LockLane, "other"); err != nil || again != lc {
		t.Fatalf("a second lock lane look-up gave %p (%v), want the same connection %p", again, err, lc)
	}
	id, ok := lc.ID()
	if !ok {
		t.Fatal("no CLIENT ID on the lock connection")
	}
	srv.Do(t, "CLIENT", "KILL", "ID", strconv.FormatInt(id, 10))
	// An idle connection learns of its end when next used.
	if _, _, err := ln.Do(ctx, lc, route.LockLane, conn.CallOptions{}, "PING"); err == nil {
		t.Fatal("PING on the killed lock connection succeeded")
	}
	fresh, err := ln.Conn(ctx, route.LockLane, "k")
	if err != nil || fresh == lc {
		t.Fatalf("after the kill: %p %v, want a new connection", fresh, err)
	}
	if v, _, err := ln.Do(ctx, fresh, route.LockLane, conn.CallOptions{}, "PING"); err != nil || !isPong(v) {
		t.Fatalf("PING on the fresh lock connection: %v %v", v, err)
	}
	if now, err := ln.Conn(ctx, route.SharedLane, "k"); err != nil || now != shared || shared.Err() != nil {
		t.Fatalf("the shared connection changed with the lock connection's kill: %v %v", shared.Err(), err)
	}

	c.Close()
	if _, err := ln.Conn(ctx, route.LockLane, "k"); !errors.Is(err, respire.ErrClosed) {
		t.Fatalf("the lock lane of a closed client: %v", err)
	}
	if fresh.Err() == nil {
		t.Fatal("the lock connection outlived its client")
	}
}

// A lock lane that cannot be dialled fails as not sent, so that a lock may try
// again and Close can tell it is harmless.
func TestLockLaneDialFailureIsNotSent(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	_, ln := newClient(t, respire.Options{Addrs: []string{srv.Addr()}, DialTimeout: time.Second})
	srv.Stop(t)
	_, err := ln.Conn(context.Background(), route.LockLane, "k")
	if !errors.Is(err, conn.ErrNotSent) {
		t.Fatalf("the lock lane with the server down: %v, want a not-sent error", err)
	}
}

func isPong(v resp.Value) bool {
	s, err := v.Text()
	return err == nil && s == "PONG"
}
