package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// Credential rotation through the client: Options.Credentials, Client.Reauthenticate and
// the renewal schedule against real servers whose ACL users stand for tokens (token N
// is the user tok-N). The rotation's own logic is tested with fakes in internal/reauth.

func tokName(n int) string { return fmt.Sprintf("tok-%d", n) }

func tokPass(n int) string { return fmt.Sprintf("pass-%d", n) }

func tokUser(n int) testserver.User {
	return testserver.User{Name: tokName(n), Password: tokPass(n), Rules: []string{"+@all", "~*", "&*"}}
}

// clientList returns the fields of each line of the server's CLIENT LIST.
func clientList(t *testing.T, srv *testserver.Server) []map[string]string {
	t.Helper()
	var out []map[string]string
	for line := range strings.Lines(srv.Do(t, "CLIENT", "LIST")) {
		f := map[string]string{}
		for kv := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		out = append(out, f)
	}
	return out
}

// clientConns returns the connections the server has open named name, by CLIENT ID,
// with the user each is authenticated as.
func clientConns(t *testing.T, srv *testserver.Server, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range clientList(t, srv) {
		if f["name"] == name {
			out[f["id"]] = f["user"]
		}
	}
	return out
}

// waitBlpop waits until the server shows a connection whose last command is BLPOP.
func waitBlpop(t *testing.T, srv *testserver.Server) {
	t.Helper()
	testkit.WaitFor(t, "a connection blocked in BLPOP", func() bool {
		return slices.ContainsFunc(clientList(t, srv), func(f map[string]string) bool { return f["cmd"] == "blpop" })
	})
}

// credentialFailures returns the ConnReauth errors rec was given that match
// conn.ErrCredentials, and the lines logs has of failed re-authentications.
func credentialFailures(rec *testkit.ConnEvents, logs *testkit.LogRecorder) (errs []error, lines []string) {
	errs = rec.Matching(conn.ErrCredentials)
	for _, l := range logs.Lines() {
		if strings.HasPrefix(l, "WARN respire: re-authentication failed") {
			lines = append(lines, l)
		}
	}
	return errs, lines
}

// tokenRig is a real server with the ACL user tok-1 and a client whose provider gives
// tok-N for the N of token.
type tokenRig struct {
	srv   *testserver.Server
	c     *respire.Client
	token atomic.Int32
}

// newTokenRig starts a tokenRig at tok-1 with a client of opts (Addrs and Credentials
// set here), which has dialled once.
func newTokenRig(t *testing.T, opts respire.Options) *tokenRig {
	t.Helper()
	g := &tokenRig{srv: testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})}
	g.token.Store(1)
	opts.Addrs = []string{g.srv.Addr()}
	opts.Credentials = tokenProvider(&g.token)
	g.c = testclient.New(t, opts)
	if _, err := g.c.Do(context.Background(), "PING"); err != nil {
		t.Fatal(err)
	}
	return g
}

