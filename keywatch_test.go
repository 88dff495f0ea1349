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
	if plain.link.CanWatchKeys {
		t.Fatal("CanWatchKeys without a cache")
	}
	if _, err := plain.WatchKey(context.Background(), "k"); !errors.Is(err, ErrNoCache) {
		t.Fatal(err)
	}
	c := cachedClientT(t, srv, Options{})
	if !c.link.CanWatchKeys {
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

func TestWatchKeyInTurn(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	ctx := context.Background()
	arm := func(prev *KeyWatch) *KeyWatch {
		t.Helper()
		w, err := c.WatchKeyInTurn(ctx, "q", prev)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// syncReports makes a round trip on the tracked connection: reports sent before it
	// have been applied when it returns.
	syncReports := func() {
		t.Helper()
		w, err := c.WatchKey(ctx, "sync")
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	}
	a, b, cw := arm(nil), arm(nil), arm(nil)
	all, err := c.WatchKey(ctx, "q") // not queued: woken by every report
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "q", "1")
	fired(t, a, 5*time.Second, "the first report (head of the queue)")
	fired(t, all, 5*time.Second, "the first report (not queued)")
	syncReports()
	notFired(t, b)
	notFired(t, cw)

	// a stops without looking again: its turn goes to b.
	a.Stop()
	fired(t, b, 5*time.Second, "the turn a passed on")
	notFired(t, cw)

	// b looks again: the key is tracked again, nobody else is woken, and b queues
	// behind c.
	b2 := arm(b)
	syncReports()
	notFired(t, cw)
	srv.Do(t, "SET", "q", "2")
	fired(t, cw, 5*time.Second, "the next report (c is the head now)")
	syncReports()
	notFired(t, b2)

	// A watch that looks again before being woken keeps its place.
	c2 := arm(cw) // cw was woken: c2 goes to the end, behind b2
	b3 := arm(b2) // b2 was waiting: b3 takes its place, the head
	srv.Do(t, "SET", "q", "3")
	fired(t, b3, 5*time.Second, "the report (b3 kept b2's place)")
	syncReports()
	notFired(t, c2)
	b4 := arm(b3)

	// A lost connection wakes every queued watch.
	srv.Do(t, "CLIENT", "KILL", "TYPE", "normal")
	fired(t, c2, 5*time.Second, "the connection's loss")
	fired(t, b4, 5*time.Second, "the connection's loss")
	for _, w := range []*KeyWatch{a, b, b2, b3, b4, cw, c2, all} {
		w.Stop()
	}
	if n := c.tracking.keys.n.Load(); n != 0 {
		t.Fatalf("%d watches still registered", n)
	}
}
