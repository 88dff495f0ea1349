package respire

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
	"testing/synctest"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// fakeAuthConn is a connection as the rotation sees it: it records its
// re-authentications, at what time, and fails them with err.
type fakeAuthConn struct {
	mu       sync.Mutex
	cur      Credentials
	err      error
	block    chan struct{} // when set, a Reauth waits for it to close (a blocking command ahead)
	delay    time.Duration // each Reauth takes this long (within its ctx)
	failOnce bool          // err is returned once
	reauths  []string      // "user@elapsed"
	start    time.Time
	done     chan struct{}
}

func newFakeAuthConn(cr Credentials, start time.Time) *fakeAuthConn {
	return &fakeAuthConn{cur: cr, start: start, done: make(chan struct{})}
}

func (f *fakeAuthConn) Reauth(ctx context.Context, cr Credentials) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reauths = append(f.reauths, fmt.Sprintf("%s@%v", cr.Username, time.Since(f.start)))
	if f.delay > 0 {
		f.mu.Unlock()
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
		}
		f.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if block := f.block; block != nil {
		f.mu.Unlock()
		select {
		case <-block:
		case <-ctx.Done():
		}
		f.mu.Lock()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if f.err != nil {
		err := f.err
		if f.failOnce {
			f.err = nil
		}
		return err
	}
	f.cur = cr
	return nil
}

func (f *fakeAuthConn) AuthenticatedWith(cr Credentials) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur == cr
}

func (f *fakeAuthConn) Done() <-chan struct{} { return f.done }

func (f *fakeAuthConn) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reauths)
}

// scriptedProvider answers each ask with the next step of its script, ExpiresAt
// counted from the ask, and records when it was asked.
type scriptedProvider struct {
	mu    sync.Mutex
	start time.Time
	steps []providerStep
	asked []time.Duration
}

type providerStep struct {
	user       string
	life       time.Duration // 0: never expires
	err        error
	noPassword bool // the user alone, and no error
}

func (p *scriptedProvider) provide(context.Context) (Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, time.Since(p.start))
	if len(p.steps) == 0 {
		return Credentials{}, errors.New("script exhausted")
	}
	s := p.steps[0]
	p.steps = p.steps[1:]
	if s.err != nil {
		return Credentials{}, s.err
	}
	cr := Credentials{Username: s.user, Password: s.user + "-pass"}
	if s.noPassword {
		cr.Password = ""
	}
	if s.life > 0 {
		cr.ExpiresAt = time.Now().Add(s.life)
	}
	return cr, nil
}

// reauthRecorder keeps the ConnReauth events an observer is given.
type reauthRecorder struct {
	observe.Base
	mu   sync.Mutex
	errs []error
}

func (r *reauthRecorder) Conn(e observe.Conn) {
	if e.Kind != observe.ConnReauth {
		return
	}
	r.mu.Lock()
	r.errs = append(r.errs, e.Err)
	r.mu.Unlock()
}

// TestCredentialSchedule follows the schedule through a script: renewal at
// ExpiresAt − max(10% of the life, 1 s), retries with a doubling backoff after
// provider failures (each reported), none for credentials without expiry; dead
// connections are dropped, a RESP2 subscription's refusal is no failure.
func TestCredentialSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		errDown := errors.New("token service down")
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second}, // the dial: renewed at 90 s
			{user: "tok-2", life: 10 * time.Second},  // at 90 s: renewed 1 s before its end, at 99 s
			{err: errDown},                           // at 99 s
			{err: errDown},                           // at 99.25 s
			{user: "tok-3"},                          // at 99.75 s: never expires
		}}
		rec := &reauthRecorder{}
		r := newCredentialRotation(&Options{Credentials: p.provide}, rec)
		ctx := context.Background()
		tok1, err := r.provider()(ctx)
		if err != nil {
			t.Fatal(err)
		}
		live := newFakeAuthConn(tok1, start)
		dead := newFakeAuthConn(tok1, start)
		close(dead.done)
		sub := newFakeAuthConn(tok1, start)
		sub.err = conn.ErrReauthPubSub
		for _, cn := range []*fakeAuthConn{live, dead, sub} {
			if err := r.register(ctx, cn); err != nil {
				t.Fatal(err)
			}
		}
		r.start()
		defer r.close()

		time.Sleep(time.Hour)
		synctest.Wait()
		wantAsked := []time.Duration{0, 90 * time.Second, 99 * time.Second, 99250 * time.Millisecond, 99750 * time.Millisecond}
		if !slices.Equal(p.asked, wantAsked) {
			t.Errorf("provider asked at %v, want %v", p.asked, wantAsked)
		}
		if got, want := live.log(), []string{"tok-2@1m30s", "tok-3@1m39.75s"}; !slices.Equal(got, want) {
			t.Errorf("live connection re-authenticated %v, want %v", got, want)
		}
		if got := dead.log(); len(got) != 0 {
			t.Errorf("dead connection re-authenticated %v", got)
		}
		// Refused at each renewal, and not retried in between.
		if got, want := sub.log(), []string{"tok-2@1m30s", "tok-3@1m39.75s"}; !slices.Equal(got, want) {
			t.Errorf("RESP2 subscription asked %v, want %v", got, want)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.errs) != 2 || !errors.Is(rec.errs[0], errDown) || !errors.Is(rec.errs[1], conn.ErrCredentials) {
			t.Errorf("reported %v, want the two provider failures", rec.errs)
		}
	})
}