// tokenProvider gives the credentials of the ACL user tok-N for the N token holds.
func tokenProvider(token *atomic.Int32) func(context.Context) (respire.Credentials, error) {
	return func(context.Context) (respire.Credentials, error) {
		n := int(token.Load())
		return respire.Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
}

// rotateTo creates the ACL user tok-n and has the provider give it from now on.
func (g *tokenRig) rotateTo(t *testing.T, n int) testserver.User {
	t.Helper()
	u := tokUser(n)
	g.srv.Do(t, append([]string{"ACL", "SETUSER", u.Name, "on", ">" + u.Password}, u.Rules...)...)
	g.token.Store(int32(n))
	return u
}

// blpopTimeout runs BLPOP key timeout through do on a goroutine, returns once the
// server shows it blocked, and sends on the channel its error, or one for a popped
// value: the key is expected to stay empty until the timeout.
func blpopTimeout(ctx context.Context, t *testing.T, srv *testserver.Server, do func(context.Context, ...any) (resp.Value, error), key, timeout string) <-chan error {
	t.Helper()
	blpop := make(chan error, 1)
	go func() {
		v, err := do(ctx, "BLPOP", key, timeout)
		if err == nil && !v.IsNull() {
			err = errors.New("BLPOP " + key + " popped " + v.String() + ", want a timeout")
		}
		blpop <- err
	}()
	waitBlpop(t, srv)
	return blpop
}

func TestCredentialsOptions(t *testing.T) {
	provider := func(context.Context) (respire.Credentials, error) { return respire.Credentials{Password: "p"}, nil }
	tests := []respire.Options{
		{Addrs: []string{"127.0.0.1:1"}, Credentials: provider, Username: "u", Password: "p"},
		{Addrs: []string{"127.0.0.1:1"}, Credentials: provider, Password: "p"},
	}
	for _, o := range tests {
		if _, err := respire.NewClient(context.Background(), o); !errors.Is(err, respire.ErrInvalidOptions) {
			t.Errorf("Credentials with Username %q, Password set: %v, want respire.ErrInvalidOptions", o.Username, err)
		}
	}
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}})
	if err := c.Reauthenticate(context.Background()); !errors.Is(err, respire.ErrInvalidOptions) {
		t.Errorf("Reauthenticate without Credentials: %v, want respire.ErrInvalidOptions", err)
	}
}

func TestCredentialsProviderErrorAtDial(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	errDown := errors.New("token service down")
	_, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()},
		Credentials: func(context.Context) (respire.Credentials, error) { return respire.Credentials{}, errDown }})
	if !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, errDown) || !errors.Is(err, conn.ErrNotSent) {
		t.Errorf("NewClient with a failing provider: %v, want conn.ErrCredentials, the provider's error and not sent", err)
	}
}

// TestOnConnectOncePerConnection: the hook runs on every connection the client opens,
// whatever it is for, once; its error fails NewClient and leaves nothing open.
func TestOnConnectOncePerConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})
	provider := func(context.Context) (respire.Credentials, error) {
		return respire.Credentials{Username: tokName(1), Password: tokPass(1)}, nil
	}
	var hooked atomic.Int32
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, ClientName: "hooked", Credentials: provider,
		ClientSideCache: &cache.Options{},
		OnConnect: func(ctx context.Context, cn *respire.Conn) error {
			hooked.Add(1)
			_, err := cn.Do(ctx, "ACL", "WHOAMI") // usable, authenticated
			return err
		}})
	ctx := context.Background()
	if _, err := c.DoCached(ctx, time.Minute, "GET", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Do(ctx, "BLPOP", "k:list", "0.01"); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, "ch")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := c.Reauthenticate(ctx); err != nil {
		t.Fatal(err)
	}
	conns := clientConns(t, srv, "hooked")
	if len(conns) < 4 || int(hooked.Load()) != len(conns) {
		t.Errorf("OnConnect ran %d times for %d connections (want at least 4: shared, tracking, dedicated, subscription)", hooked.Load(), len(conns))
	}

	errHook := errors.New("set-up refused")
	_, err = respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, ClientName: "refused", Credentials: provider,
		OnConnect: func(context.Context, *respire.Conn) error { return errHook }})
	if !errors.Is(err, errHook) {
		t.Fatalf("NewClient with a failing OnConnect: %v, want its error", err)
	}
	testkit.WaitFor(t, "the refused connection to close", func() bool { return len(clientConns(t, srv, "refused")) == 0 })
}

// TestCredentialRotationLive rotates the credentials of a busy client three times
// (twice with Reauthenticate, once on the schedule) against a real server: token N is
// the ACL user tok-N. Each rotation creates tok-N+1, switches the provider, waits for
// the client to re-authenticate, checks that no connection is left as tok-N and
// deletes tok-N, which would kill any. Shared, tracking, subscription and dedicated
// connections (one checked out throughout, running BLPOP and MULTI/EXEC) are all in
// use meanwhile: no caller may see an error and no connection may be killed.
//
// On RESP2 there is no tracking connection (client-side caching needs RESP3), and no
// subscription: the server does not let a RESP2 subscriber re-authenticate.
func TestCredentialRotationLive(t *testing.T) {
	for _, proto := range protocols {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) { testLiveRotation(t, proto) })
	}
}

