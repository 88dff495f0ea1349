package conn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// trackedT dials srv with tracking on and a push handler that calls onPush.
func trackedT(t *testing.T, srv *testserver.Server, onPush func(resp.Value)) *Conn {
	t.Helper()
	c := dialT(t, srv.Addr(), Options{PushHandler: onPush})
	if _, err := c.Do(context.Background(), "CLIENT", "TRACKING", "ON"); err != nil {
		t.Fatal(err)
	}
	return c
}

// CatchUp waits while the reader holds a push it has read but not finished handing
// on, and for the frames that arrived behind it; it returns once they are handled.
func TestCatchUpWaitsForThePushHandler(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	releaseReader := func() { releaseOnce.Do(func() { close(release) }) }
	handled := 0
	c := trackedT(t, srv, func(resp.Value) {
		if handled == 0 {
			close(entered)
			<-release // the reader is held with the first push in hand
		}
		handled++
	})
	t.Cleanup(releaseReader) // before the connection's Close, which waits for the reader
	if !c.Measurable() {
		t.Fatal("a plain TCP connection with a push handler is not measurable")
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatalf("CatchUp of a quiet connection: %v", err)
	}
	if !c.Current(time.Hour) {
		t.Fatal("not current right after catching up")
	}
	// CurrentAt compares with the caller's reading of the module's clock: current as
	// of now, not as of an hour from now.
	if now := nanotime(); !c.CurrentAt(now, time.Hour) || c.CurrentAt(now+int64(2*time.Hour), time.Hour) {
		t.Fatal("CurrentAt does not measure the lag from the reading it is given")
	}
	for _, k := range []string{"a", "b"} {
		if _, err := c.Do(ctx, "GET", k); err != nil {
			t.Fatal(err)
		}
	}
	srv.Do(t, "SET", "a", "1")
	<-entered
	srv.Do(t, "SET", "b", "1") // its push waits behind the first, unread

	published := c.r.pos.caughtUp.Load()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := c.CatchUp(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CatchUp with a push held: %v; want the context's deadline", err)
	}
	if c.r.pos.caughtUp.Load() != published {
		t.Fatal("a catch-up was published with a push held")
	}

	done := make(chan error, 1)
	go func() { done <- c.CatchUp(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("CatchUp returned (%v) with a push held", err)
	case <-time.After(20 * time.Millisecond):
	}
	releaseReader()
	if err := <-done; err != nil {
		t.Fatalf("CatchUp after the handler returned: %v", err)
	}
	if handled != 2 { // read after CatchUp: handled is the reader's, ordered by CatchUp
		t.Fatalf("CatchUp returned after %d pushes; want both", handled)
	}
}

// A connection that breaks ends a CatchUp waiting for it, with its error.
func TestCatchUpEndsWithTheConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	entered, release := make(chan struct{}), make(chan struct{})
	c := trackedT(t, srv, func(resp.Value) {
		select {
		case <-entered:
		default:
			close(entered)
			<-release
		}
	})
	t.Cleanup(func() { close(release) }) // before the connection's Close, which waits for the reader
	if _, err := c.Do(context.Background(), "GET", "k"); err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "k", "1")
	<-entered
	done := make(chan error, 1)
	go func() { done <- c.CatchUp(context.Background()) }()
	go c.fatal(ErrClosed) // not Close, which waits for the reader held above
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("CatchUp on a closed connection: %v; want ErrClosed", err)
	}
	if err := c.CatchUp(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("CatchUp after the close: %v; want ErrClosed", err)
	}
}

// Where the kernel's count cannot be compared with the reader's, CatchUp says so at
// once.
func TestCatchUpCannotMeasure(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{TLS: true})
	push := func(resp.Value) {}
	cases := []struct {
		name string
		addr string
		opts Options
	}{
		{"no push handler", srv.Addr(), Options{}},
		{"TLS", srv.TLSAddr(), Options{TLS: srv.ClientTLSConfig(), PushHandler: push}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialT(t, tc.addr, tc.opts)
			if c.Measurable() {
				t.Fatal("measurable")
			}
			if err := c.CatchUp(context.Background()); !errors.Is(err, ErrCannotMeasure) {
				t.Fatalf("CatchUp: %v; want ErrCannotMeasure", err)
			}
		})
	}
}

// The reader's count of handled bytes and the kernel's count of received ones agree on
// a quiet connection: every byte the server sent is accounted for.
func TestHandledMatchesTheKernelCount(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := trackedT(t, srv, func(resp.Value) {})
	for i := range 100 {
		if _, err := c.Do(context.Background(), "SET", "k", i); err != nil {
			t.Fatal(err)
		}
	}
	// The reply wakes its caller before the reader counts it: catch up first.
	if err := c.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _, err := kernelReceived(c.raw)
	if err != nil {
		t.Fatal(err)
	}
	if handled := c.r.pos.handled.Load(); handled != got {
		t.Fatalf("handled %d bytes; the kernel received %d", handled, got)
	}
}

// A dialer may read from the socket before the connection is built (a proxy's
// handshake): those bytes are in the kernel's count but never reach the reader, and
// CatchUp must not wait for them.
func TestCatchUpAfterADialerRead(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// Stands for a proxy's handshake: a request and its answer, read here.
		reply := make([]byte, len("+PONG\r\n"))
		if _, err := nc.Write([]byte("PING\r\n")); err == nil {
			_, err = io.ReadFull(nc, reply)
		}
		if err != nil || string(reply) != "+PONG\r\n" {
			nc.Close()
			return nil, fmt.Errorf("the dialer's own exchange: %q, %v", reply, err)
		}
		return nc, nil
	}
	c := dialT(t, srv.Addr(), Options{PushHandler: func(resp.Value) {}, Dialer: dialer})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.CatchUp(ctx); err != nil {
		t.Fatalf("CatchUp after the dialer read %d bytes itself: %v", len("+PONG\r\n"), err)
	}
}

