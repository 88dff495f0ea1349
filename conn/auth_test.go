package conn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// recorder is an observer that keeps the connection events it is given.
type recorder struct {
	observe.Base
	mu     sync.Mutex
	events []observe.Conn
}

func (r *recorder) Conn(e observe.Conn) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) kinds() []observe.ConnKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.ConnKind
	for _, e := range r.events {
		out = append(out, e.Kind)
	}
	return out
}

func (r *recorder) last() observe.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[len(r.events)-1]
}

// twoUsers starts a server with the ACL users u1 and u2, both allowed everything.
func twoUsers(t *testing.T) *testserver.Server {
	return testserver.Start(t, testserver.Config{Users: []testserver.User{
		{Name: "u1", Password: "p1", Rules: []string{"+@all", "~*", "&*"}},
		{Name: "u2", Password: "p2", Rules: []string{"+@all", "~*", "&*"}},
	}})
}

var (
	cred1 = Credentials{Username: "u1", Password: "p1"}
	cred2 = Credentials{Username: "u2", Password: "p2"}
)

// rotating is Options authenticating as cr through a Credentials provider: the
// connection follows transactions for Reauth.
func rotating(o Options, cr Credentials) Options {
	o.Credentials = func(context.Context) (Credentials, error) { return cr, nil }
	return o
}

// dialFakeRotating is dialFake with rotating credentials cred1 (RESP3).
func dialFakeRotating(t *testing.T) (*Conn, *fakeServer) {
	return dialFake(t, rotating(Options{}, cred1), func(f *fakeServer) {
		f.Expect("HELLO", "3", "AUTH", "u1", "p1")
		f.Reply("%4\r\n+server\r\n+redis\r\n+version\r\n+7.0.15\r\n+proto\r\n:3\r\n+id\r\n:42\r\n")
	})
}

func whoami(t *testing.T, c *Conn) string {
	t.Helper()
	v, err := c.Do(context.Background(), "ACL", "WHOAMI")
	if err != nil {
		t.Fatalf("ACL WHOAMI: %v", err)
	}
	s, _ := v.Text()
	return s
}

// serverUser is the user the server says c is authenticated as (CLIENT LIST), asked on
// a connection of the harness's own.
func serverUser(t *testing.T, srv *testserver.Server, c *Conn) string {
	t.Helper()
	id, _ := c.ID()
	info := srv.Do(t, "CLIENT", "LIST", "ID", strconv.FormatInt(id, 10))
	for f := range strings.FieldsSeq(info) {
		if u, ok := strings.CutPrefix(f, "user="); ok {
			return u
		}
	}
	t.Fatalf("no user in %q", info)
	return ""
}

func TestDialAsksTheCredentialsProvider(t *testing.T) {
	srv := twoUsers(t)
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			var asked atomic.Int32
			var ctxHadDeadline atomic.Bool
			c := dialT(t, srv.Addr(), Options{Protocol: proto, Credentials: func(ctx context.Context) (Credentials, error) {
				asked.Add(1)
				_, ok := ctx.Deadline()
				ctxHadDeadline.Store(ok)
				return cred2, nil
			}})
			if got := whoami(t, c); got != "u2" {
				t.Errorf("authenticated as %q, want u2", got)
			}
			if asked.Load() != 1 || !ctxHadDeadline.Load() {
				t.Errorf("provider asked %d times (deadline %v), want once with the dial's deadline", asked.Load(), ctxHadDeadline.Load())
			}
			if !c.AuthenticatedWith(cred2) || c.AuthenticatedWith(cred1) {
				t.Error("AuthenticatedWith does not say u2")
			}
		})
	}
}

