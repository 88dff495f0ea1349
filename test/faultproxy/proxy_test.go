package faultproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/respire/respire/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer echoes every connection until the test ends and counts the bytes
// it received.
type echoServer struct {
	ln       net.Listener
	mu       sync.Mutex
	received int
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startEcho(t *testing.T) *echoServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{ln: ln}
	e.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Go(func() { e.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoServer) serve(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		e.mu.Lock()
		e.received += n
		e.mu.Unlock()
		if n > 0 {
			c.Write(buf[:n])
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.(*net.TCPConn).CloseWrite()
			}
			return
		}
	}
}

func (e *echoServer) got() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.received
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads len(msg) bytes back within limit.
func roundTrip(c net.Conn, msg string, limit time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	c.SetReadDeadline(time.Now().Add(limit))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, len(msg))
	n, err := io.ReadFull(c, buf)
	return string(buf[:n]), err
}

func TestForwards(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	for _, msg := range []string{"hello", strings.Repeat("x", 100_000)} {
		if got, err := roundTrip(c, msg, 10*time.Second); err != nil || got != msg {
			t.Fatalf("round trip of %d bytes: %d bytes, %v", len(msg), len(got), err)
		}
	}
	// The proxy counts a chunk once its write returns, which can be after the
	// client has read it.
	testkit.WaitFor(t, "the byte counts", func() bool {
		s := p.Stats()
		return s.ToServer == 100_005 && s.ToClient == 100_005
	})
	if s := p.Stats(); s.Accepted != 1 || s.ToServer != 100_005 || s.ToClient != 100_005 {
		t.Fatalf("stats %+v", s)
	}
}

// The lower bounds below are what the faults promise; no upper bound on
// speed is asserted.
func TestLatencyAndBandwidthAreLowerBounds(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	p.SetLatency(ToClient, 100*time.Millisecond)
	start := time.Now()
	if _, err := roundTrip(c, "ping", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("round trip with 100ms latency took %v", d)
	}
	p.SetLatency(ToClient, 0)
	p.SetBandwidth(ToServer, 20_000)
	start = time.Now()
	if _, err := roundTrip(c, strings.Repeat("b", 5_000), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("5000 bytes at 20000 B/s took %v", d)
	}
}

func TestBlackholeDropsUntilHealed(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	p.Blackhole(ToServer)
	if _, err := roundTrip(c, "lost", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed request answered: %v", err)
	}
	testkit.WaitFor(t, "dropped bytes counted", func() bool { return p.Stats().Dropped == 4 })
	if e.got() != 0 {
		t.Fatalf("server received %d bytes through a blackhole", e.got())
	}
	p.Heal()
	if got, err := roundTrip(c, "back", 10*time.Second); err != nil || got != "back" {
		t.Fatalf("after heal: %q, %v", got, err)
	}
	// A blackhole of replies: the server hears, the client never does, and
	// new connections are accepted into the same silence.
	p.Blackhole(ToClient)
	c2 := dial(t, p)
	if _, err := roundTrip(c2, "heard", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("blackholed reply arrived: %v", err)
	}
	testkit.WaitFor(t, "server hears through a reply blackhole", func() bool { return e.got() == 4+5 })
}

func TestPauseHoldsAndResumeDelivers(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	p.Pause(ToClient)
	if _, err := roundTrip(c, "held", 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("paused reply arrived: %v", err)
	}
	p.Resume(ToClient)
	buf := make([]byte, 4)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("held reply after resume: %q, %v", buf, err)
	}
}

func TestResetAllSendsRST(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	if _, err := roundTrip(c, "up", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.ResetAll()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after reset: %v, want ECONNRESET", err)
	}
	testkit.WaitFor(t, "link forgotten", func() bool { return p.Stats().Open == 0 })
	if s := p.Stats(); s.Resets != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestCutAfterNBytes(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	p.CutAfter(ToClient, 3)
	c.Write([]byte("hello"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if string(got) != "hel" || !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("cut after 3 bytes: read %q, %v", got, err)
	}
}

func TestHalfCloseOneDirection(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	p.HalfClose(ToClient)
	c.Write([]byte("after"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after half-close: %v, want EOF", err)
	}
	testkit.WaitFor(t, "requests still reach the server", func() bool { return e.got() == 5 })
}

// Faults switched while a stream of round trips flows never corrupt or
// reorder the bytes that do get through.
func TestSwitchWhileFlowing(t *testing.T) {
	e := startEcho(t)
	p := Start(t, e.ln.Addr().String())
	c := dial(t, p)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				p.SetLatency(Both, time.Millisecond)
			case 1:
				p.Pause(ToServer)
				p.Resume(ToServer)
			case 2:
				p.Heal()
			}
		}
	})
	for i := range 200 {
		msg := strings.Repeat(string(rune('a'+i%26)), 1+i*37%500)
		if got, err := roundTrip(c, msg, 10*time.Second); err != nil || got != msg {
			close(stop)
			wg.Wait()
			t.Fatalf("round trip %d: %q, %v", i, got, err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestCloseEndsEverything(t *testing.T) {
	e := startEcho(t)
	p, err := New(e.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p)
	p.Pause(Both)
	c.Write([]byte("stuck"))
	p.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after Close: %v", err)
	}
}
