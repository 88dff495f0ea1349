package conn

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/test/testserver"
)

// watching reports whether ctx is the connection's watched context and how many calls
// wait for the watcher.
func (c *Conn) watching(ctx context.Context) (bool, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watch.done == ctx.Done(), c.watch.waiters
}

// pings sends n PINGs with ctx through the fake server, one after another. A context
// used twice in a row becomes the connection's watched one.
func pings(t *testing.T, c *Conn, f *fakeServer, ctx context.Context, n int) {
	t.Helper()
	for range n {
		res := make(chan error, 1)
		go func() { res <- c.Ping(ctx) }()
		f.Expect("PING")
		f.Reply("+PONG\r\n")
		if err := <-res; err != nil {
			t.Fatal(err)
		}
	}
}

// A context passed twice in a row becomes the watched one; its calls are then woken by
// the watcher when it ends: a queued call is never sent, a written one is abandoned and
// its reply dropped.
func TestWatchedContextCancelsQueuedAndWrittenCalls(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for i := range 2 {
		pings(t, c, f, ctx, 1)
		if watched, _ := c.watching(ctx); watched != (i == 1) {
			t.Fatalf("after %d uses: watched = %v", i+1, watched)
		}
	}

	written := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "INCR", "n")
		written <- err
	}()
	// The writer is now blocked writing INCR into the pipe the fake does not read yet,
	// so SET waits in the queue.
	testkit.WaitFor(t, "INCR in flight", func() bool { _, n := c.counts(); return n == 1 })
	queued := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, "SET", "b", "never")
		queued <- err
	}()
	testkit.WaitFor(t, "SET queued", func() bool { q, _ := c.counts(); return q == 1 })
	if _, n := c.watching(ctx); n != 2 {
		t.Fatalf("%d calls wait for the watcher; want 2", n)
	}
	cancel()

	if err := <-written; !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("written call: %v; want ErrOutcomeUnknown and context.Canceled", err)
	}
	if err := <-queued; !errors.Is(err, ErrNotSent) || !errors.Is(err, context.Canceled) {
		t.Fatalf("queued call: %v; want ErrNotSent and context.Canceled", err)
	}
	if _, n := c.watching(ctx); n != 0 {
		t.Fatalf("%d calls still wait for the watcher", n)
	}

	got := make(chan error, 1)
	go func() {
		v, err := c.Do(context.Background(), "GET", "k")
		if err == nil && v.String() != `"new"` {
			err = fmt.Errorf("GET got %s: an orphaned reply leaked", v)
		}
		got <- err
	}()
	f.Expect("INCR", "n")
	f.Reply(":1\r\n")    // INCR's orphaned reply
	f.Expect("GET", "k") // not SET b: its bytes were removed
	f.Reply("$3\r\nnew\r\n")
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// Many goroutines sharing one context, as the workers of a pool do, all wait for the
// watcher. Ending the context mid-flight fails each call as not sent or outcome unknown
// (never a wrong reply), and the connection goes on serving the next shared context.
func TestSharedContextCancellationUnderLoad(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialT(t, srv.Addr(), Options{Protocol: proto})
			var wrong, ok, notSent, unknown, sawWatched atomic.Int64
			for round := range 20 {
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				for g := range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := 0; ; j++ {
							payload := fmt.Sprintf("r%d-g%d-%d", round, g, j)
							v, err := c.Do(ctx, "ECHO", payload)
							switch {
							case err == nil:
								if s, _ := v.Text(); s != payload {
									wrong.Add(1)
								}
								ok.Add(1)
								continue
							case errors.Is(err, ErrNotSent) && errors.Is(err, context.Canceled):
								notSent.Add(1)
							case errors.Is(err, ErrOutcomeUnknown) && errors.Is(err, context.Canceled):
								unknown.Add(1)
							default:
								t.Errorf("unexpected error: %v", err)
							}
							return
						}
					}()
				}
				rng := rand.New(rand.NewPCG(uint64(round), 1))
				time.Sleep(time.Duration(2000+rng.IntN(8000)) * time.Microsecond)
				if watched, n := c.watching(ctx); watched && n > 0 {
					sawWatched.Add(1)
				}
				cancel()
				wg.Wait()
			}
			t.Logf("ok %d, not sent %d, outcome unknown %d, rounds watched %d",
				ok.Load(), notSent.Load(), unknown.Load(), sawWatched.Load())
			switch {
			case wrong.Load() != 0:
				t.Fatalf("%d replies went to the wrong caller", wrong.Load())
			case sawWatched.Load() == 0:
				t.Fatal("the shared context never became the watched one")
			case ok.Load() == 0 || notSent.Load()+unknown.Load() == 0:
				t.Fatal("the test exercised only one path")
			}
			for i := range 100 {
				v, err := c.Do(context.Background(), "ECHO", i)
				if n, _ := v.Int(); err != nil || n != int64(i) {
					t.Fatalf("after the rounds: ECHO %d = %s, %v", i, v, err)
				}
			}
		})
	}
}