// TestDialEndsTheProvidersContext: the provider's ctx ends as Dial returns, dialled
// or failed; the client's credential rotation waits on it for dials in progress.
func TestDialEndsTheProvidersContext(t *testing.T) {
	srv := twoUsers(t)
	for _, tc := range []struct {
		name string
		cr   Credentials
		ok   bool
	}{{"dialled", cred1, true}, {"refused", Credentials{Username: "u1", Password: "wrong"}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var asked context.Context
			c, err := Dial(context.Background(), srv.Addr(), Options{Credentials: func(ctx context.Context) (Credentials, error) {
				asked = ctx
				return tc.cr, nil
			}})
			if (err == nil) != tc.ok {
				t.Fatalf("Dial: %v, want success %v", err, tc.ok)
			}
			if c != nil {
				defer c.Close()
			}
			select {
			case <-asked.Done():
			default:
				t.Error("the provider's context still live after Dial returned")
			}
		})
	}
}

func TestDialCredentialsErrors(t *testing.T) {
	srv := twoUsers(t)
	errProvider := errors.New("token service down")
	tests := []struct {
		name    string
		opts    Options
		want    []error
		dialled bool
	}{
		{"provider error", Options{Credentials: func(context.Context) (Credentials, error) { return Credentials{}, errProvider }},
			[]error{ErrCredentials, errProvider}, false},
		{"no password", Options{Credentials: func(context.Context) (Credentials, error) { return Credentials{Username: "u1"}, nil }},
			[]error{ErrCredentials, ErrNoPassword}, false},
		{"with Username", Options{Username: "u1", Password: "p1", Credentials: func(context.Context) (Credentials, error) { return cred1, nil }},
			[]error{ErrInvalidOptions}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dialled := false
			tt.opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled = true
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			c, err := Dial(context.Background(), srv.Addr(), tt.opts)
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v does not match %v", err, w)
				}
			}
			if dialled != tt.dialled {
				t.Errorf("dialled %v, want %v", dialled, tt.dialled)
			}
		})
	}
}

func TestOnConnect(t *testing.T) {
	srv := twoUsers(t)
	t.Run("runs after the handshake", func(t *testing.T) {
		var ran []*Conn
		c := dialT(t, srv.Addr(), Options{Username: "u1", Password: "p1", OnConnect: func(ctx context.Context, cn *Conn) error {
			ran = append(ran, cn)
			_, err := cn.Do(ctx, "CLIENT", "SETNAME", "hooked")
			return err
		}})
		if len(ran) != 1 || ran[0] != c {
			t.Fatalf("OnConnect ran on %v, want once on the dialled connection", ran)
		}
		if v, _ := c.Do(context.Background(), "CLIENT", "GETNAME"); v.String() != `"hooked"` {
			t.Errorf("name %s: the hook's command did not run as u1 after the handshake", v)
		}
	})
	t.Run("error fails the dial", func(t *testing.T) {
		errHook := errors.New("hook refused")
		rec := &recorder{}
		var hooked *Conn
		_, err := Dial(context.Background(), srv.Addr(), Options{Observer: rec, OnConnect: func(_ context.Context, cn *Conn) error {
			hooked = cn
			return errHook
		}})
		if !errors.Is(err, errHook) {
			t.Fatalf("dial error %v, want the hook's", err)
		}
		if hooked == nil || hooked.Err() == nil {
			t.Error("the hook's connection was not closed")
		}
		if k := rec.kinds(); len(k) != 1 || k[0] != observe.ConnDialFailed || !errors.Is(rec.last().Err, errHook) {
			t.Errorf("events %v, want one dial_failed with the hook's error", k)
		}
	})
}

