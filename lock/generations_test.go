package lock

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// lockStats are the commands a lock's renewals and releases may run, as INFO
// commandstats names them.
var lockStats = []string{"set", "evalsha", "eval", "delex", "delifeq"}

// statCalls snapshots the calls of lockStats on s.
func statCalls(t *testing.T, s *testserver.Server) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, cmd := range lockStats {
		if n := s.CommandStat(t, cmd, "calls"); n != 0 {
			m[cmd] = n
		}
	}
	return m
}

// statDelta is after less before, without the commands that did not run.
func statDelta(before, after map[string]int) map[string]int {
	d := map[string]int{}
	for cmd, n := range after {
		if n -= before[cmd]; n != 0 {
			d[cmd] = n
		}
	}
	return d
}

// learned is what a client's connections know of their server after one acquire,
// renew and release cycle: SET IFEQ, DELEX and DELIFEQ, in that order.
type learned [3]conn.Support

// connLearned reads what the connections that serve key have learned: the lock
// connection, which carries the renewal, of SET IFEQ, and the shared connection, which
// carries a release that cannot be cancelled (releaseLane), of the deletes.
func connLearned(t *testing.T, c *respire.Client, key string) learned {
	t.Helper()
	lc, err := link.Of(c).Conn(context.Background(), route.LockLane, key)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := link.Of(c).Conn(context.Background(), route.SharedLane, key)
	if err != nil {
		t.Fatal(err)
	}
	renew, release := lc.Capabilities(), sc.Capabilities()
	return learned{renew.Load(capSetIfEq), release.Load(capDelEx), release.Load(capDelIfEq)}
}

// On each real server generation the lock takes the path of the table in the package
// doc: the native SET IFEQ where the server has it (Redis 8.6, Valkey 8.1 and 9.1), the
// native delete where it has one (DELEX on Redis 8.6, DELIFEQ on Valkey 9.1), the Lua
// scripts otherwise (Redis 6.0 and 7, and Valkey 8.1's release). A connection learns
// this from the first cycle's replies, and the second cycle on it runs exactly the
// commands of its path, as the server itself counts them.
func TestLockPathsOnRealServers(t *testing.T) {
	const (
		u = conn.Unknown
		s = conn.Supported
		n = conn.Unsupported
	)
	want := map[string]struct {
		learned learned
		again   map[string]int // commands the server ran for the second cycle
	}{
		testserver.Redis60:  {learned{n, n, n}, map[string]int{"set": 1, "evalsha": 2}},
		testserver.Redis7:   {learned{n, n, n}, map[string]int{"set": 1, "evalsha": 2}},
		testserver.Redis86:  {learned{s, s, u}, map[string]int{"set": 2, "delex": 1}},
		testserver.Valkey81: {learned{s, n, n}, map[string]int{"set": 2, "evalsha": 1}},
		testserver.Valkey91: {learned{s, n, s}, map[string]int{"set": 2, "delifeq": 1}},
	}
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			for _, proto := range []int{2, 3} {
				srv.Do(t, "SCRIPT", "FLUSH")
				c := testclient.At(t, srv.Addr(), respire.Options{Protocol: proto})
				locks := New(c)
				cycle(t, locks, "path")
				if got := connLearned(t, c, "path"); got != want[gen].learned {
					t.Errorf("RESP%d: learned SET IFEQ, DELEX, DELIFEQ = %v, want %v", proto, got, want[gen].learned)
				}
				before := statCalls(t, srv)
				cycle(t, locks, "path")
				if got := statDelta(before, statCalls(t, srv)); !maps.Equal(got, want[gen].again) {
					t.Errorf("RESP%d: the second cycle ran %v, want %v", proto, got, want[gen].again)
				}
				if srv.Do(t, "EXISTS", "path") != "0" {
					t.Fatalf("RESP%d: the lock is still there after its release", proto)
				}
			}
		})
	}
}

// An ownership mismatch on every generation, on each one's own path: a renewal and a
// release of a lock another owner now holds change nothing and say so, with no error.
func TestOwnershipMismatchOnRealServers(t *testing.T) {
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
			ctx := context.Background()
			mu, err := locks.Acquire(ctx, "owned", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			srv.Do(t, "SET", "owned", "someone-else", "PX", "40000")
			if ok, err := mu.ResetExpiry(ctx, time.Hour); ok || err != nil {
				t.Fatalf("renewal of another owner's lock: %v %v", ok, err)
			}
			if p := pttl(t, srv, "owned"); p > 40000 {
				t.Fatalf("another owner's TTL changed to %d ms", p)
			}
			if out, err := mu.Release(ctx); out != NotOwned || err != nil {
				t.Fatalf("release of another owner's lock: %v %v", out, err)
			}
			if got := srv.Do(t, "GET", "owned"); got != "someone-else" {
				t.Fatalf("another owner's lock holds %q", got)
			}
			if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrLeaseLost) {
				t.Fatalf("cause %v", context.Cause(mu.KeepAliveContext()))
			}
		})
	}
}