// TestCredentialsNewerOnDial: credentials a dial brings that are newer than the
// connections' re-authenticate them at once, and a connection dialled with older ones
// than the newest is re-authenticated before it is handed out.
func TestCredentialsNewerOnDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		tok1, _ := r.provider()(ctx)
		first := newFakeAuthConn(tok1, start)
		r.register(ctx, first)
		r.start()
		defer r.close()
		time.Sleep(time.Second)
		if _, err := r.provider()(ctx); err != nil { // another dial, given tok-2
			t.Fatal(err)
		}
		synctest.Wait()
		if got := first.log(); !slices.Equal(got, []string{"tok-2@1s"}) {
			t.Errorf("first connection re-authenticated %v, want tok-2 at 1 s", got)
		}
		late := newFakeAuthConn(tok1, start) // dialled with tok-1, registered after tok-2 came
		if err := r.register(ctx, late); err != nil {
			t.Fatal(err)
		}
		if got := late.log(); !slices.Equal(got, []string{"tok-2@1s"}) {
			t.Errorf("late connection re-authenticated %v, want tok-2 before it is handed out", got)
		}
	})
}

// TestCredentialsSlowReauth: a connection whose AUTH waits (behind a blocking command)
// is left to finish in the background, is not sent another meanwhile, and holds up
// neither the schedule nor the other connections.
func TestCredentialsSlowReauth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s: renewed at 180 s
			{user: "tok-3"},
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		tok1, _ := r.provider()(ctx)
		slow := newFakeAuthConn(tok1, start)
		slow.block = make(chan struct{})
		quick := newFakeAuthConn(tok1, start)
		flaky := newFakeAuthConn(tok1, start) // its failure makes a second pass, after the first waited 5 s for slow
		flaky.err, flaky.failOnce = errors.New("refused once"), true
		r.register(ctx, slow)
		r.register(ctx, quick)
		r.register(ctx, flaky)
		r.start()
		defer r.close()

		time.Sleep(120 * time.Second)
		synctest.Wait()
		if got := quick.log(); !slices.Equal(got, []string{"tok-2@1m30s"}) {
			t.Errorf("quick connection at 120 s: %v, want tok-2 at 90 s", got)
		}
		if got, want := flaky.log(), []string{"tok-2@1m30s", "tok-2@1m35.25s"}; !slices.Equal(got, want) {
			t.Errorf("flaky connection at 120 s: %v, want %v", got, want)
		}
		close(slow.block) // the blocking command ahead of the AUTH returns
		synctest.Wait()
		if !slow.AuthenticatedWith(Credentials{Username: "tok-2", Password: "tok-2-pass", ExpiresAt: start.Add(190 * time.Second)}) {
			t.Error("the slow AUTH did not complete")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-3@3m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v: once per rotation", got, want)
		}
		if want := []time.Duration{0, 90 * time.Second, 180 * time.Second}; !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
	})
}

func TestCredentialsOptions(t *testing.T) {
	provider := func(context.Context) (Credentials, error) { return Credentials{Password: "p"}, nil }
	tests := []Options{
		{Addrs: []string{"127.0.0.1:1"}, Credentials: provider, Username: "u", Password: "p"},
		{Addrs: []string{"127.0.0.1:1"}, Credentials: provider, Password: "p"},
	}
	for _, o := range tests {
		if _, err := NewClient(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Credentials with Username %q, Password set: %v, want ErrInvalidOptions", o.Username, err)
		}
	}
	srv := testserver.Start(t, testserver.Config{})
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}})
	if err := c.Reauthenticate(context.Background()); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Reauthenticate without Credentials: %v, want ErrInvalidOptions", err)
	}
}

func tokName(n int) string { return fmt.Sprintf("tok-%d", n) }
func tokPass(n int) string { return fmt.Sprintf("pass-%d", n) }

func tokUser(n int) testserver.User {
	return testserver.User{Name: tokName(n), Password: tokPass(n), Rules: []string{"+@all", "~*", "&*"}}
}