func TestReauth(t *testing.T) {
	srv := twoUsers(t)
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			rec := &recorder{}
			c := dialT(t, srv.Addr(), Options{Protocol: proto, Username: "u1", Password: "p1", Observer: rec})
			ctx := context.Background()
			if err := c.Reauth(ctx, Credentials{Username: "u2", Password: "wrong"}); !resp.HasCode(err, "WRONGPASS") {
				t.Errorf("wrong password: %v, want WRONGPASS", err)
			}
			if got := whoami(t, c); got != "u1" || !c.AuthenticatedWith(cred1) {
				t.Errorf("after a refused Reauth: %q, want still u1", got)
			}
			if err := c.Reauth(ctx, cred2); err != nil {
				t.Fatal(err)
			}
			if got := whoami(t, c); got != "u2" || !c.AuthenticatedWith(cred2) {
				t.Errorf("after Reauth: %q, want u2", got)
			}
			k := rec.kinds()
			want := []observe.ConnKind{observe.ConnDialed, observe.ConnReauth, observe.ConnReauth}
			if fmt.Sprint(k) != fmt.Sprint(want) {
				t.Errorf("events %v, want %v", k, want)
			}
			if e := rec.last(); e.Err != nil || e.Duration <= 0 || e.Addr != srv.Addr() {
				t.Errorf("reauth event %+v", e)
			}
		})
	}
}

// TestReauthInOrder: commands queued before the AUTH run as the old user, those after
// as the new, also when the AUTH waits behind a blocking command.
func TestReauthInOrder(t *testing.T) {
	srv := twoUsers(t)
	c := dialT(t, srv.Addr(), Options{Username: "u1", Password: "p1"})
	ctx := context.Background()
	payload, _ := resp.AppendCommand(nil, "BLPOP", "reauth:none", "0.2")
	payload, _ = resp.AppendCommand(payload, "ACL", "WHOAMI")
	before, err := c.StartEncoded(ctx, 2, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reauth(ctx, cred2); err != nil {
		t.Fatal(err)
	}
	res, err := before.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := res[1].Value.Text(); got != "u1" || !res[0].Value.IsNull() {
		t.Errorf("before the AUTH: BLPOP %s, WHOAMI %q; want null and u1", res[0].Value, got)
	}
	if got := whoami(t, c); got != "u2" {
		t.Errorf("after: %q, want u2", got)
	}
}

// TestReauthNeverInsideMulti: an AUTH asked for during a transaction goes behind its
// EXEC or DISCARD, so the transaction's replies are the caller's alone.
func TestReauthNeverInsideMulti(t *testing.T) {
	srv := twoUsers(t)
	tests := []struct {
		name string
		open func(ctx context.Context, c *Conn) error
		end  string
	}{
		{"Do MULTI, EXEC", func(ctx context.Context, c *Conn) error { _, err := c.Do(ctx, "multi"); return err }, "EXEC"},
		{"Do MULTI, DISCARD", func(ctx context.Context, c *Conn) error { _, err := c.Do(ctx, "MULTI"); return err }, "DISCARD"},
		{"DoMulti MULTI SET, EXEC", func(ctx context.Context, c *Conn) error {
			_, err := c.DoMulti(ctx, []any{[]byte("MULTI")}, []any{"SET", "tx:a", "1"})
			return err
		}, "EXEC"},
	}
	for _, proto := range protocols {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, tt.name), func(t *testing.T) {
				c := dialT(t, srv.Addr(), rotating(Options{Protocol: proto}, cred1))
				ctx := context.Background()
				if err := tt.open(ctx, c); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- c.Reauth(ctx, cred2) }()
				testkit.WaitFor(t, "the AUTH to be deferred", func() bool {
					c.mu.Lock()
					defer c.mu.Unlock()
					return c.auth.deferred != nil
				})
				if v, err := c.Do(ctx, "SET", "tx:b", "2"); err != nil || v.String() != `"QUEUED"` {
					t.Fatalf("SET in the transaction: %s %v", v, err)
				}
				select {
				case err := <-done:
					t.Fatalf("Reauth returned (%v) before the transaction ended", err)
				default:
				}
				v, err := c.Do(ctx, tt.end)
				if err != nil {
					t.Fatal(err)
				}
				if tt.end == "EXEC" {
					replies, _ := v.Array()
					for _, r := range replies {
						if s, _ := r.Text(); s != "OK" {
							t.Errorf("EXEC replies %s: something else ran in the transaction", v)
						}
					}
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if got := serverUser(t, srv, c); got != "u2" || !c.AuthenticatedWith(cred2) {
					t.Errorf("after the transaction: user %q, want u2", got)
				}
			})
		}
	}
}