// A push received while the reader goroutine is not running is handed on by CatchUp
// itself, on its caller's goroutine: the caller neither parks nor waits for the
// reader to be scheduled.
func TestCatchUpHandsOnReceivedPushesItself(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pushes atomic.Int64
	c := trackedT(t, srv, func(resp.Value) { pushes.Add(1) })
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}

	woke, releaseReader := holdReader(t, c)

	srv.Do(t, "SET", "k", "1")
	<-woke // the push is in the socket; the reader is held before it reads it
	parks := c.r.pos.parks.Load()
	if err := c.CatchUp(ctx); err != nil {
		t.Fatalf("CatchUp with the reader held: %v", err)
	}
	if n := pushes.Load(); n != 1 {
		t.Fatalf("CatchUp returned with %d pushes handed on; want the one received", n)
	}
	if n := c.r.pos.parks.Load() - parks; n != 0 {
		t.Fatalf("CatchUp parked %d times with the push received and nobody handing it on", n)
	}
	if !c.Current(time.Hour) {
		t.Fatal("not current after catching up")
	}

	// The reader, let go, finds nothing left to hand on, and goes on with the next
	// (the server tracks a key again once it is read again).
	releaseReader()
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "k", "2")
	for pushes.Load() != 2 {
		if ctx.Err() != nil {
			t.Fatalf("the reader handed on %d pushes; want 2", pushes.Load())
		}
		runtime.Gosched()
	}
}

// holdReader holds c's reader goroutine the next time bytes wake it, before it hands
// them on: woke says it is held, and release (also run at cleanup, before the
// connection's Close, which waits for the reader) lets it go.
func holdReader(t *testing.T, c *Conn) (woke <-chan struct{}, release func()) {
	t.Helper()
	w, let := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(let) }) }
	hold := func(held *Conn) {
		if held == c {
			select {
			case w <- struct{}{}:
				<-let
			case <-let:
			}
		}
	}
	readerWoke.Store(&hold)
	t.Cleanup(func() {
		readerWoke.Store(nil)
		release()
	})
	return w, release
}

// A CatchUp that finds another handing frames on waits for it, and when it lets go
// hands on itself what arrived after that one's last read, instead of waiting for the
// reader goroutine, which is held here.
func TestCatchUpTakesOverWhenTheHolderLetsGo(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pushes atomic.Int64
	c := trackedT(t, srv, func(resp.Value) { pushes.Add(1) })
	for _, k := range []string{"a", "b"} {
		if _, err := c.Do(ctx, "GET", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	woke, _ := holdReader(t, c)

	// The first CatchUp hands on the push of a and is held before it lets go.
	holding, letGo := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold := func(held *Conn) {
		if held == c {
			once.Do(func() {
				close(holding)
				<-letGo
			})
		}
	}
	catchUpHolds.Store(&hold)
	t.Cleanup(func() { catchUpHolds.Store(nil) })
	srv.Do(t, "SET", "a", "1")
	<-woke
	first := make(chan error, 1)
	go func() { first <- c.CatchUp(ctx) }()
	select {
	case <-holding:
	case err := <-first:
		t.Fatalf("the first CatchUp returned without handing on: %v", err)
	}

	// The push of b arrives while it holds; a second CatchUp waits for it.
	srv.Do(t, "SET", "b", "1")
	for {
		n, _, err := kernelReceived(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if n > c.r.pos.handled.Load() {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the push of b never reached the socket")
		}
		runtime.Gosched()
	}
	parks := c.r.pos.parks.Load()
	second := make(chan error, 1)
	go func() { second <- c.CatchUp(ctx) }()
	for c.r.pos.parks.Load() == parks {
		if ctx.Err() != nil {
			t.Fatal("the second CatchUp never waited for the first")
		}
		runtime.Gosched()
	}

	close(letGo)
	for i, ch := range []chan error{first, second} {
		if err := <-ch; err != nil {
			t.Fatalf("CatchUp %d with the reader held: %v", i+1, err)
		}
	}
	if n := pushes.Load(); n != 2 {
		t.Fatalf("%d pushes handed on; want 2, with the reader held", n)
	}
}

// A connection the server resets counts no byte for the reset, so nothing is left to
// hand on; CatchUp must still not call it current, since the server's tracking ended
// with it. With the reader goroutine held, CatchUp finds the reset itself.
func TestCatchUpFindsAReset(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	px := faultproxy.Start(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := dialT(t, px.Addr(), Options{PushHandler: func(resp.Value) {}})
	if _, err := c.Do(ctx, "CLIENT", "TRACKING", "ON"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	woke, _ := holdReader(t, c)
	px.ResetAll()
	<-woke // the reset has reached the socket; the reader is held before it reads
	if err := c.CatchUp(ctx); err == nil {
		t.Fatal("CatchUp returned nil on a connection the server reset")
	}
	if c.Err() == nil {
		t.Fatal("the connection is not broken after CatchUp found the reset")
	}
}

// Replies larger than the read buffer are read through by the reader goroutine while
// CatchUps try to hand frames on: every reply arrives whole, and every CatchUp returns.
func TestCatchUpDuringLargeReplies(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := trackedT(t, srv, func(resp.Value) {})
	big := strings.Repeat("x", 1<<20)
	srv.Do(t, "SET", "big", big)
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.CatchUp(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		v, err := c.Do(ctx, "GET", "big")
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		if s, _ := v.Text(); s != big {
			t.Fatalf("GET %d: %d bytes; want %d", i, len(s), len(big))
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("CatchUp: %v", err)
	}
	if err := c.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
}