func testLiveRotation(t *testing.T, proto int) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})
	var token atomic.Int32
	token.Store(1)
	var shortLife atomic.Bool
	tokens := tokenProvider(&token)
	provider := func(ctx context.Context) (respire.Credentials, error) {
		cr, _ := tokens(ctx)
		if shortLife.Load() {
			cr.ExpiresAt = time.Now().Add(3 * time.Second) // renewed 1 s before: 2 s from now
		}
		return cr, nil
	}
	const name = "rotating"
	opts := respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto, Credentials: provider, ClientName: name}
	if proto == 3 {
		opts.ClientSideCache = &cache.Options{}
	}
	c := testclient.New(t, opts)
	ctx := context.Background()

	var (
		errMu  sync.Mutex
		errs   []error
		ops    atomic.Int64
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		failed = func(what string, err error) {
			errMu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
			errMu.Unlock()
		}
	)
	loop := func(what string, f func(i int) error) {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := f(i); err != nil {
					failed(what, err)
					return
				}
				ops.Add(1)
			}
		})
	}
	for g := range 16 {
		key := fmt.Sprintf("rot:%d", g)
		loop("GET/SET", func(i int) error {
			if _, err := c.Do(ctx, "SET", key, i); err != nil {
				return err
			}
			v, err := c.Do(ctx, "GET", key)
			if n, _ := v.Int(); err == nil && n != int64(i) {
				err = fmt.Errorf("GET %s = %s, want %d", key, v, i)
			}
			return err
		})
	}
	cached := func(i int) error {
		if i%10 == 0 {
			if _, err := c.Do(ctx, "SET", "rot:cached", i); err != nil {
				return err
			}
		}
		_, err := c.DoCached(ctx, time.Minute, "GET", "rot:cached")
		return err
	}
	if proto == 3 {
		loop("DoCached", cached)
	}
	loop("pooled BLPOP", func(int) error {
		_, err := c.Do(ctx, "BLPOP", "rot:pooled", "0.05")
		return err
	})
	cn, release, err := c.Dedicated(ctx, "rot:q")
	if err != nil {
		t.Fatal(err)
	}
	loop("dedicated BLPOP and MULTI", func(i int) error {
		if i%2 == 0 {
			_, err := cn.DoBlocking(ctx, "BLPOP", "rot:q", "0.05")
			return err
		}
		for j, cmd := range [][]any{{"MULTI"}, {"INCR", "rot:tx"}, {"INCR", "rot:tx"}} {
			if j == 2 {
				// Held open a while, so that re-authentications come during it.
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := cn.Do(ctx, cmd...); err != nil {
				return err
			}
		}
		v, err := cn.Do(ctx, "EXEC")
		if a, _ := v.Array(); err == nil && len(a) != 2 {
			err = fmt.Errorf("EXEC gave %s: something else ran in the transaction", v)
		}
		return err
	})
	var sub *respire.Subscription
	if proto == 3 {
		if sub, err = c.Subscribe(ctx, "rot:ch"); err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
	}
	// heard publishes payload until the subscription gets it: the first SUBSCRIBE may
	// not have reached the server yet.
	heard := func(payload string) {
		t.Helper()
		if sub == nil {
			return
		}
		timeout := time.After(5 * time.Second)
		for {
			if _, err := c.Do(ctx, "PUBLISH", "rot:ch", payload); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-sub.Messages():
				if m.Payload == payload {
					return
				}
			case <-time.After(100 * time.Millisecond):
			case <-timeout:
				t.Fatalf("the subscription did not get %q", payload)
			}
		}
	}
	heard("before")

	for n := 1; n <= 3; n++ {
		next := tokUser(n + 1)
		srv.Do(t, append([]string{"ACL", "SETUSER", next.Name, "on", ">" + next.Password}, next.Rules...)...)
		token.Store(int32(n + 1))
		shortLife.Store(n == 2) // tok-3 expires, so the third rotation is the schedule's
		before := ops.Load()
		if n < 3 {
			if err := c.Reauthenticate(ctx); err != nil {
				t.Fatalf("rotation %d: %v", n, err)
			}
		}
		var conns map[string]string
		deadline := time.Now().Add(15 * time.Second)
		for {
			conns = clientConns(t, srv, name)
			stale := 0
			for _, u := range conns {
				if u != next.Name {
					stale++
				}
			}
			if stale == 0 {
				break
			}
			if n < 3 || time.Now().After(deadline) {
				t.Fatalf("rotation %d: connections %v, want all %s", n, conns, next.Name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		srv.Do(t, "ACL", "DELUSER", tokName(n))
		after := clientConns(t, srv, name)
		for id := range conns {
			if _, ok := after[id]; !ok {
				t.Errorf("rotation %d: connection %s was killed by ACL DELUSER %s", n, id, tokName(n))
			}
		}
		heard(fmt.Sprintf("after %d", n))
		testkit.WaitFor(t, "traffic after the rotation", func() bool { return ops.Load() > before+100 })
		t.Logf("rotation %d: %d connections, all %s", n, len(conns), next.Name)
	}
	close(stop)
	wg.Wait()
	release(true)
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("%d operations", ops.Load())
}

// TestCredentialRotationCluster: on a Cluster every node's connections (shared,
// dedicated, tracking, and those the slot map is read on) follow the rotation.
func TestCredentialRotationCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true,
		Server: testserver.Config{Users: []testserver.User{tokUser(1)}}})
	var token atomic.Int32
	token.Store(1)
	provider := tokenProvider(&token)
	const name = "rotating-cluster"
	c := testclient.New(t, respire.Options{Addrs: cl.Seeds(), Cluster: true, Credentials: provider, ClientName: name,
		ClientSideCache: &cache.Options{}})
	ctx := context.Background()
	var (
		errMu sync.Mutex
		errs  []error
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("rot:%d:%d", g, i%16) // spread over the nodes
				_, err := c.Do(ctx, "SET", key, i)
				if err == nil {
					_, err = c.DoCached(ctx, time.Minute, "GET", key)
				}
				if err == nil && i%8 == 0 {
					_, err = c.Do(ctx, "BLPOP", key+":list", "0.01")
				}
				if err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
					return
				}
			}
		})
	}
	for n := 1; n <= 2; n++ {
		next := tokUser(n + 1)
		for _, node := range cl.Nodes() {
			node.Do(t, append([]string{"ACL", "SETUSER", next.Name, "on", ">" + next.Password}, next.Rules...)...)
		}
		token.Store(int32(n + 1))
		if err := c.Reauthenticate(ctx); err != nil {
			t.Fatalf("rotation %d: %v", n, err)
		}
		total := 0
		for _, node := range cl.Nodes() {
			conns := clientConns(t, node.Server, name)
			for id, u := range conns {
				if u != next.Name {
					t.Errorf("rotation %d: node %s connection %s is %s, want %s", n, node.Addr(), id, u, next.Name)
				}
			}
			node.Do(t, "ACL", "DELUSER", tokName(n))
			after := clientConns(t, node.Server, name)
			for id := range conns {
				if _, ok := after[id]; !ok {
					t.Errorf("rotation %d: node %s connection %s was killed", n, node.Addr(), id)
				}
			}
			total += len(conns)
		}
		t.Logf("rotation %d: %d connections over %d nodes", n, total, len(cl.Nodes()))
	}
	close(stop)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
}

