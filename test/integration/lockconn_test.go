package integration

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// The lock connection is the server's, apart from the shared one: killing it leaves
// the shared connection and its commands alone, the next call dials a fresh one, and
// it closes with the client.
func TestLockConnIsApart(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()

	shared, err := c.ConnFor(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	lc, err := c.LockConnFor(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if lc == shared || lc.Addr() != shared.Addr() {
		t.Fatalf("lock connection %p to %s, shared %p to %s: want another connection to the same server", lc, lc.Addr(), shared, shared.Addr())
	}
	if again, err := c.LockConnFor(ctx, "other"); err != nil || again != lc {
		t.Fatalf("a second LockConnFor gave %p (%v), want the same connection %p", again, err, lc)
	}
	id, ok := lc.ID()
	if !ok {
		t.Fatal("no CLIENT ID on the lock connection")
	}
	srv.Do(t, "CLIENT", "KILL", "ID", strconv.FormatInt(id, 10))
	// An idle connection learns of its end when next used.
	if _, _, err := c.LockDoOn(ctx, lc, conn.CallOptions{}, "PING"); err == nil {
		t.Fatal("PING on the killed lock connection succeeded")
	}
	fresh, err := c.LockConnFor(ctx, "k")
	if err != nil || fresh == lc {
		t.Fatalf("after the kill: %p %v, want a new connection", fresh, err)
	}
	if v, _, err := c.LockDoOn(ctx, fresh, conn.CallOptions{}, "PING"); err != nil || !isPong(v) {
		t.Fatalf("PING on the fresh lock connection: %v %v", v, err)
	}
	if now, err := c.ConnFor(ctx, "k"); err != nil || now != shared || shared.Err() != nil {
		t.Fatalf("the shared connection changed with the lock connection's kill: %v %v", shared.Err(), err)
	}

	c.Close()
	if _, err := c.LockConnFor(ctx, "k"); !errors.Is(err, respire.ErrClosed) {
		t.Fatalf("LockConnFor on a closed client: %v", err)
	}
	if fresh.Err() == nil {
		t.Fatal("the lock connection outlived its client")
	}
}

// A lock connection that cannot be dialled fails as not sent, so that a lock may try
// again and Close can tell it is harmless.
func TestLockConnDialFailureIsNotSent(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, DialTimeout: time.Second})
	srv.Stop(t)
	_, err := c.LockConnFor(context.Background(), "k")
	if !errors.Is(err, conn.ErrNotSent) {
		t.Fatalf("LockConnFor with the server down: %v, want a not-sent error", err)
	}
}

func isPong(v resp.Value) bool {
	s, err := v.Text()
	return err == nil && s == "PONG"
}
