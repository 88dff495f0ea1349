package respire

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire/test/testserver"
)

// fired waits for w to fire, failing the test after d.
func fired(t *testing.T, w *KeyWatch, d time.Duration, what string) {
	t.Helper()
	select {
	case <-w.Done():
	case <-time.After(d):
		t.Fatalf("the watch was not woken by %s", what)
	}
}

func notFired(t *testing.T, w *KeyWatch) {
	t.Helper()
	select {
	case <-w.Done():
		t.Fatal("the watch fired without a change")
	default:
	}
}

func TestWatchKeyWakes(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{KeyPrefix: "p:"})
	ctx := context.Background()

	srv.Do(t, "SET", "p:k", "v", "PX", "60000")
	w, err := c.WatchKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Exists() || w.TTL() < 59*time.Second || w.TTL() > time.Minute {
		t.Fatal(w.Exists(), w.TTL())
	}
	srv.Do(t, "SET", "p:other", "v") // another key, and an unprefixed one
	srv.Do(t, "SET", "k", "v")
	notFired(t, w)
	srv.Do(t, "DEL", "p:k")
	fired(t, w, 5*time.Second, "DEL")
	w.Stop()
	w.Stop() // twice is fine

	// Missing key: armed all the same, and woken when it appears.
	w, err = c.WatchKey(ctx, "k")
	if err != nil || w.Exists() || w.TTL() != 0 {
		t.Fatal(w, err)
	}
	if err := w.Wait(ctx, time.Hour); err != nil {
		t.Fatal("Wait of a missing key must return at once:", err)
	}
	srv.Do(t, "SET", "p:k", "again")
	fired(t, w, 5*time.Second, "SET")

	// One shot: the server forgot the key when it reported it, so a watch armed again
	// is what hears the next change.
	w2, err := c.WatchKey(ctx, "k")
	if err != nil || !w2.Exists() || w2.TTL() != 0 {
		t.Fatal(w2, err)
	}
	srv.Do(t, "SET", "p:k", "third")
	fired(t, w2, 5*time.Second, "a change after re-arming")

	// Expiry: the server's report, or Wait's timer at the TTL read on arming.
	srv.Do(t, "SET", "p:e", "v", "PX", "100")
	we, err := c.WatchKey(ctx, "e")
	if err != nil || we.TTL() <= 0 || we.TTL() > 100*time.Millisecond {
		t.Fatal(we, err)
	}
	start := time.Now()
	if err := we.Wait(ctx, 0); err != nil || time.Since(start) > 5*time.Second {
		t.Fatal(err, time.Since(start))
	}
	fired(t, we, 5*time.Second, "the expiry")

	// FLUSHALL reports every tracked key.
	wf, err := c.WatchKey(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "FLUSHALL")
	fired(t, wf, 5*time.Second, "FLUSHALL")

	// A stopped watch never fires.
	ws, err := c.WatchKey(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	ws.Stop()
	srv.Do(t, "SET", "p:s", "v")
	// A round trip on the tracked connection after the SET: a report would be in.
	if _, err := c.WatchKey(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	notFired(t, ws)
	if n := c.tracking.keys.n.Load(); n != 1 { // "other"
		t.Fatalf("%d watches still registered", n)
	}
}

func TestWatchKeyConnectionLoss(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	ctx := context.Background()
	w, err := c.WatchKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	fired(t, w, 5*time.Second, "the tracked connection's loss")
	// A new watch tracks on a new connection.
	w, err = c.WatchKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "k", "v")
	fired(t, w, 5*time.Second, "a change after reconnecting")

	// Closing the client wakes what is still armed.
	w, err = c.WatchKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	fired(t, w, 5*time.Second, "Close")
	if _, err := c.WatchKey(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

func TestWatchKeyBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	plain := newClientT(t, Options{Addrs: []string{srv.Addr()}})
	if plain.CanWatchKeys() {
		t.Fatal("CanWatchKeys without a cache")
	}
	if _, err := plain.WatchKey(context.Background(), "k"); !errors.Is(err, ErrNoCache) {
		t.Fatal(err)
	}
	c := cachedClientT(t, srv, Options{})
	if !c.CanWatchKeys() {
		t.Fatal("CanWatchKeys with a cache")
	}
	if _, err := c.WatchKey(context.Background(), ""); !errors.Is(err, ErrInvalidArg) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.WatchKey(ctx, "k"); err == nil {
		t.Fatal("WatchKey with an ended context")
	}
	if n := c.tracking.keys.n.Load(); n != 0 {
		t.Fatalf("%d watches left by failed calls", n)
	}
}