func TestReauthDeferredGivesUp(t *testing.T) {
	srv := twoUsers(t)
	c := dialT(t, srv.Addr(), rotating(Options{}, cred1))
	if _, err := c.Do(context.Background(), "MULTI"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Reauth(ctx, cred2); !errors.Is(err, ErrNotSent) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reauth whose ctx ended inside the transaction: %v, want not sent", err)
	}
	v, err := c.Do(context.Background(), "EXEC")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := v.Array(); len(n) != 0 {
		t.Errorf("EXEC %s, want an empty transaction", v)
	}
	if got := serverUser(t, srv, c); got != "u1" {
		t.Errorf("user %q, want u1: the given-up AUTH was sent", got)
	}
}

func TestReauthSubscriptions(t *testing.T) {
	srv := twoUsers(t)
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			pushes := make(chan resp.Value, 16)
			c := dialT(t, srv.Addr(), Options{Protocol: proto, Username: "u1", Password: "p1",
				PushHandler: func(v resp.Value) { pushes <- v }})
			ctx := context.Background()
			c.SetPubSubMode(true)
			if err := c.Send(ctx, "SUBSCRIBE", "ch"); err != nil {
				t.Fatal(err)
			}
			<-pushes // the confirmation
			err := c.Reauth(ctx, cred2)
			want := "u2"
			if proto == 2 {
				want = "u1"
				if !errors.Is(err, ErrReauthPubSub) {
					t.Errorf("RESP2 pub/sub Reauth: %v, want ErrReauthPubSub", err)
				}
			} else if err != nil {
				t.Errorf("RESP3 subscription Reauth: %v", err)
			}
			if got := serverUser(t, srv, c); got != want {
				t.Errorf("user %q, want %q", got, want)
			}
			srv.Do(t, "PUBLISH", "ch", "hello")
			select {
			case v := <-pushes:
				if !strings.Contains(v.String(), "hello") {
					t.Errorf("message %s", v)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no message after Reauth: the subscription broke")
			}
		})
	}
}

// TestReauthBeforeRESP2Subscribe: replies to commands queued before the owner switched
// to pub/sub mode (an AUTH among them) reach their callers, though they arrive when
// frames are taken for messages.
func TestReauthBeforeRESP2Subscribe(t *testing.T) {
	srv := twoUsers(t)
	c := dialT(t, srv.Addr(), Options{Protocol: 2, Username: "u1", Password: "p1", PushHandler: func(resp.Value) {}})
	ctx := context.Background()
	payload, _ := resp.AppendCommand(nil, "BLPOP", "reauth:none", "0.5")
	blocked, err := c.StartEncoded(ctx, 1, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Reauth(ctx, cred2) }()
	testkit.WaitFor(t, "the AUTH to be queued", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.r.inflight.len()+len(c.w.queued) == 2
	})
	c.SetPubSubMode(true) // while BLPOP still blocks
	if res, err := blocked.Wait(); err != nil || !res[0].Value.IsNull() {
		t.Fatalf("BLPOP: %v %v", res, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Reauth: %v", err)
	}
}