// A key of another type under a lock's name: the server's own error comes back from
// the path the connection has learned, and nothing else is tried. Natively that is
// WRONGTYPE, except Redis 8.6's DELEX, which refuses a condition on a non-string
// with an ERR; the Lua scripts' GET fails with WRONGTYPE, which Redis 6.0 wraps in
// an ERR of its own.
func TestWrongTypeOnRealServers(t *testing.T) {
	want := map[string]struct{ renew, release string }{
		testserver.Redis60:  {"ERR", "ERR"},
		testserver.Redis7:   {"WRONGTYPE", "WRONGTYPE"},
		testserver.Redis86:  {"WRONGTYPE", "ERR"},
		testserver.Valkey81: {"WRONGTYPE", "WRONGTYPE"},
		testserver.Valkey91: {"WRONGTYPE", "WRONGTYPE"},
	}
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
			ctx := context.Background()
			tok := TokenFromString("mine")
			// The raw-token calls' connection learns its path first.
			if ok, err := locks.TryTake(ctx, "typed", tok, time.Minute); !ok || err != nil {
				t.Fatalf("take: %v %v", ok, err)
			}
			if ok, err := locks.ResetExpiry(ctx, "typed", tok, time.Minute); !ok || err != nil {
				t.Fatalf("renew: %v %v", ok, err)
			}
			if ok, err := locks.Release(ctx, "typed", tok); !ok || err != nil {
				t.Fatalf("release: %v %v", ok, err)
			}
			srv.Do(t, "RPUSH", "typed", "x")
			before := statCalls(t, srv)
			_, err := locks.ResetExpiry(ctx, "typed", tok, time.Minute)
			if se, ok := resp.AsServerError(err); !ok || se.Code != want[gen].renew {
				t.Errorf("renewal of a list: %v, want a %s server error", err, want[gen].renew)
			}
			_, err = locks.Release(ctx, "typed", tok)
			if se, ok := resp.AsServerError(err); !ok || se.Code != want[gen].release {
				t.Errorf("release of a list: %v, want a %s server error", err, want[gen].release)
			}
			if got := statDelta(before, statCalls(t, srv)); sum(got) != 2 {
				t.Errorf("ran %v for one renewal and one release: something else was tried", got)
			}
			if srv.Do(t, "LLEN", "typed") != "1" {
				t.Fatal("the list changed")
			}
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// A user who may run neither SET nor the release's command of the generation's path
// (DELEX on Redis 8.6, DELIFEQ on Valkey 9.1, the scripts elsewhere) gets the server's
// NOPERM back from renewal and release, and no other path is tried: on Redis 8.6 and
// Valkey 9.1 the user may run scripts, so a fallback to them would delete the lock.
func TestNoPermissionOnRealServers(t *testing.T) {
	denied := map[string][]string{
		testserver.Redis60:  {"-evalsha", "-eval"},
		testserver.Redis7:   {"-evalsha", "-eval"},
		testserver.Redis86:  {"-delex"},
		testserver.Valkey81: {"-evalsha", "-eval"},
		testserver.Valkey91: {"-delifeq"},
	}
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			rules := append([]string{"+@all", "~*", "-set"}, denied[gen]...)
			srv := testserver.StartGeneration(t, gen, testserver.Config{Users: []testserver.User{{Name: "lim", Password: "pw", Rules: rules}}})
			ctx := context.Background()
			owner := New(testclient.At(t, srv.Addr(), respire.Options{}))
			limited := New(testclient.At(t, srv.Addr(), respire.Options{Username: "lim", Password: "pw"}))
			mu, err := owner.Acquire(ctx, "perm", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			before := pttl(t, srv, "perm")
			if ok, err := limited.ResetExpiry(ctx, "perm", mu.Token(), time.Hour); ok || !resp.HasCode(err, "NOPERM") {
				t.Fatalf("renewal without SET: %v %v", ok, err)
			}
			if pttl(t, srv, "perm") > before {
				t.Fatal("the TTL changed")
			}
			if ok, err := limited.Release(ctx, "perm", mu.Token()); ok || !resp.HasCode(err, "NOPERM") {
				t.Fatalf("release without %v: %v %v", denied[gen], ok, err)
			}
			if srv.Do(t, "GET", "perm") != mu.Token().b {
				t.Fatal("the lock changed although its paths were denied")
			}
			if out, err := mu.Release(ctx); out != Released || err != nil {
				t.Fatalf("the owner's release: %v %v", out, err)
			}
		})
	}
}
