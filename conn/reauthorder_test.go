package conn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gatedCtx is a context whose Err, once armed, holds its first caller until the gate
// opens: a Reauth going again after a take-back calls it before it takes the lock
// (lockForEnqueue), so the test can let another Reauth in first.
type gatedCtx struct {
	context.Context
	armed   atomic.Bool
	entered chan struct{} // closed when the armed Err is called
	gate    chan struct{} // closed to let it return
	once    sync.Once
}

func newGatedCtx(t *testing.T) *gatedCtx {
	g := &gatedCtx{Context: context.Background(), entered: make(chan struct{}), gate: make(chan struct{})}
	t.Cleanup(g.open) // before the connection closes, so that no Reauth is left held
	return g
}

func (g *gatedCtx) Err() error {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.gate
	}
	return g.Context.Err()
}

func (g *gatedCtx) open() { g.once.Do(func() { close(g.gate) }) }

// execTakenBackBehind queues an EXEC behind which the Reauth deferred in the open
// transaction is released, and takes the EXEC back (its caller gives up) so that the
// Reauth's AUTH is taken back too.
func execTakenBackBehind(t *testing.T, c *Conn, arm func()) {
	t.Helper()
	exctx, excancel := context.WithCancel(context.Background())
	exec := make(chan error, 1)
	go func() { _, err := c.Do(exctx, "EXEC"); exec <- err }()
	waitFor(t, "EXEC and the AUTH behind it queued", func() bool { q, _ := c.counts(); return q == 2 })
	arm()
	excancel()
	if err := <-exec; !errors.Is(err, ErrNotSent) {
		t.Fatalf("EXEC: %v, want it not sent", err)
	}
}

// discardThenAuthAs ends the open transaction with DISCARD and answers the AUTH that
// must go behind it, as cr's user.
func discardThenAuthAs(t *testing.T, c *Conn, f *fakeServer, cr Credentials) {
	t.Helper()
	discard := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), "DISCARD"); discard <- err }()
	f.Expect("DISCARD")
	f.Reply("+OK\r\n")
	if err := <-discard; err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.Read(), " "), "AUTH "+cr.Username+" "+cr.Password; got != want {
		t.Fatalf("sent %q behind the DISCARD, want %q", got, want)
	}
	f.Reply("+OK\r\n")
}

// TestReauthTakenBackYieldsToLaterReauth: a Reauth (u2) whose AUTH a take-back sends
// again yields to a Reauth (u3) that came after it, started while u2 was going again:
// deferred in the transaction still open, or done once it closed. Before, u2's retry
// superseded the deferred u3 (the connection ended as u2, u3 told it was superseded)
// or went behind the finished one.
func TestReauthTakenBackYieldsToLaterReauth(t *testing.T) {
	cred3 := Credentials{Username: "u3", Password: "p3"}
	for _, tt := range []struct {
		name       string
		closeFirst bool // the transaction ends, and u3 is done, before u2 goes again
	}{
		{"later one deferred", false},
		{"later one done", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			openTx(t, c, f)
			set := blockWriter(t, c)
			g := newGatedCtx(t)
			first := make(chan error, 1)
			go func() { first <- c.Reauth(g, cred2) }()
			waitDeferredAuth(t, c)
			execTakenBackBehind(t, c, func() { g.armed.Store(true) })
			<-g.entered // u2 goes again, and has not taken the lock yet
			second := make(chan error, 1)
			go func() { second <- c.Reauth(context.Background(), cred3) }()
			waitDeferredAuth(t, c)
			f.Expect("SET", "k", "v")
			f.Reply("+QUEUED\r\n")
			if err := <-set; err != nil {
				t.Fatal(err)
			}
			if tt.closeFirst {
				discardThenAuthAs(t, c, f, cred3)
				if err := <-second; err != nil {
					t.Fatalf("Reauth(u3): %v", err)
				}
			}
			g.open()
			waitFor(t, "a Reauth to return, or u2's AUTH to be queued", func() bool {
				q, n := c.counts()
				return len(first) > 0 || len(second) > 0 || q+n > 0
			})
			select {
			case err := <-first:
				if !errors.Is(err, errReauthSuperseded) {
					t.Fatalf("Reauth(u2): %v, want superseded", err)
				}
			default:
				if len(second) > 0 {
					t.Fatalf("Reauth(u3): %v while u2 goes on", <-second)
				}
				t.Fatal("u2's AUTH was queued again behind u3's")
			}
			if !tt.closeFirst {
				discardThenAuthAs(t, c, f, cred3)
				if err := <-second; err != nil {
					t.Fatalf("Reauth(u3): %v", err)
				}
			}
			if q, n := c.counts(); q+n != 0 || !c.AuthenticatedWith(cred3) {
				t.Errorf("%d queued, %d in flight; as u3: %v", q, n, c.AuthenticatedWith(cred3))
			}
		})
	}
}

// TestReauthNotSupersededByEndedReauth: a Reauth (u2) whose AUTH is taken back from a
// transaction is not superseded by a later Reauth (u3) queued behind it whose context
// has ended: u3 sends nothing, so u2 is deferred again and goes once the transaction
// ends. Before, u2 was told it was superseded and no AUTH went at all.
func TestReauthNotSupersededByEndedReauth(t *testing.T) {
	cred3 := Credentials{Username: "u3", Password: "p3"}
	c, f := dialFakeRotating(t)
	openTx(t, c, f)
	set := blockWriter(t, c)
	first := make(chan error, 1)
	go func() { first <- c.Reauth(context.Background(), cred2) }()
	waitDeferredAuth(t, c)
	ctx3, cancel3 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	execTakenBackBehind(t, c, func() {
		go func() { second <- c.Reauth(ctx3, cred3) }()
		waitFor(t, "u3's AUTH queued behind u2's", func() bool { q, _ := c.counts(); return q == 3 })
		// The EXEC is taken back here as its caller would (unqueueLocked), with u3's
		// context ended and its AUTH still queued: holding the lock keeps u3's waiter
		// from taking its AUTH back first. The caller, woken next, finds it gone.
		c.mu.Lock()
		cancel3()
		c.unqueueLocked(c.w.queued[0])
		c.mu.Unlock()
	})
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("Reauth(u3): %v, want cancelled", err)
	}
	waitFor(t, "u2 to return or be deferred again", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(first) > 0 || c.auth.deferred != nil
	})
	if len(first) > 0 {
		t.Fatalf("Reauth(u2): %v, want it deferred again", <-first)
	}
	f.Expect("SET", "k", "v")
	f.Reply("+QUEUED\r\n")
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	discardThenAuthAs(t, c, f, cred2)
	if err := <-first; err != nil || !c.AuthenticatedWith(cred2) {
		t.Fatalf("Reauth(u2): %v", err)
	}
}
