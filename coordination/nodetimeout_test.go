package coordination

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// silencer forwards connections to a server until silenced; from then on it accepts
// connections and never answers them, as a server that hangs does. It owns its
// goroutines: close stops them.
type silencer struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	silent bool
	conns  []net.Conn
}

func newSilencer(t *testing.T, target string) *silencer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silencer{ln: ln, target: target}
	s.wg.Go(s.accept)
	return s
}

func (s *silencer) addr() string { return s.ln.Addr().String() }

func (s *silencer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		silent := s.silent
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		if silent {
			continue // held open, never answered
		}
		up, err := net.Dial("tcp", s.target)
		if err != nil {
			c.Close()
			continue
		}
		s.mu.Lock()
		s.conns = append(s.conns, up)
		s.mu.Unlock()
		s.wg.Go(func() { io.Copy(up, c); up.Close() })
		s.wg.Go(func() { io.Copy(c, up); c.Close() })
	}
}

// silence breaks every connection made so far and answers none made from now on.
func (s *silencer) silence() {
	s.mu.Lock()
	s.silent = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (s *silencer) close() {
	s.ln.Close()
	s.silence()
	s.wg.Wait()
}

// TestRedlockNodeTimeoutBoundsRedial: a server whose connection broke and whose redial
// hangs (it accepts and never answers the handshake) holds up its part of an
// acquisition and of a release for NodeTimeout at most, like a server that does not
// answer a command, not for as long as the client's dial may take. The dial and read
// timeouts are far longer than the caller's context, so a part that waited for the
// dial would end the acquisition with that context (Issue #28).
func TestRedlockNodeTimeoutBoundsRedial(t *testing.T) {
	var clients []*respire.Client
	for range 2 {
		clients = append(clients, plainClient(t, testserver.Start(t, testserver.Config{})))
	}
	hung := newSilencer(t, testserver.Start(t, testserver.Config{}).Addr())
	c := testclient.New(t, respire.Options{Addrs: []string{hung.addr()}, DialTimeout: time.Hour, ReadTimeout: time.Hour})
	t.Cleanup(hung.close) // before the client closes: no handshake left hanging
	clients = append(clients, c)
	g, err := NewRedlockGroup(clients, RedlockOptions{NodeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	rl, ok, err := g.TryAcquire(ctx, "redial-a", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire with every server up: ok %v, %v", ok, err)
	}
	if _, err := rl.Release(ctx); err != nil {
		t.Fatalf("Release with every server up: %v", err)
	}

	hung.silence()
	// The client redials once it finds its connection broken: a PING that fails shows
	// it did, and that the redial hangs.
	for {
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := c.Do(pctx, "PING")
		pcancel()
		if err != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the client never found its connection broken")
		}
	}

	rl, ok, err = g.TryAcquire(ctx, "redial-b", 10*time.Second)
	if !ok || err != nil {
		t.Fatalf("TryAcquire with one server redialling a hung one: ok %v, %v; want a valid lease from the other two", ok, err)
	}
	if _, err := rl.Release(ctx); errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("Release with one server redialling a hung one waited for the caller's context: %v", err)
	}
}

// TestRedlockIdentifyBoundedByNodeTimeout: a server the group has never identified, which
// accepts connections and never answers them, holds up an acquisition whose context has
// no deadline for the node timeout only (asking its identity, then its part of the
// acquisition), not for as long as the client's dial may take: the other two servers
// grant the lease, every time it is asked for. With INFO refused by the ACL, the
// probe that identifies the servers instead leaves out the server whose INFO did not
// answer. The client's dial and read timeouts are an hour, so the node timeout is
// the only bound (review of the coordination code, gap 2: RedlockGroup.identify's
// parts are bounded by NodeTimeout in redlockNode.identify and redlockNode.probe).
func TestRedlockIdentifyBoundedByNodeTimeout(t *testing.T) {
	users := []testserver.User{{Name: "app", Password: "pw", Rules: []string{"+@all", "-@dangerous", "~*"}}}
	for _, tc := range []struct {
		name string
		user string // "" for the default user, who may run INFO
	}{{"info", ""}, {"probe", "app"}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := func(addr string) respire.Options {
				o := respire.Options{Addrs: []string{addr}, DialTimeout: time.Hour, ReadTimeout: time.Hour}
				if tc.user != "" {
					o.Username, o.Password = tc.user, "pw"
				}
				return o
			}
			var clients []*respire.Client
			for range 2 {
				clients = append(clients, testclient.New(t, opts(testserver.Start(t, testserver.Config{Users: users}).Addr())))
			}
			hung := newSilencer(t, testserver.Start(t, testserver.Config{Users: users}).Addr())
			c := testclient.New(t, opts(hung.addr()))
			t.Cleanup(hung.close) // before the client closes: no handshake left hanging
			clients = append(clients, c)
			hung.silence()
			// The client redials once it finds its connection broken: a PING that fails
			// shows it did, and that the redial hangs.
			testkit.WaitFor(t, "the client to find its connection broken", func() bool {
				pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_, err := c.Do(pctx, "PING")
				return err != nil
			})
			const nodeTimeout = 300 * time.Millisecond
			g, err := NewRedlockGroup(clients, RedlockOptions{NodeTimeout: nodeTimeout})
			if err != nil {
				t.Fatal(err)
			}
			for attempt := range 2 {
				type result struct {
					rl  *Redlock
					ok  bool
					err error
					in  time.Duration
				}
				done := make(chan result, 1)
				go func() {
					start := time.Now()
					rl, ok, err := g.TryAcquire(context.Background(), "identify-hung", time.Minute)
					done <- result{rl, ok, err, time.Since(start)}
				}()
				var r result
				testkit.WaitFor(t, "TryAcquire with an unidentified server that never answers", func() bool {
					select {
					case r = <-done:
						return true
					default:
						return false
					}
				})
				t.Logf("attempt %d: TryAcquire took %v (node timeout %v)", attempt, r.in, nodeTimeout)
				if !r.ok || r.err != nil {
					t.Fatalf("attempt %d: TryAcquire: ok %v, %v; want a lease from the two servers that answer", attempt, r.ok, r.err)
				}
				if _, err := r.rl.Release(context.Background()); err != nil {
					t.Fatalf("attempt %d: Release: %v", attempt, err)
				}
			}
		})
	}
}