func TestConnEvents(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{RequirePass: "right"})
	rec := &recorder{}
	if _, err := Dial(context.Background(), srv.Addr(), Options{Password: "wrong", Observer: rec}); err == nil {
		t.Fatal("dial with a wrong password succeeded")
	}
	c, err := Dial(context.Background(), srv.Addr(), Options{Password: "right", Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	closed, err := Dial(context.Background(), srv.Addr(), Options{Password: "right", Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	id, _ := c.ID()
	srv.Do(t, "CLIENT", "KILL", "ID", strconv.FormatInt(id, 10))
	if _, err := c.Do(context.Background(), "PING"); err == nil {
		t.Fatal("PING on a killed connection succeeded")
	}
	c.Close()
	want := []observe.ConnKind{observe.ConnDialFailed, observe.ConnDialed, observe.ConnDialed, observe.ConnLost}
	if k := rec.kinds(); fmt.Sprint(k) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v (no lost for Close)", k, want)
	}
	for i, e := range rec.events {
		if e.Addr != srv.Addr() || (i < 3 && e.Duration <= 0) || (e.Kind != observe.ConnDialed && e.Err == nil) {
			t.Errorf("event %d: %+v", i, e)
		}
		if e.Err != nil && strings.Contains(e.Err.Error(), "wrong") {
			t.Errorf("event %d carries the password: %v", i, e.Err)
		}
	}
}

type (
	verbName  string
	verbBytes []byte
)

func TestVerbOf(t *testing.T) {
	tests := []struct {
		args []any
		want txVerb
	}{
		{[]any{"GET", "k"}, txNone},
		{[]any{"multi"}, txOpen},
		{[]any{[]byte("Exec")}, txClose},
		{[]any{"DISCARD"}, txDiscard},
		{[]any{"EXISTS", "k"}, txNone},
		{[]any{"RESET"}, txReset},
		{[]any{"auth", "x"}, txAuthAny},
		{[]any{"HELLO", 3}, txAuthAny},
		{[]any{"MULTIX"}, txNone},
		{[]any{42}, txNone},
		{nil, txNone},
		// A name of a named string or []byte type is still a name (issue 23, point 2).
		{[]any{verbName("MULTI")}, txOpen},
		{[]any{verbBytes("exec")}, txClose},
		{[]any{verbName("GET"), "k"}, txNone},
	}
	for _, tt := range tests {
		if got := verbOf(tt.args); got != tt.want {
			t.Errorf("verbOf(%v) = %d, want %d", tt.args, got, tt.want)
		}
	}
}

// TestAllocWithObserver: an observer costs a command nothing; only dials, losses and
// re-authentications are reported.
func TestAllocWithObserver(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	c := dialT(t, srv.Addr(), Options{Observer: &recorder{}})
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "alloc:obs", "v"); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() { c.Do(ctx, "GET", "alloc:obs") })
	if allocs > 0.1 {
		t.Errorf("%.2f allocations per GET with an observer, want 0", allocs)
	}
}

// TestReauthBehindTakenBackExec: an EXEC given up before it was written leaves the
// transaction open, so the AUTH that was queued behind it is taken back (and never
// seen by the server inside the transaction) and deferred again: the Reauth goes
// behind the transaction's real end.
func TestReauthBehindTakenBackExec(t *testing.T) {
	c, f, reauth := deferredReauth(t)
	set := blockWriter(t, c)
	cancelQueued(t, c, 0, "EXEC")
	redeferredThenAuth(t, c, f, set, reauth)
}

// discardThenAuth ends the open transaction with DISCARD and checks that the deferred
// Reauth to cred2, whose result comes on reauth, goes once the DISCARD is accepted.
func discardThenAuth(t *testing.T, c *Conn, f *fakeServer, reauth chan error) {
	t.Helper()
	discardThenAuthAs(t, c, f, cred2)
	if err := <-reauth; err != nil || !c.AuthenticatedWith(cred2) {
		t.Fatalf("Reauth: %v", err)
	}
}

