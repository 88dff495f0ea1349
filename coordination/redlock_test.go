package coordination

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// redlockNodes starts n independent servers and a client of each.
func redlockNodes(t *testing.T, n int) ([]*testserver.Server, []*respire.Client) {
	t.Helper()
	srvs := make([]*testserver.Server, n)
	clients := make([]*respire.Client, n)
	for i := range n {
		srvs[i] = testserver.Start(t, testserver.Config{})
		clients[i] = plainClient(t, srvs[i])
	}
	return srvs, clients
}

func newGroup(t *testing.T, clients []*respire.Client) *RedlockGroup {
	t.Helper()
	// A short node timeout keeps the attempts on stopped servers quick; a generous TTL
	// keeps the validity clear of a loaded machine's pauses.
	g, err := NewRedlockGroup(clients, RedlockOptions{NodeTimeout: 2 * time.Second, DriftFactor: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// holders counts the servers whose key holds token.
func holders(t *testing.T, srvs []*testserver.Server, key, token string) int {
	t.Helper()
	n := 0
	for _, s := range srvs {
		if v, err := s.DoErr(context.Background(), "GET", key); err == nil && v == token {
			n++
		}
	}
	return n
}

func tokenText(t *testing.T, rl *Redlock) string {
	t.Helper()
	s, err := rl.Token().Text()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRedlockAcquiresWithAMinorityDown(t *testing.T) {
	for _, tc := range []struct{ nodes, down int }{{3, 0}, {3, 1}, {5, 2}} {
		t.Run("", func(t *testing.T) {
			ctx := context.Background()
			srvs, clients := redlockNodes(t, tc.nodes)
			g := newGroup(t, clients)
			for _, s := range srvs[:tc.down] {
				s.Kill(t)
			}
			rl, ok, err := g.TryAcquire(ctx, "rl:minority", 30*time.Second)
			if err != nil || !ok {
				t.Fatalf("%d of %d down: %v %v", tc.down, tc.nodes, ok, err)
			}
			if n := holders(t, srvs[tc.down:], "rl:minority", tokenText(t, rl)); n != tc.nodes-tc.down {
				t.Fatalf("held on %d servers", n)
			}
			// A second owner cannot take it meanwhile; with servers down, that says so.
			if _, ok, err := g.TryAcquire(ctx, "rl:minority", 30*time.Second); ok || (err != nil) != (tc.down > 0) || (err != nil && !errors.Is(err, ErrNoQuorum)) {
				t.Fatal("second owner:", ok, err)
			}
			if ok, err := rl.ResetExpiry(ctx, time.Minute); !ok || err != nil {
				t.Fatal("renewal:", ok, err)
			}
			if ok, err := rl.Release(ctx); !ok || err != nil {
				t.Fatal("release:", ok, err)
			}
			if rl.RemainingEstimate() != 0 {
				t.Fatal("a released handle reports validity")
			}
		})
	}
}

func TestRedlockFailsWithoutMajorityAndGivesBack(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	srvs[0].Kill(t)
	srvs[1].Kill(t)
	rl, ok, err := g.TryAcquire(ctx, "rl:majority", 30*time.Second)
	if ok || rl != nil || !errors.Is(err, ErrNoQuorum) {
		t.Fatal(ok, err)
	}
	if v := srvs[2].Do(t, "EXISTS", "rl:majority"); v != "0" {
		t.Fatal("the failed attempt left its key on the live server")
	}
	if err := rl.Close(); err != nil {
		t.Fatal("Close on nil:", err)
	}
}

func TestRedlockContentionIsNotAnError(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	// Another owner holds two of three servers: no quorum, but every server answered.
	srvs[0].Do(t, "SET", "rl:busy", "other", "PX", "30000")
	srvs[1].Do(t, "SET", "rl:busy", "other", "PX", "30000")
	if _, ok, err := g.TryAcquire(ctx, "rl:busy", 30*time.Second); ok || err != nil {
		t.Fatal(ok, err)
	}
	if v := srvs[2].Do(t, "EXISTS", "rl:busy"); v != "0" {
		t.Fatal("the failed attempt left its key on the server it won")
	}
	if srvs[0].Do(t, "GET", "rl:busy") != "other" {
		t.Fatal("the failed attempt touched the other owner's key")
	}
}

func TestRedlockValidityArithmetic(t *testing.T) {
	for _, tc := range []struct {
		ttl, elapsed, margin, want time.Duration
	}{
		{10 * time.Second, 0, 102 * time.Millisecond, 9898 * time.Millisecond},
		{10 * time.Second, 500 * time.Millisecond, 102 * time.Millisecond, 9398 * time.Millisecond},
		{100 * time.Millisecond, 99 * time.Millisecond, 3 * time.Millisecond, -2 * time.Millisecond},
	} {
		if got := redlockValidity(tc.ttl, tc.elapsed, tc.margin); got != tc.want {
			t.Errorf("validity(%v, %v, %v) = %v, want %v", tc.ttl, tc.elapsed, tc.margin, got, tc.want)
		}
	}
	g := &RedlockGroup{drift: 0.01}
	if m := g.driftMargin(10 * time.Second); m != 102*time.Millisecond {
		t.Fatalf("margin of 10s at 1%%: %v", m)
	}

	// On real servers the estimate starts at the TTL less the margin and the elapsed time.
	_, clients := redlockNodes(t, 3)
	rg := newGroup(t, clients)
	before := time.Now()
	rl, ok, err := rg.TryAcquire(context.Background(), "rl:validity", 10*time.Second)
	after := time.Now()
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer rl.Close()
	end := rl.ValidUntilEstimate()
	if end.Before(before.Add(9898*time.Millisecond)) || end.After(after.Add(9898*time.Millisecond)) {
		t.Fatalf("validity ends %v after the start, want 9.898s", end.Sub(before))
	}
	// A TTL not above its margin leaves no validity: refused before anything is sent.
	if _, _, err := rg.TryAcquire(context.Background(), "rl:validity", 2*time.Millisecond); !errors.Is(err, ErrInvalidArg) {
		t.Fatal(err)
	}
}

func TestRedlockReleaseNeedsQuorumAndCanBeRetried(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, "rl:release", 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	srvs[0].Kill(t)
	srvs[1].Kill(t)
	released, err := rl.Release(ctx)
	if released || !errors.Is(err, ErrNoQuorum) {
		t.Fatal(released, err)
	}
	if rl.RemainingEstimate() != 0 {
		t.Fatal("after a failed release the handle still reports ownership")
	}
	if ok, _ := rl.ResetExpiry(ctx, time.Minute); ok {
		t.Fatal("a disowned handle renewed")
	}
	if srvs[2].Do(t, "EXISTS", "rl:release") != "0" {
		t.Fatal("the reachable server kept the key")
	}
	srvs[0].Restart(t)
	srvs[1].Restart(t)
	testkit.WaitFor(t, "a retried release to reach a quorum", func() bool {
		ok, _ := rl.Release(ctx)
		return ok
	})
}

// TestRedlockRestartWithoutPersistence shows seed 001's limitation: a server that
// restarts without persistence forgets the lease, and its vote can then go to a second
// owner while the first still holds a valid lease.
func TestRedlockRestartWithoutPersistence(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	srvs[2].Kill(t) // first owner wins servers 0 and 1
	first, ok, err := g.TryAcquire(ctx, "rl:amnesia", 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer first.Close()
	srvs[2].Restart(t)
	srvs[1].Kill(t) // without persistence it forgets the first owner's key
	srvs[1].Restart(t)
	var second *Redlock
	testkit.WaitFor(t, "the second owner to reach servers 1 and 2", func() bool {
		var ok bool
		second, ok, _ = g.TryAcquire(ctx, "rl:amnesia", 30*time.Second)
		return ok
	})
	defer second.Close()
	violations := 0
	if first.RemainingEstimate() > 0 && second.RemainingEstimate() > 0 {
		violations++ // two owners believe they hold the lease at once
	}
	if violations != 1 {
		t.Fatalf("violations = %d; the limitation was expected to show", violations)
	}
	// The first owner learns of it only at its next renewal, which one server cannot carry.
	if ok, _ := first.ResetExpiry(ctx, 30*time.Second); ok {
		t.Fatal("the first owner renewed on a single server")
	}
}

func TestRedlockGroupsRefused(t *testing.T) {
	srvs, clients := redlockNodes(t, 4)
	before := calls(t, srvs[0], "info", "set")
	for _, tc := range []struct {
		name    string
		clients []*respire.Client
	}{
		{"none", nil},
		{"one", clients[:1]},
		{"two", clients[:2]},
		{"even", clients[:4]},
		{"nil client", []*respire.Client{clients[0], nil, clients[1]}},
		{"same client", []*respire.Client{clients[0], clients[0], clients[1]}},
	} {
		if _, err := NewRedlockGroup(tc.clients, RedlockOptions{}); !errors.Is(err, ErrRedlockGroup) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	for _, o := range []RedlockOptions{{NodeTimeout: -1}, {DriftFactor: -0.1}, {DriftFactor: 1}} {
		if _, err := NewRedlockGroup(clients[:3], o); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	g := newGroup(t, clients[:3])
	for _, tc := range []struct {
		key string
		ttl time.Duration
	}{{"", time.Second}, {"k", 0}, {"k", -time.Second}, {"k", time.Microsecond}} {
		if _, _, err := g.TryAcquire(context.Background(), tc.key, tc.ttl); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%q %v: %v", tc.key, tc.ttl, err)
		}
	}
	var nilGroup *RedlockGroup
	if _, _, err := nilGroup.TryAcquire(context.Background(), "k", time.Second); !errors.Is(err, ErrInvalidArg) {
		t.Error(err)
	}
	if after := calls(t, srvs[0], "info", "set"); after["info"] != before["info"]+2 || after["set"] != before["set"] {
		// calls itself runs one INFO per snapshot command: two here.
		t.Errorf("refused input reached the server: %v then %v", before, after)
	}
}

func TestRedlockRefusesTwoClientsOfOneServer(t *testing.T) {
	srvs, clients := redlockNodes(t, 2)
	twin := plainClient(t, srvs[0])
	g := newGroup(t, []*respire.Client{clients[0], clients[1], twin})
	before := srvs[0].Calls(t, "set")
	for range 2 { // refused every time, not only when first found
		if _, _, err := g.TryAcquire(context.Background(), "rl:twin", time.Minute); !errors.Is(err, ErrRedlockGroup) {
			t.Fatal(err)
		}
	}
	if srvs[0].Calls(t, "set") != before {
		t.Fatal("a lease was written before the group was refused")
	}
}

// A user without INFO (the common +@all -@dangerous) can still take a Redlock: the
// group tells its servers apart with a probe key, which it deletes after, and still
// refuses two clients of one server. A user refused the probe's commands too gets
// ErrServerIdentity.
func TestRedlockWithoutINFO(t *testing.T) {
	ctx := context.Background()
	users := []testserver.User{
		{Name: "app", Password: "pw", Rules: []string{"+@all", "-@dangerous", "~*"}},
		{Name: "noset", Password: "pw", Rules: []string{"+@all", "-@dangerous", "-set", "~*"}},
	}
	var srvs []*testserver.Server
	clientAs := func(s *testserver.Server, user string) *respire.Client {
		return testclient.New(t, respire.Options{Addrs: []string{s.Addr()}, Username: user, Password: "pw"})
	}
	var clients []*respire.Client
	for range 3 {
		s := testserver.Start(t, testserver.Config{Users: users})
		srvs = append(srvs, s)
		clients = append(clients, clientAs(s, "app"))
	}
	if _, err := clients[0].Do(ctx, "INFO", "server"); !resp.HasCode(err, "NOPERM") {
		t.Fatalf("INFO as app: %v, want NOPERM", err)
	}
	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, "rl:noinfo", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire without INFO: %v, %v", ok, err)
	}
	for i, s := range srvs {
		if keys := s.Do(t, "KEYS", "respire:redlock:identity:*"); keys != "" {
			t.Fatalf("server %d keeps probe marks: %s", i, keys)
		}
		if s.Do(t, "EXISTS", "rl:noinfo") != "1" {
			t.Fatalf("server %d does not hold the lease", i)
		}
	}
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}

	twins := newGroup(t, []*respire.Client{clients[0], clients[1], clientAs(srvs[0], "app")})
	if _, _, err := twins.TryAcquire(ctx, "rl:noinfo-twin", time.Minute); !errors.Is(err, ErrRedlockGroup) {
		t.Fatalf("two clients of one server without INFO: %v, want ErrRedlockGroup", err)
	}
	if srvs[0].Do(t, "EXISTS", "rl:noinfo-twin") != "0" {
		t.Fatal("a lease was written before the group was refused")
	}

	var refused []*respire.Client
	for _, s := range srvs {
		refused = append(refused, clientAs(s, "noset"))
	}
	// The error says "refused" once: the server's NOPERM says it.
	_, _, err = newGroup(t, refused).TryAcquire(ctx, "rl:noset", time.Minute)
	want := "coordination: cannot tell the redlock servers apart: client 0: NOPERM this user has no permissions to run the 'set' command"
	if !errors.Is(err, ErrServerIdentity) || err.Error() != want {
		t.Fatalf("without INFO and SET: %v\nwant %s", err, want)
	}
}

func TestRedlockRenewalAfterValidityFails(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, "rl:late", 300*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	testkit.WaitFor(t, "the validity to run out", func() bool { return rl.RemainingEstimate() == 0 })
	before := calls(t, srvs[0], "set", "evalsha")
	// The servers may still hold the key for a moment, but a renewal after the
	// validity cannot be trusted: refused without sending.
	if ok, err := rl.ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	if after := calls(t, srvs[0], "set", "evalsha"); after["set"] != before["set"] || after["evalsha"] != before["evalsha"] {
		t.Fatalf("a late renewal was sent: %v then %v", before, after)
	}
}

// Two clients of one server are refused even when one of them could not be reached
// while the server's identity was first learned, and the server restarted (a new
// run_id) before that client got through: identities are compared as they are now.
func TestRedlockTwinFoundAfterARestart(t *testing.T) {
	srvs, clients := redlockNodes(t, 2)
	var reachable atomic.Bool
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !reachable.Load() {
			return nil, errors.New("unreachable for now")
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	reachable.Store(true)
	twin := testclient.New(t, respire.Options{Addrs: []string{srvs[0].Addr()}, Dialer: dial})
	ctx := context.Background()
	id, err := twin.Do(ctx, "CLIENT", "ID")
	if err != nil {
		t.Fatal(err)
	}
	reachable.Store(false)
	srvs[0].Do(t, "CLIENT", "KILL", "ID", id.String())
	g := newGroup(t, []*respire.Client{clients[0], clients[1], twin})
	rl, ok, err := g.TryAcquire(ctx, "rl:twin-restart", time.Minute)
	if !ok || err != nil {
		t.Fatalf("with the twin unreachable, two servers of three: %v, %v", ok, err)
	}
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}
	srvs[0].Stop(t) // without persistence: it comes back with a new run_id
	srvs[0].Restart(t)
	reachable.Store(true)
	if _, _, err := g.TryAcquire(ctx, "rl:twin-restart", time.Minute); !errors.Is(err, ErrRedlockGroup) {
		t.Fatalf("the twin reachable after its server restarted: %v; want ErrRedlockGroup", err)
	}
}