// clientConns returns the connections the server has open named name, by CLIENT ID,
// with the user each is authenticated as.
func clientConns(t *testing.T, srv *testserver.Server, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for line := range strings.Lines(srv.Do(t, "CLIENT", "LIST")) {
		f := map[string]string{}
		for kv := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(kv, "=")
			f[k] = v
		}
		if f["name"] == name {
			out[f["id"]] = f["user"]
		}
	}
	return out
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
	provider := func(context.Context) (Credentials, error) {
		n := int(token.Load())
		cr := Credentials{Username: tokName(n), Password: tokPass(n)}
		if shortLife.Load() {
			cr.ExpiresAt = time.Now().Add(3 * time.Second) // renewed 1 s before: 2 s from now
		}
		return cr, nil
	}
	const name = "rotating"
	opts := Options{Addrs: []string{srv.Addr()}, Protocol: proto, Credentials: provider, ClientName: name}
	if proto == 3 {
		opts.ClientSideCache = &cache.Options{}
	}
	c := newClientT(t, opts)
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
	var sub *Subscription
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

func TestCredentialsProviderErrorAtDial(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	errDown := errors.New("token service down")
	_, err := NewClient(context.Background(), Options{Addrs: []string{srv.Addr()},
		Credentials: func(context.Context) (Credentials, error) { return Credentials{}, errDown }})
	if !errors.Is(err, conn.ErrCredentials) || !errors.Is(err, errDown) || !errors.Is(err, conn.ErrNotSent) {
		t.Errorf("NewClient with a failing provider: %v, want conn.ErrCredentials, the provider's error and not sent", err)
	}
}

// TestOnConnectOncePerConnection: the hook runs on every connection the client opens,
// whatever it is for, once; its error fails NewClient and leaves nothing open.
func TestOnConnectOncePerConnection(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})
	provider := func(context.Context) (Credentials, error) {
		return Credentials{Username: tokName(1), Password: tokPass(1)}, nil
	}
	var hooked atomic.Int32
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, ClientName: "hooked", Credentials: provider,
		ClientSideCache: &cache.Options{},
		OnConnect: func(ctx context.Context, cn *Conn) error {
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
	_, err = NewClient(ctx, Options{Addrs: []string{srv.Addr()}, ClientName: "refused", Credentials: provider,
		OnConnect: func(context.Context, *Conn) error { return errHook }})
	if !errors.Is(err, errHook) {
		t.Fatalf("NewClient with a failing OnConnect: %v, want its error", err)
	}
	testkit.WaitFor(t, "the refused connection to close", func() bool { return len(clientConns(t, srv, "refused")) == 0 })
}

// TestCredentialRotationCluster: on a Cluster every node's connections (shared,
// dedicated, tracking, and those the slot map is read on) follow the rotation.
func TestCredentialRotationCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true,
		Server: testserver.Config{Users: []testserver.User{tokUser(1)}}})
	var token atomic.Int32
	token.Store(1)
	provider := func(context.Context) (Credentials, error) {
		n := int(token.Load())
		return Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
	const name = "rotating-cluster"
	c := newClientT(t, Options{Addrs: cl.Seeds(), Cluster: true, Credentials: provider, ClientName: name,
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
	provider := func(context.Context) (Credentials, error) {
		n := int(token.Load())
		return Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
	const name = "rotating-sentinel"
	c := newClientT(t, Options{Addrs: d.SentinelAddrs(), SentinelMaster: d.MasterName(), SentinelPassword: "sentinel-pw",
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

// TestCredentialsRefusingConnKeepsRenewal: a connection that keeps refusing the newest
// credentials is retried alone; the renewal stays due at its time, and the others
// follow it.
func TestCredentialsRefusingConnKeepsRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s: due at 180 s
			{user: "tok-3", life: 100 * time.Second}, // at 180 s: due at 270 s
			{user: "tok-4"},                          // at 270 s
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		tok1, _ := r.provider()(ctx)
		bad := newFakeAuthConn(tok1, start) // say, a node whose ACL lacks the new users
		bad.err = errors.New("WRONGPASS")
		good := newFakeAuthConn(tok1, start)
		r.register(ctx, bad)
		r.register(ctx, good)
		r.start()
		defer r.close()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if want := []time.Duration{0, 90 * time.Second, 180 * time.Second, 270 * time.Second}; !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
		if got, want := good.log(), []string{"tok-2@1m30s", "tok-3@3m0s", "tok-4@4m30s"}; !slices.Equal(got, want) {
			t.Errorf("good connection re-authenticated %v, want %v", got, want)
		}
		if got := bad.log(); len(got) < 10 || got[1] != "tok-2@1m30.25s" {
			t.Errorf("refusing connection retried %v, want a retry 250 ms after each refusal, backing off", got)
		}
	})
}

// TestCredentialsReauthenticateKeepsSchedule: a Reauthenticate waiting (without a
// deadline) for a connection whose AUTH is stuck behind a blocking command holds up
// neither the schedule nor the other connections.
func TestCredentialsReauthenticateKeepsSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1"},
			{user: "tok-2", life: 3 * time.Second}, // Reauthenticate at once; due at 2 s
			{user: "tok-3"},                        // the schedule at 2 s
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		slow, quick := slowAndQuick(t, r, start)
		r.start()
		defer r.close()
		rotated := make(chan error, 1)
		go func() { rotated <- r.rotate(ctx) }() // Client.Reauthenticate(context.Background())
		time.Sleep(time.Minute)
		synctest.Wait()
		// The schedule's own pass waits for slow until the renewal is due (2 s), then
		// the renewal comes after the schedule's 250 ms floor: before tok-2 ends at 3 s.
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@2.25s"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
		close(slow.block)
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the slow AUTH went through: %v", err)
		}
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsSlowConnFollowsLaterRotation: a connection still re-authenticating
// when newer credentials come is re-authenticated with them once its AUTH ends, and a
// Reauthenticate whose deadline ends meanwhile says it is pending.
func TestCredentialsSlowConnFollowsLaterRotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2", life: 100 * time.Second}, // at 90 s
			{user: "tok-3", life: time.Hour},         // Reauthenticate at 100 s
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		slow, _ := slowAndQuick(t, r, start)
		r.start()
		defer r.close()
		time.Sleep(100 * time.Second)
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		if err := r.rotate(rctx); !errors.Is(err, ErrReauthPending) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Reauthenticate with a connection still on older credentials at its deadline: %v, want ErrReauthPending", err)
		}
		rcancel()
		time.Sleep(10 * time.Second)
		close(slow.block) // the blocking command ahead of tok-2's AUTH returns
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-3@2m0s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
		if err := r.rotate(ctx); err == nil || errors.Is(err, ErrReauthPending) {
			// The script is exhausted: the provider fails, nothing is pending.
			t.Errorf("Reauthenticate after: %v, want the provider's failure only", err)
		}
	})
}