// TestCredentialRotationSentinel: under Sentinel the provider authenticates the data
// nodes only (the Sentinels keep SentinelPassword), and a rotation reaches the
// master's connections.
func TestCredentialRotationSentinel(t *testing.T) {
	d := sentinelserver.Start(t, sentinelserver.Config{Replicas: -1, Sentinels: 1, SentinelPassword: "sentinel-pw"})
	master := d.Nodes[0]
	for n := 1; n <= 2; n++ {
		u := tokUser(n)
		master.Do(t, append([]string{"ACL", "SETUSER", u.Name, "on", ">" + u.Password}, u.Rules...)...)
	}
	var token atomic.Int32
	token.Store(1)
	provider := tokenProvider(&token)
	const name = "rotating-sentinel"
	c := testclient.New(t, respire.Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(), SentinelPassword: "sentinel-pw",
		Credentials: provider, ClientName: name})
	ctx := context.Background()
	if _, err := c.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	token.Store(2)
	if err := c.Reauthenticate(ctx); err != nil {
		t.Fatal(err)
	}
	conns := clientConns(t, master, name)
	for id, u := range conns {
		if u != tokName(2) {
			t.Errorf("master connection %s is %s, want %s", id, u, tokName(2))
		}
	}
	if len(conns) == 0 {
		t.Fatal("no connection of the client on the master")
	}
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatal(err)
	}
}