// While calls wait for the watcher of one context, the watcher stays with it: another
// context neither takes it for its calls nor for a read of its own.
func TestWatcherIsNotStolenWhileCallsWait(t *testing.T) {
	c, f := dialFakeTCP(t, Options{}, helloRESP3)
	shared, cancelShared := context.WithCancel(context.Background())
	defer cancelShared()
	pings(t, c, f, shared, 2)
	// On a quiet connection the first call reads its own reply (and selects); the
	// second, sent while the first is in flight, waits for the watcher.
	first, second := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := c.Do(shared, "GET", "first")
		first <- err
	}()
	f.Expect("GET", "first")
	go func() {
		_, err := c.Do(shared, "GET", "second")
		second <- err
	}()
	f.Expect("GET", "second")
	if watched, n := c.watching(shared); !watched || n != 1 {
		t.Fatalf("watched = %v with %d waiting; want the shared context with 1", watched, n)
	}

	other, cancelOther := context.WithCancel(context.Background())
	defer cancelOther()
	c.mu.Lock()
	readOwn := c.watchLocked(other)
	for range 2 {
		cl := &call{}
		c.watchCallLocked(other, cl)
		if cl.watched {
			t.Error("a call of another context was given the busy watcher")
		}
	}
	c.mu.Unlock()
	if readOwn {
		t.Error("a read of another context took the busy watcher")
	}

	cancelShared()
	for _, res := range []chan error{first, second} {
		if err := <-res; !errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a call of the shared context: %v; want ErrOutcomeUnknown", err)
		}
	}
	f.Reply("$1\r\nx\r\n$1\r\ny\r\n") // both orphaned replies
	pong := make(chan error, 1)
	go func() { pong <- c.Ping(other) }()
	f.Expect("PING")
	f.Reply("+PONG\r\n")
	if err := <-pong; err != nil {
		t.Fatal(err)
	}
}

// A context that ended after the watcher fired is not watched again: the watcher will
// not fire twice, so its calls select on the context instead.
func TestEndedWatchedContextIsNotWatchedAgain(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx, cancel := context.WithCancel(context.Background())
	pings(t, c, f, ctx, 2)
	if watched, _ := c.watching(ctx); !watched {
		t.Fatal("the context is not watched after two uses")
	}
	cancel()
	c.mu.Lock()
	cl := &call{want: 1}
	c.watchCallLocked(ctx, cl)
	readOwn := c.watchLocked(ctx)
	c.mu.Unlock()
	if cl.watched || readOwn {
		t.Fatalf("an ended context was watched (call %v, own read %v)", cl.watched, readOwn)
	}
}

// Send (no reply expected) with the watched context, cancelled while queued, returns.
func TestWatchedContextSendIsCancelled(t *testing.T) {
	c, f := dialFake(t, Options{}, helloRESP3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pings(t, c, f, ctx, 2)
	held := make(chan error, 1)
	go func() { held <- c.Ping(context.Background()) }()
	testkit.WaitFor(t, "PING in flight", func() bool { _, n := c.counts(); return n == 1 })
	sent := make(chan error, 1)
	go func() { sent <- c.Send(ctx, "SET", "k", "v") }()
	testkit.WaitFor(t, "SET queued", func() bool { q, _ := c.counts(); return q == 1 })
	cancel()
	select {
	case err := <-sent:
		if !errors.Is(err, ErrNotSent) {
			t.Fatalf("Send cancelled while queued: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send hangs after its context ended")
	}
	f.Expect("PING")
	f.Reply("+PONG\r\n")
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