// TestCredentialsRotationWaitsBehindOlder: a Reauthenticate that finds a connection
// still re-authenticating for an earlier rotation (its AUTH behind a blocking command)
// waits, within its ctx, for that AUTH to end, then re-authenticates the connection
// with its own credentials and returns no error.
func TestCredentialsRotationWaitsBehindOlder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}, {user: "tok-3"}}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		slow, quick := slowAndQuick(t, r, start)
		r.start()
		defer r.close()
		first, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if err := r.rotate(first); !errors.Is(err, ErrReauthPending) {
			t.Errorf("first Reauthenticate at its deadline: %v, want ErrReauthPending", err)
		}
		rotated := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			rotated <- r.rotate(ctx)
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-rotated:
			t.Fatalf("second Reauthenticate returned (%v) with a connection still on the first one's AUTH", err)
		default:
		}
		close(slow.block) // the blocking command ahead of tok-2's AUTH returns at 1.2 s
		if err := <-rotated; err != nil {
			t.Errorf("second Reauthenticate once the older AUTH went: %v, want nil", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1.2s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
		if !slow.AuthenticatedWith(Credentials{Username: "tok-3", Password: "tok-3-pass"}) {
			t.Error("Reauthenticate returned with the slow connection not on tok-3")
		}
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@200ms"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
	})
}