// TestCredentialsNoPasswordLive: a provider that gives a user and no password, and no
// error, fails a rotation as it fails a dial (conn.ErrCredentials and
// conn.ErrNoPassword), against a real server with ACL users: Reauthenticate says so,
// the schedule reports it to the Observer and the Logger at each retry, and every
// connection keeps its user.
func TestCredentialsNoPasswordLive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1), tokUser(2)}})
	var noPassword atomic.Bool
	var life atomic.Int64
	life.Store(int64(time.Hour))
	provider := func(context.Context) (respire.Credentials, error) {
		if noPassword.Load() {
			return respire.Credentials{Username: tokName(2)}, nil
		}
		return respire.Credentials{Username: tokName(1), Password: tokPass(1), ExpiresAt: time.Now().Add(time.Duration(life.Load()))}, nil
	}
	const name = "nopass"
	rec := &testkit.ConnEvents{Kind: observe.ConnReauth}
	logs := &testkit.LogRecorder{}
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Credentials: provider, ClientName: name,
		Observer: rec, Logger: slog.New(logs)})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Fatal(err)
	}
	conns := clientConns(t, srv, name)

	noPassword.Store(true)
	if err := c.Reauthenticate(ctx); !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, conn.ErrNoPassword) {
		t.Errorf("Reauthenticate with a provider giving no password: %v, want conn.ErrCredentials and conn.ErrNoPassword", err)
	}
	if other, err := respire.NewClient(ctx, respire.Options{Addrs: []string{srv.Addr()}, Credentials: provider}); err == nil {
		other.Close()
		t.Error("NewClient with a provider giving no password succeeded")
	} else if !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, conn.ErrNoPassword) {
		t.Errorf("NewClient with a provider giving no password: %v, want conn.ErrCredentials and conn.ErrNoPassword", err)
	}
	if errs, lines := credentialFailures(rec, logs); len(errs) != 1 || len(lines) != 1 {
		t.Errorf("Reauthenticate's failure reported %v, logged %q; want once each", errs, lines)
	}

	// Credentials due for renewal in a second, then a provider giving no password:
	// each of the schedule's asks fails, reported.
	noPassword.Store(false)
	life.Store(int64(2 * time.Second))
	if err := c.Reauthenticate(ctx); err != nil {
		t.Fatal(err)
	}
	noPassword.Store(true)
	testkit.WaitFor(t, "the schedule to report two more failures", func() bool {
		errs, lines := credentialFailures(rec, logs)
		return len(errs) >= 3 && len(lines) >= 3
	})
	after := clientConns(t, srv, name)
	for id := range conns {
		if u, ok := after[id]; !ok || u != tokName(1) {
			t.Errorf("connection %s is %q after the failed rotations, want %s", id, u, tokName(1))
		}
	}
	if _, err := c.Do(ctx, "PING"); err != nil {
		t.Errorf("PING after the failed rotations: %v", err)
	}
}