// TestReauthBehindTakenBackExecRace: the waiter of an AUTH queued behind an EXEC has
// its ctx end as the EXEC is taken back, both waking at once; in every interleaving
// the Reauth returns (not sent, or sent) and nothing panics under the lock.
func TestReauthBehindTakenBackExecRace(t *testing.T) {
	for i := 0; i < 50; i++ {
		c, f := dialFakeRotating(t)
		ctx := context.Background()
		openTx(t, c, f)
		rctx, rcancel := context.WithCancel(ctx)
		reauth := make(chan error, 1)
		go func() { reauth <- c.Reauth(rctx, cred2) }()
		waitDeferredAuth(t, c)
		set := blockWriter(t, c)
		ectx, ecancel := context.WithCancel(ctx)
		exec := make(chan error, 1)
		go func() { _, err := c.Do(ectx, "EXEC"); exec <- err }()
		testkit.WaitFor(t, "EXEC and AUTH queued", func() bool { q, _ := c.counts(); return q == 2 })
		c.mu.Lock() // both waiters wake while the lock is held, then race for it
		rcancel()
		ecancel()
		time.Sleep(time.Millisecond)
		c.mu.Unlock()
		if err := <-exec; !errors.Is(err, ErrNotSent) {
			t.Fatalf("iteration %d: EXEC %v, want not sent", i, err)
		}
		if err := <-reauth; !errors.Is(err, ErrNotSent) {
			t.Fatalf("iteration %d: Reauth %v, want not sent", i, err)
		}
		f.Expect("SET", "k", "v")
		f.Reply("+QUEUED\r\n")
		<-set
		c.mu.Lock()
		q, inTx, deferred := len(c.w.queued), c.auth.inTx, c.auth.deferred
		c.mu.Unlock()
		if q != 0 || !inTx || deferred != nil {
			t.Fatalf("iteration %d: %d queued, inTx %v, deferred %v; want none, true, none", i, q, inTx, deferred != nil)
		}
		c.Close()
	}
}

// TestTransactionTakenBack: a MULTI or EXEC taken back before it was written leaves
// the transaction as it was, so the next Reauth neither goes into an open transaction
// nor waits for one that never opened.
func TestTransactionTakenBack(t *testing.T) {
	tests := []struct {
		name   string
		open   bool // a transaction is open before
		cancel string
	}{
		{"EXEC", true, "EXEC"},
		{"DISCARD", true, "DISCARD"},
		{"MULTI", false, "MULTI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, f := dialFakeRotating(t)
			ctx := context.Background()
			if tt.open {
				openTx(t, c, f)
			}
			set := blockWriter(t, c)
			cancelQueued(t, c, 0, tt.cancel)
			f.Expect("SET", "k", "v")
			f.Reply("+QUEUED\r\n")
			if err := <-set; err != nil {
				t.Fatal(err)
			}
			reauth := make(chan error, 1)
			go func() { reauth <- c.Reauth(ctx, cred2) }()
			if tt.open {
				waitDeferredAuth(t, c)
				return // the server's transaction is open: the AUTH waits for its end
			}
			f.Expect("AUTH", "u2", "p2")
			f.Reply("+OK\r\n")
			if err := <-reauth; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// openTx sends MULTI on c and answers it.
func openTx(t *testing.T, c *Conn, f *fakeServer) {
	t.Helper()
	multi := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), "MULTI"); multi <- err }()
	f.Expect("MULTI")
	f.Reply("+OK\r\n")
	if err := <-multi; err != nil {
		t.Fatal(err)
	}
}

func waitDeferredAuth(t *testing.T, c *Conn) {
	t.Helper()
	testkit.WaitFor(t, "the AUTH deferred", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.auth.deferred != nil
	})
}

// blockWriter has the writer left writing a SET into the pipe nobody reads yet, so
// that the next requests stay queued; the caller answers it.
func blockWriter(t *testing.T, c *Conn) chan error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { _, err := c.Do(context.Background(), "SET", "k", "v"); ch <- err }()
	testkit.WaitFor(t, "SET in flight", func() bool { _, n := c.counts(); return n == 1 })
	return ch
}

// cancelQueued queues args with a context it cancels before the request is written.
func cancelQueued(t *testing.T, c *Conn, queuedBefore int, args ...any) {
	t.Helper()
	queueCancellable(t, c, queuedBefore, fmt.Sprint(args...), doer(args...))()
}