// slowAndQuick asks r's provider as a dial would and registers two connections with
// what it gives: slow, whose AUTHs wait until its block is closed (behind a blocking
// command), and quick.
func slowAndQuick(t *testing.T, r *credentialRotation, start time.Time) (slow, quick *fakeAuthConn) {
	t.Helper()
	ctx := context.Background()
	cr, err := r.provider()(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slow = newFakeAuthConn(cr, start)
	slow.block = make(chan struct{})
	quick = newFakeAuthConn(cr, start)
	for _, cn := range []*fakeAuthConn{slow, quick} {
		if err := r.register(ctx, cn); err != nil {
			t.Fatal(err)
		}
	}
	return slow, quick
}

// startWithOne asks r's provider as a dial would, registers a connection with what it
// gives, and starts the schedule.
func startWithOne(t *testing.T, r *credentialRotation, start time.Time) *fakeAuthConn {
	t.Helper()
	ctx := context.Background()
	cr, err := r.provider()(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cn := newFakeAuthConn(cr, start)
	if err := r.register(ctx, cn); err != nil {
		t.Fatal(err)
	}
	r.start()
	return cn
}

// dialWithOlder sets up a rotation at tok-2 with one connection, quick, and a
// connection dialled with tok-1 whose registration AUTH (of tok-2) waits until the
// returned channel is closed; registered has register's result.
func dialWithOlder(t *testing.T, start time.Time, steps ...providerStep) (r *credentialRotation, quick, slow *fakeAuthConn, unblock chan struct{}, registered chan error) {
	t.Helper()
	p := &scriptedProvider{start: start, steps: append([]providerStep{{user: "tok-1"}, {user: "tok-2"}}, steps...)}
	r = newCredentialRotation(&Options{Credentials: p.provide}, nil)
	ctx := context.Background()
	tok1, _ := r.provider()(ctx)
	quick = newFakeAuthConn(tok1, start)
	r.register(ctx, quick)
	r.start()
	if _, err := r.provider()(ctx); err != nil { // another dial, given tok-2
		t.Fatal(err)
	}
	synctest.Wait()
	slow = newFakeAuthConn(tok1, start)
	unblock = make(chan struct{})
	slow.block = unblock
	registered = make(chan error, 1)
	go func() { registered <- r.register(ctx, slow) }()
	synctest.Wait()
	return r, quick, slow, unblock, registered
}

// TestCredentialsSlowDialHoldsUpNoPass: a connection whose registration AUTH is slow
// (within its dial's timeout) holds up neither a Reauthenticate with a shorter deadline
// nor other dials' registrations, and follows the newer credentials once it is done.
func TestCredentialsSlowDialHoldsUpNoPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, quick, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.close()
		rotated := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			rotated <- r.rotate(ctx)
		}()
		synctest.Wait()
		other := newFakeAuthConn(Credentials{Username: "tok-1", Password: "tok-1-pass"}, start)
		otherDone := make(chan error, 1)
		go func() { otherDone <- r.register(context.Background(), other) }()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		select {
		case err := <-rotated:
			if !errors.Is(err, ErrReauthPending) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Reauthenticate with a registration still authenticating: %v, want ErrReauthPending at its deadline", err)
			}
		default:
			t.Error("Reauthenticate with a 1 s deadline still waiting at 2 s for a registration's AUTH")
		}
		select {
		case err := <-otherDone:
			if err != nil {
				t.Errorf("another dial's registration: %v", err)
			}
		default:
			t.Error("another dial's registration held up by a slow one")
		}
		close(unblock)
		synctest.Wait()
		if err := <-registered; err != nil {
			t.Errorf("the slow registration: %v", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@2s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection authenticated %v, want %v: tok-3 once its registration is done", got, want)
		}
		if got, want := quick.log(), []string{"tok-2@0s", "tok-3@0s"}; !slices.Equal(got, want) {
			t.Errorf("quick connection re-authenticated %v, want %v", got, want)
		}
		if got, want := other.log(), []string{"tok-3@0s"}; !slices.Equal(got, want) {
			t.Errorf("other connection authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsRotationWaitsForDial: a Reauthenticate that finds a connection being
// registered with older credentials waits for it and re-authenticates it, and returns
// no error once every connection has the newest.
func TestCredentialsRotationWaitsForDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, _, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.close()
		rotated := make(chan error, 1)
		go func() { rotated <- r.rotate(context.Background()) }()
		time.Sleep(time.Second)
		close(unblock)
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the registration is done: %v", err)
		}
		if err := <-registered; err != nil {
			t.Errorf("the slow registration: %v", err)
		}
		if got, want := slow.log(), []string{"tok-2@0s", "tok-3@1s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsRotationWaitsForDialsInProgress: a Reauthenticate waits for the dials
// in progress as it began (one may register after its pass, with the credentials it
// replaces), within its own deadline: past it, such a dial is pending.
func TestCredentialsRotationWaitsForDialsInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1"}, {user: "tok-1"}, // a connection, then a dial in progress
			{user: "tok-2"},                  // Reauthenticate
			{user: "tok-2"}, {user: "tok-3"}, // another dial, another Reauthenticate
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		tok1, _ := r.provider()(context.Background())
		r.register(context.Background(), newFakeAuthConn(tok1, start))
		r.start()
		defer r.close()

		dialCtx, dialEnd := context.WithCancel(context.Background())
		dialTok, _ := r.provider()(dialCtx)
		rotated := make(chan error, 1)
		go func() { rotated <- r.rotate(context.Background()) }()
		synctest.Wait()
		select {
		case err := <-rotated:
			t.Fatalf("Reauthenticate returned (%v) with a dial of the old credentials still in progress", err)
		default:
		}
		time.Sleep(time.Second)
		late := newFakeAuthConn(dialTok, start)
		if err := r.register(dialCtx, late); err != nil {
			t.Fatal(err)
		}
		dialEnd()
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate once the dial ended: %v", err)
		}
		if got, want := late.log(), []string{"tok-2@1s"}; !slices.Equal(got, want) {
			t.Errorf("the dialled connection authenticated %v, want %v", got, want)
		}

		dialCtx, dialEnd = context.WithCancel(context.Background())
		defer dialEnd()
		r.provider()(dialCtx)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := r.rotate(ctx); !errors.Is(err, ErrReauthPending) {
			t.Errorf("Reauthenticate with a dial still in progress at its deadline: %v, want ErrReauthPending", err)
		}
	})
}