// TestReauthenticatePendingBehindBlockingCommand rotates the credentials of a client
// whose dedicated connection is blocked in BLPOP against a real server: the AUTH for
// that connection must wait behind the BLPOP, so Reauthenticate with a deadline
// shorter than the BLPOP's timeout reports respire.ErrReauthPending. Once the BLPOP has
// returned the connection follows on its own: no connection is left as the old user,
// and deleting that user (which would kill any connection still on it) kills none.
func TestReauthenticatePendingBehindBlockingCommand(t *testing.T) {
	const name = "pending"
	g := newTokenRig(t, respire.Options{ClientName: name})
	srv, c := g.srv, g.c
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	cn, release, err := c.Dedicated(ctx, "rot:pending")
	if err != nil {
		t.Fatal(err)
	}
	blpop := blpopTimeout(ctx, t, srv, cn.DoBlocking, "rot:pending", "1")

	next := g.rotateTo(t, 2)
	rctx, rcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = c.Reauthenticate(rctx)
	rcancel()
	if !errors.Is(err, respire.ErrReauthPending) {
		t.Errorf("Reauthenticate with a connection blocked in BLPOP: %v, want respire.ErrReauthPending", err)
	}

	if err := <-blpop; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	var conns map[string]string
	testkit.WaitFor(t, "every connection to be "+next.Name, func() bool {
		conns = clientConns(t, srv, name)
		for _, u := range conns {
			if u != next.Name {
				return false
			}
		}
		return len(conns) > 0
	})
	srv.Do(t, "ACL", "DELUSER", tokName(1))
	after := clientConns(t, srv, name)
	for id := range conns {
		if _, ok := after[id]; !ok {
			t.Errorf("connection %s was killed by ACL DELUSER %s", id, tokName(1))
		}
	}
	v, err := cn.Do(ctx, "ACL", "WHOAMI")
	if who, _ := v.Text(); err != nil || who != next.Name {
		t.Errorf("ACL WHOAMI on the dedicated connection: %s %v, want %s", v, err, next.Name)
	}
	release(true)
}

// TestReauthenticateWaitsBehindOlderRotation rotates twice while a pooled BLPOP blocks
// a connection for 1.5 s against a real server: the first rotation, with 200 ms, is
// pending; the second, with 5 s, waits for the connection to finish the first one's
// AUTH and brings it to the newest user before it returns. Every connection is then
// on that user, and deleting both older users kills none.
func TestReauthenticateWaitsBehindOlderRotation(t *testing.T) {
	const name = "behind"
	g := newTokenRig(t, respire.Options{ClientName: name})
	srv, c := g.srv, g.c
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	blpop := blpopTimeout(ctx, t, srv, c.Do, "rot:behind", "1.5")

	rotate := func(n int, d time.Duration) error {
		g.rotateTo(t, n)
		rctx, rcancel := context.WithTimeout(ctx, d)
		defer rcancel()
		return c.Reauthenticate(rctx)
	}
	if err := rotate(2, 200*time.Millisecond); !errors.Is(err, respire.ErrReauthPending) {
		t.Errorf("first Reauthenticate with a connection blocked in BLPOP: %v, want respire.ErrReauthPending", err)
	}
	if err := rotate(3, 5*time.Second); err != nil {
		t.Errorf("second Reauthenticate, 5 s for a BLPOP of 1.5 s: %v, want it to wait", err)
	}
	conns := clientConns(t, srv, name)
	for id, u := range conns {
		if u != tokName(3) {
			t.Errorf("as the second Reauthenticate returned, connection %s is %s, want %s", id, u, tokName(3))
		}
	}
	if err := <-blpop; err != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	srv.Do(t, "ACL", "DELUSER", tokName(1), tokName(2))
	after := clientConns(t, srv, name)
	for id := range conns {
		if _, ok := after[id]; !ok {
			t.Errorf("connection %s was killed by ACL DELUSER of the older users", id)
		}
	}
}
