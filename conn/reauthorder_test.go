package conn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/respire/respire/internal/testkit"
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
	testkit.WaitFor(t, "EXEC and the AUTH behind it queued", func() bool { q, _ := c.counts(); return q == 2 })
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
	discardThenAuthWritten(t, c, f, cr)
	f.Reply("+OK\r\n")
}

// discardThenAuthWritten ends the open transaction with DISCARD and reads the AUTH
// that must go behind it, as cr's user, leaving it unanswered.
func discardThenAuthWritten(t *testing.T, c *Conn, f *fakeServer, cr Credentials) {
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
}

// laterDeferredWhileRetried sets up a Reauth as u2 (first) whose AUTH a take-back
// sends again, held before it takes the lock (g), and a later Reauth as cr3 with ctx3
// (second) deferred meanwhile in the transaction still open, whose SET is answered.
func laterDeferredWhileRetried(t *testing.T, ctx3 context.Context, cr3 Credentials) (c *Conn, f *fakeServer, g *gatedCtx, first, second chan error) {
	t.Helper()
	c, f = dialFakeRotating(t)
	openTx(t, c, f)
	set := blockWriter(t, c)
	g = newGatedCtx(t)
	first = make(chan error, 1)
	go func() { first <- c.Reauth(g, cred2) }()
	waitDeferredAuth(t, c)
	execTakenBackBehind(t, c, func() { g.armed.Store(true) })
	<-g.entered // u2 goes again, and has not taken the lock yet
	second = make(chan error, 1)
	go func() { second <- c.Reauth(ctx3, cr3) }()
	waitDeferredAuth(t, c)
	f.Expect("SET", "k", "v")
	f.Reply("+QUEUED\r\n")
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	return c, f, g, first, second
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
			c, f, g, first, second := laterDeferredWhileRetried(t, context.Background(), cred3)
			if tt.closeFirst {
				discardThenAuthAs(t, c, f, cred3)
				if err := <-second; err != nil {
					t.Fatalf("Reauth(u3): %v", err)
				}
			}
			g.open()
			testkit.WaitFor(t, "a Reauth to return, or u2's AUTH to be queued", func() bool {
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
		testkit.WaitFor(t, "u3's AUTH queued behind u2's", func() bool { q, _ := c.counts(); return q == 3 })
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
	testkit.WaitFor(t, "u2 to return or be deferred again", func() bool {
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

// TestReauthRecordedInWireOrder: two Reauths pipelined, A's AUTH then B's, both taken
// by the server: the connection is B's, whatever order their callers run in. Before,
// each caller recorded its own credentials as it ran, and A's could run last.
func TestReauthRecordedInWireOrder(t *testing.T) {
	c, f := dialFakeRotating(t)
	const rounds = 5000
	wrong := 0
	for i := range rounds {
		a := Credentials{Username: fmt.Sprintf("a%d", i), Password: "pa"}
		b := Credentials{Username: fmt.Sprintf("b%d", i), Password: "pb"}
		ea, eb := make(chan error, 1), make(chan error, 1)
		go func() { ea <- c.Reauth(context.Background(), a) }()
		f.Expect("AUTH", a.Username, "pa")
		go func() { eb <- c.Reauth(context.Background(), b) }()
		f.Expect("AUTH", b.Username, "pb")
		f.Reply("+OK\r\n+OK\r\n")
		if err := <-ea; err != nil {
			t.Fatal(err)
		}
		if err := <-eb; err != nil {
			t.Fatal(err)
		}
		if !c.AuthenticatedWith(b) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d/%d rounds: the server took B's AUTH last, but the connection records A", wrong, rounds)
	}
}

// TestReauthYieldsToWrittenReauth: a Reauth (u2) whose AUTH a take-back sends again
// yields to a later one (u3) whose AUTH was written, even though u3's caller gave up
// before its reply came: the server may have taken it, or did. Before, u3 counted for
// nothing once its context ended, and the server took it before u2's AUTH went again.
func TestReauthYieldsToWrittenReauth(t *testing.T) {
	cred3 := Credentials{Username: "u3", Password: "p3"}
	for _, tt := range []struct {
		name      string
		replyRead bool // u3's +OK is read before u2 goes again
	}{
		{"reply read", true},
		{"reply not read yet", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx3, cancel3 := context.WithCancel(context.Background())
			c, f, g, first, second := laterDeferredWhileRetried(t, ctx3, cred3)
			discardThenAuthWritten(t, c, f, cred3)
			cancel3()
			if err := <-second; !errors.Is(err, context.Canceled) {
				t.Fatalf("Reauth(u3): %v, want cancelled", err)
			}
			inflight := 1 // u3's AUTH
			if tt.replyRead {
				f.Reply("+OK\r\n")
				testkit.WaitFor(t, "u3's reply read", func() bool { q, n := c.counts(); return q+n == 0 })
				inflight = 0
			}
			g.open()
			testkit.WaitFor(t, "u2 to return or send", func() bool {
				q, n := c.counts()
				return len(first) > 0 || q > 0 || n > inflight
			})
			if len(first) == 0 {
				t.Fatalf("u2's AUTH went again after u3's was written")
			}
			if err := <-first; !errors.Is(err, errReauthSuperseded) {
				t.Fatalf("Reauth(u2): %v, want superseded", err)
			}
			if !tt.replyRead {
				f.Reply("+OK\r\n")
				testkit.WaitFor(t, "u3's reply read", func() bool { q, n := c.counts(); return q+n == 0 })
			}
			if !c.AuthenticatedWith(cred3) {
				t.Errorf("the server took u3's AUTH last, but the connection does not record u3")
			}
		})
	}
}

// TestReauthBehindCallersAuth: a caller's own AUTH, HELLO or RESET queued behind a
// Reauth's AUTH leaves the authentication unknown, though the Reauth's +OK is read
// after it was queued. Before, that +OK recorded the Reauth's credentials.
func TestReauthBehindCallersAuth(t *testing.T) {
	for _, tt := range []struct {
		name  string
		args  []string
		reply string
	}{
		{"AUTH", []string{"AUTH", "other", "po"}, "+OK\r\n"},
		{"HELLO with AUTH", []string{"HELLO", "3", "AUTH", "other", "po"}, "%1\r\n+proto\r\n:3\r\n"},
		{"RESET", []string{"RESET"}, "+RESET\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			reauth := make(chan error, 1)
			go func() { reauth <- c.Reauth(context.Background(), cred2) }()
			f.Expect("AUTH", "u2", "p2")
			own := make(chan error, 1)
			args := make([]any, len(tt.args))
			for i, a := range tt.args {
				args[i] = a
			}
			go func() { _, err := c.Do(context.Background(), args...); own <- err }()
			f.Expect(tt.args...)
			f.Reply("+OK\r\n" + tt.reply)
			if err := <-reauth; err != nil {
				t.Fatal(err)
			}
			if err := <-own; err != nil {
				t.Fatal(err)
			}
			if c.AuthenticatedWith(cred2) {
				t.Errorf("the caller's %s went after the Reauth's AUTH, but the connection records u2", tt.name)
			}
			// A Reauth queued after it is recorded again.
			go func() { reauth <- c.Reauth(context.Background(), cred2) }()
			f.Expect("AUTH", "u2", "p2")
			f.Reply("+OK\r\n")
			if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
				t.Errorf("Reauth(u2) after it: %v, recorded: %v", err, c.AuthenticatedWith(cred2))
			}
		})
	}
}

// panickyCtx is a context whose Err panics once armed.
type panickyCtx struct {
	context.Context
	armed atomic.Bool
}

func (p *panickyCtx) Err() error {
	if p.armed.Load() {
		panic("panickyCtx")
	}
	return p.Context.Err()
}

// TestReauthForgottenWhenItPanics: a Reauth that panics as it goes again after a
// take-back (its context's Err panics) is no longer counted live. Before, it was left
// in auth.live, and counted as a later Reauth by every older one from then on.
func TestReauthForgottenWhenItPanics(t *testing.T) {
	c, f := dialFakeRotating(t)
	openTx(t, c, f)
	set := blockWriter(t, c)
	ctx := &panickyCtx{Context: context.Background()}
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_ = c.Reauth(ctx, cred2)
	}()
	waitDeferredAuth(t, c)
	execTakenBackBehind(t, c, func() { ctx.armed.Store(true) })
	if p := <-panicked; p == nil {
		t.Fatal("Reauth returned without the panic")
	}
	c.mu.Lock()
	live := len(c.auth.live)
	c.mu.Unlock()
	if live != 0 {
		t.Errorf("%d Reauths counted live after the only one panicked", live)
	}
	f.Expect("SET", "k", "v")
	f.Reply("+QUEUED\r\n")
	if err := <-set; err != nil {
		t.Fatal(err)
	}
}