// TestCredentialsSlowDialAuthDoesNotHoldUpRotation: while a registration's AUTH waits
// (within its dial's context), a rotation returns when its own context ends. Real time,
// because the regression it guards against is a goroutine blocked on a mutex across
// that AUTH, which a synctest bubble does not count as blocked (the synctest tests
// above would hang on it instead of failing); the watchdog only bounds that failure.
func TestCredentialsSlowDialAuthDoesNotHoldUpRotation(t *testing.T) {
	var n atomic.Int32
	provide := func(context.Context) (Credentials, error) {
		return Credentials{Username: fmt.Sprintf("tok-%d", n.Add(1)), Password: "p"}, nil
	}
	r := newCredentialRotation(&Options{Credentials: provide}, nil)
	defer r.close()
	if _, err := r.provider()(context.Background()); err != nil { // tok-1
		t.Fatal(err)
	}
	cn := newFakeAuthConn(Credentials{Username: "tok-0", Password: "p"}, time.Now())
	block := make(chan struct{})
	var released atomic.Bool
	cn.block = block
	watchdog := time.AfterFunc(2*time.Second, func() { released.Store(true); close(block) })
	defer func() {
		if watchdog.Stop() {
			close(block)
		}
	}()
	registered := make(chan error, 1)
	go func() { registered <- r.register(context.Background(), cn) }()
	testkit.WaitFor(t, "the registration's AUTH to wait", func() bool { return len(cn.log()) > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := r.rotate(ctx)
	cancel()
	if released.Load() {
		t.Fatal("rotate returned only once the registration's AUTH had ended")
	}
	if !errors.Is(err, ErrReauthPending) {
		t.Errorf("rotate: %v, want ErrReauthPending for the connection still registering", err)
	}
	if watchdog.Stop() {
		close(block)
	}
	if err := <-registered; err != nil {
		t.Errorf("register: %v", err)
	}
}

// TestCredentialsDialStormDoesNotHoldPass: with a provider that gives new credentials
// at every ask and a dial every 100 ms whose registration AUTH takes a second, a
// Reauthenticate begun at 1 s still returns within a few seconds, not when the dials
// stop at 20 s.
func TestCredentialsDialStormDoesNotHoldPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var n atomic.Int32
		provide := func(context.Context) (Credentials, error) {
			return Credentials{Username: fmt.Sprintf("tok-%d", n.Add(1)), Password: "p"}, nil
		}
		r := newCredentialRotation(&Options{Credentials: provide}, nil)
		defer r.close()
		r.start()
		var dials sync.WaitGroup
		dials.Go(func() {
			for range 200 { // 20 s of dials
				time.Sleep(100 * time.Millisecond)
				dials.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if _, err := r.provider()(ctx); err != nil {
						t.Error(err)
						return
					}
					cn := newFakeAuthConn(Credentials{Username: "tok-0", Password: "p"}, start)
					cn.delay = time.Second
					if err := r.register(ctx, cn); err != nil {
						t.Error(err)
					}
				})
			}
		})
		time.Sleep(time.Second)
		r.rotate(context.Background())
		took := time.Since(start) - time.Second
		dials.Wait()
		if took > 5*time.Second {
			t.Errorf("Reauthenticate during a dial storm returned after %v, want a few seconds", took)
		}
	})
}

// TestCredentialsFailedRegistrationDropped: a connection whose registration AUTH
// failed (its dial fails and closes it) leaves the registry before the pass waiting
// for it looks again, so no pass sends it an AUTH of its own.
func TestCredentialsFailedRegistrationDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, _, slow, unblock, registered := dialWithOlder(t, start, providerStep{user: "tok-3"})
		defer r.close()
		slow.mu.Lock()
		slow.err = errors.New("the dial's context ended")
		slow.mu.Unlock()
		rotated := make(chan error, 1)
		go func() { rotated <- r.rotate(context.Background()) }()
		synctest.Wait()
		close(unblock)
		if err := <-registered; err == nil {
			t.Fatal("the failing registration returned no error")
		}
		if err := <-rotated; err != nil {
			t.Errorf("Reauthenticate: %v", err)
		}
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@0s"}; !slices.Equal(got, want) {
			t.Errorf("the failed connection was sent %v, want its registration's AUTH only", got)
		}
		r.mu.Lock()
		_, kept := r.conns[slow]
		r.mu.Unlock()
		if kept {
			t.Error("the failed connection is still in the registry")
		}
	})
}

// TestCredentialsPendingCountedOnce: a connection whose dial is in progress and whose
// registration AUTH is still waiting as Reauthenticate's deadline ends is one pending
// connection, not one for the dial and one for the AUTH.
func TestCredentialsPendingCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}, {user: "tok-3"}}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		defer r.close()
		dialCtx, dialEnd := context.WithCancel(context.Background())
		defer dialEnd()
		dialTok, _ := r.provider()(dialCtx)     // the dial, given tok-1
		r.provider()(context.Background())      // another, given tok-2
		slow := newFakeAuthConn(dialTok, start) // registers with tok-2's AUTH, which waits
		slow.block = make(chan struct{})
		defer close(slow.block)
		go r.register(dialCtx, slow)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		left, behind, err := r.rotateCounted(ctx)
		if left != 1 || behind != 0 || err != nil {
			t.Errorf("Reauthenticate with one connection still dialling: %d left, %d behind, %v; want 1, 0, nil", left, behind, err)
		}
	})
}