// doer is a request that sends args with Do.
func doer(args ...any) func(ctx context.Context, c *Conn) error {
	return func(ctx context.Context, c *Conn) error { _, err := c.Do(ctx, args...); return err }
}

// queueCancellable has send queue a request on c from a goroutine of its own, with a
// context that the returned function cancels while the request is still queued (the
// writer being held, see blockWriter); that function then checks it was not sent.
func queueCancellable(t *testing.T, c *Conn, queuedBefore int, what string, send func(context.Context, *Conn) error) (takeBack func()) {
	t.Helper()
	cctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- send(cctx, c) }()
	testkit.WaitFor(t, what+" queued", func() bool { q, _ := c.counts(); return q > queuedBefore })
	return func() {
		t.Helper()
		cancel()
		if err := <-ch; !errors.Is(err, ErrNotSent) {
			t.Fatalf("cancelled %s: %v, want not sent", what, err)
		}
	}
}

// TestReauthEvents: a Reauth is reported with Err for a refusal only; the endings where
// the server refused nothing are not reported at all.
func TestReauthEvents(t *testing.T) {
	srv := twoUsers(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithTimeout(context.Background(), -1)
	defer cancelExpired()
	tests := []struct {
		name    string
		prepare func(c *Conn) context.Context
		cr      Credentials
		events  int
		refused bool
	}{
		{"success", func(*Conn) context.Context { return context.Background() }, cred2, 1, false},
		{"refused", func(*Conn) context.Context { return context.Background() }, Credentials{Username: "u2", Password: "wrong"}, 1, true},
		{"RESP2 pub/sub", func(c *Conn) context.Context { c.SetPubSubMode(true); return context.Background() }, cred2, 0, false},
		{"closed", func(c *Conn) context.Context { c.Close(); return context.Background() }, cred2, 0, false},
		{"cancelled", func(*Conn) context.Context { return cancelled }, cred2, 0, false},
		{"deadline", func(*Conn) context.Context { return expired }, cred2, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			c := dialT(t, srv.Addr(), Options{Protocol: 2, Username: "u1", Password: "p1", Observer: rec})
			err := c.Reauth(tt.prepare(c), tt.cr)
			var got []observe.Conn
			rec.mu.Lock()
			for _, e := range rec.events {
				if e.Kind == observe.ConnReauth {
					got = append(got, e)
				}
			}
			rec.mu.Unlock()
			if len(got) != tt.events {
				t.Fatalf("Reauth %v: %d events %+v, want %d", err, len(got), got, tt.events)
			}
			if tt.events > 0 && (got[0].Err != nil) != tt.refused {
				t.Errorf("event Err %v, want refused %v", got[0].Err, tt.refused)
			}
		})
	}
}

// TestPubSubModeErrorToPushHandler: in RESP2 pub/sub mode an error reply to a command
// sent without a reply (-MOVED to an SSUBSCRIBE) reaches the push handler when no call
// waits, as the subscription's handler relies on.
func TestPubSubModeErrorToPushHandler(t *testing.T) {
	pushes := make(chan resp.Value, 4)
	c, f := dialFake(t, Options{Protocol: 2, PushHandler: func(v resp.Value) { pushes <- v }}, func(f *fakeServer) {
		f.Expect("HELLO", "2")
		f.Reply("*8\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:42\r\n")
	})
	c.SetPubSubMode(true)
	sent := make(chan error, 1)
	go func() { sent <- c.Send(context.Background(), "SSUBSCRIBE", "ch") }() // the pipe writes as the fake reads
	f.Expect("SSUBSCRIBE", "ch")
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	f.Reply("-MOVED 1234 127.0.0.1:7001\r\n")
	select {
	case v := <-pushes:
		if !resp.HasCode(v.Err(), "MOVED") {
			t.Errorf("push handler got %s, want the MOVED error", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the MOVED error did not reach the push handler")
	}
}