// TestCredentialsRefusalReportedAtDeadline: a refusal that came before Reauthenticate's
// deadline is in its error even when a slower connection made it wait until the
// deadline: a landed flight is never counted pending instead. Repeated, because the
// order the pass looks at its connections in is a map's.
func TestCredentialsRefusalReportedAtDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("WRONGPASS")
		for range 40 {
			start := time.Now()
			p := &scriptedProvider{start: start, steps: []providerStep{{user: "tok-1"}, {user: "tok-2"}}}
			r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
			tok1, _ := r.provider()(context.Background())
			bad := newFakeAuthConn(tok1, start)
			bad.err = refused
			slow := newFakeAuthConn(tok1, start)
			slow.block = make(chan struct{})
			r.register(context.Background(), bad)
			r.register(context.Background(), slow)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			left, _, err := r.rotateCounted(ctx)
			cancel()
			close(slow.block)
			r.close()
			if left != 1 || !errors.Is(err, refused) {
				t.Fatalf("Reauthenticate with one refusal and one connection still waiting: %d left, %v; want 1 and the refusal", left, err)
			}
		}
	})
}

// TestCredentialsLateRefusalRetried: a refusal that comes after its pass stopped
// waiting is retried, with the same backoff.
func TestCredentialsLateRefusalRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 100 * time.Second},
			{user: "tok-2"}, // at 90 s
		}}
		r := newCredentialRotation(&Options{Credentials: p.provide}, nil)
		ctx := context.Background()
		tok1, _ := r.provider()(ctx)
		slow := newFakeAuthConn(tok1, start)
		slow.block = make(chan struct{})
		slow.err, slow.failOnce = errors.New("WRONGPASS"), true
		r.register(ctx, slow)
		r.start()
		defer r.close()
		time.Sleep(120 * time.Second)
		close(slow.block) // refused at 120 s, 25 s after the pass stopped waiting
		time.Sleep(time.Minute)
		synctest.Wait()
		if got, want := slow.log(), []string{"tok-2@1m30s", "tok-2@2m0.25s"}; !slices.Equal(got, want) {
			t.Errorf("slow connection re-authenticated %v, want %v", got, want)
		}
	})
}

// TestCredentialsComparedByContent: a dial given the credentials the rotation has
// already neither wakes the schedule nor moves the renewal.
func TestCredentialsComparedByContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cr := Credentials{Username: "u", Password: "p", ExpiresAt: time.Now().Add(100 * time.Second)}
		r := newCredentialRotation(&Options{Credentials: func(context.Context) (Credentials, error) { return cr, nil }}, nil)
		ctx := context.Background()
		r.provider()(ctx)
		<-r.wake
		due := r.refreshAt
		time.Sleep(50 * time.Second)
		r.provider()(ctx)
		if len(r.wake) != 0 || !r.refreshAt.Equal(due) {
			t.Errorf("the same credentials again: woke %v, renewal moved from %v to %v", len(r.wake) != 0, due, r.refreshAt)
		}
		cr.Password = "p2"
		r.provider()(ctx)
		if len(r.wake) != 1 {
			t.Error("new credentials did not wake the schedule")
		}
	})
}

// TestCredentialsSameTokenBacksOff: a provider that caches its token and hands out the
// same one past its renewal time is asked again with the backoff (250 ms doubling to
// 5 s), not every 250 ms, but never later than halfway to the token's end, so that the
// new token it gives at 98 s is in use before the old one ends at 100 s.
func TestCredentialsSameTokenBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var asked []time.Duration
		provide := func(context.Context) (Credentials, error) {
			mu.Lock()
			defer mu.Unlock()
			now := time.Since(start)
			asked = append(asked, now)
			if now < 98*time.Second {
				return Credentials{Username: "tok-1", Password: "p1", ExpiresAt: start.Add(100 * time.Second)}, nil
			}
			return Credentials{Username: "tok-2", Password: "p2"}, nil
		}
		r := newCredentialRotation(&Options{Credentials: provide}, nil)
		live := startWithOne(t, r, start)
		defer r.close()
		time.Sleep(time.Hour)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Due at 90 s; the same token at 90, 90.25, 90.75, 91.75, 93.75 (+4 s), 96.875
		// (+3.125 s, half the 6.25 s left), 98.4375 (half of 3.125 s): the new one.
		want := []time.Duration{0, 90 * time.Second, 90250 * time.Millisecond, 90750 * time.Millisecond, 91750 * time.Millisecond, 93750 * time.Millisecond, 96875 * time.Millisecond, 98437500 * time.Microsecond}
		if !slices.Equal(asked, want) {
			t.Errorf("provider asked at %v, want %v", asked, want)
		}
		if got, want := live.log(), []string{"tok-2@1m38.4375s"}; !slices.Equal(got, want) {
			t.Errorf("connection re-authenticated %v, want %v", got, want)
		}
	})
}

// credentialFailures returns the ConnReauth errors rec was given that match
// conn.ErrCredentials, and the lines logs has of failed re-authentications.
func credentialFailures(rec *reauthRecorder, logs *logRecords) (errs []error, lines []string) {
	rec.mu.Lock()
	for _, err := range rec.errs {
		if errors.Is(err, conn.ErrCredentials) {
			errs = append(errs, err)
		}
	}
	rec.mu.Unlock()
	for _, l := range logs.all() {
		if strings.HasPrefix(l, "WARN respire: re-authentication failed") {
			lines = append(lines, l)
		}
	}
	return errs, lines
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
	provider := func(context.Context) (Credentials, error) {
		if noPassword.Load() {
			return Credentials{Username: tokName(2)}, nil
		}
		return Credentials{Username: tokName(1), Password: tokPass(1), ExpiresAt: time.Now().Add(time.Duration(life.Load()))}, nil
	}
	const name = "nopass"
	rec := &reauthRecorder{}
	logs := &logRecords{}
	c := newClientT(t, Options{Addrs: []string{srv.Addr()}, Credentials: provider, ClientName: name,
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
	if other, err := NewClient(ctx, Options{Addrs: []string{srv.Addr()}, Credentials: provider}); err == nil {
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

// TestCredentialsScheduleNoPassword: on the schedule a provider that gives no password
// is a provider failure: reported to the observer and logged each time, asked again
// with the failure backoff (250 ms doubling), and the connections keep their
// credentials until it gives a password again.
func TestCredentialsScheduleNoPassword(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProvider{start: start, steps: []providerStep{
			{user: "tok-1", life: 10 * time.Second}, // the dial: renewed at 9 s
			{user: "tok-2", noPassword: true},       // at 9 s
			{user: "tok-2", noPassword: true},       // at 9.25 s
			{user: "tok-2", noPassword: true},       // at 9.75 s
			{user: "tok-2", noPassword: true},       // at 10.75 s
			{user: "tok-2"},                         // at 12.75 s
		}}
		rec := &reauthRecorder{}
		logs := &logRecords{}
		r := newCredentialRotation(&Options{Credentials: p.provide}, observe.Join(rec, newLogObserver(slog.New(logs))))
		live := startWithOne(t, r, start)
		defer r.close()
		time.Sleep(time.Hour)
		synctest.Wait()
		want := []time.Duration{0, 9 * time.Second, 9250 * time.Millisecond, 9750 * time.Millisecond, 10750 * time.Millisecond, 12750 * time.Millisecond}
		if !slices.Equal(p.asked, want) {
			t.Errorf("provider asked at %v, want %v", p.asked, want)
		}
		if errs, lines := credentialFailures(rec, logs); len(errs) != 4 || len(lines) != 4 {
			t.Errorf("reported %v, logged %q; want the 4 asks without a password, each", errs, lines)
		}
		if got, want := live.log(), []string{"tok-2@12.75s"}; !slices.Equal(got, want) {
			t.Errorf("connection re-authenticated %v, want %v", got, want)
		}
	})
}

// tokenRig is a real server with the ACL user tok-1 and a client whose provider gives
// tok-N for the N of token.
type tokenRig struct {
	srv   *testserver.Server
	c     *Client
	token atomic.Int32
}

// newTokenRig starts a tokenRig at tok-1 with a client of opts (Addrs and Credentials
// set here), which has dialled once.
func newTokenRig(t *testing.T, opts Options) *tokenRig {
	t.Helper()
	g := &tokenRig{srv: testserver.Start(t, testserver.Config{Users: []testserver.User{tokUser(1)}})}
	g.token.Store(1)
	opts.Addrs = []string{g.srv.Addr()}
	opts.Credentials = func(context.Context) (Credentials, error) {
		n := int(g.token.Load())
		return Credentials{Username: tokName(n), Password: tokPass(n)}, nil
	}
	g.c = newClientT(t, opts)
	if _, err := g.c.Do(context.Background(), "PING"); err != nil {
		t.Fatal(err)
	}
	return g
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
	blockedClientID(t, srv)
	return blpop
}

// TestReauthenticatePendingBehindBlockingCommand rotates the credentials of a client
// whose dedicated connection is blocked in BLPOP against a real server: the AUTH for
// that connection must wait behind the BLPOP, so Reauthenticate with a deadline
// shorter than the BLPOP's timeout reports ErrReauthPending. Once the BLPOP has
// returned the connection follows on its own: no connection is left as the old user,
// and deleting that user (which would kill any connection still on it) kills none.
func TestReauthenticatePendingBehindBlockingCommand(t *testing.T) {
	const name = "pending"
	g := newTokenRig(t, Options{ClientName: name})
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
	if !errors.Is(err, ErrReauthPending) {
		t.Errorf("Reauthenticate with a connection blocked in BLPOP: %v, want ErrReauthPending", err)
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
	g := newTokenRig(t, Options{ClientName: name})
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
	if err := rotate(2, 200*time.Millisecond); !errors.Is(err, ErrReauthPending) {
		t.Errorf("first Reauthenticate with a connection blocked in BLPOP: %v, want ErrReauthPending", err)
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
