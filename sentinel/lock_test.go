package sentinel_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/sentinelserver"
	"github.com/respire/respire/test/testserver"
)

// capSetIfEq is the lock package's capability name for SET ... IFEQ in a connection's
// capability memory. Redis 7 answers that SET with "ERR syntax error", so a connection
// that has renewed a lock records it as unsupported.
const capSetIfEq = "lock.set-ifeq"

// lockCounters are what INFO commandstats says about lock commands on one server.
type lockCounters struct {
	failedSets int // SET ... IFEQ probes refused with a syntax error
	scripts    int // EVALSHA and EVAL calls
}

func countersOf(t *testing.T, s *testserver.Server) lockCounters {
	t.Helper()
	return lockCounters{
		failedSets: s.CommandStat(t, "set", "failed_calls"),
		scripts:    s.Calls(t, "evalsha") + s.Calls(t, "eval"),
	}
}

// TestLockAcrossFailover holds a lock with a keep-alive through a failover. The
// keep-alive must either renew on the new master (which then holds the token with
// the lease the handle believes in) or end its context; and lock commands after the
// failover discover the new master's capabilities on new connections.
func TestLockAcrossFailover(t *testing.T) {
	t.Run("SENTINEL FAILOVER", func(t *testing.T) {
		testLockAcrossFailover(t, func(d *sentinelserver.Deployment) *testserver.Server { return d.Failover(t) })
	})
	t.Run("kill -9 of the master", func(t *testing.T) {
		testLockAcrossFailover(t, func(d *sentinelserver.Deployment) *testserver.Server {
			old := d.KillMaster(t)
			return d.WaitNewMaster(t, old.Addr())
		})
	})
}

func testLockAcrossFailover(t *testing.T, fault func(*sentinelserver.Deployment) *testserver.Server) {
	const (
		key = "locks:failover"
		ttl = 3 * time.Second
	)
	d := sentinelserver.Start(t, sentinelserver.Config{})
	c := sentinelClient(t, d, respire.Options{})
	locks := lock.New(c)
	ctx := context.Background()

	mu, ok, err := locks.TryAcquire(ctx, key, ttl, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	defer mu.Close()
	work := mu.KeepAliveContext()
	token := string(mu.Token().Bytes())

	oldConn, err := link.Of(c).Conn(ctx, route.LockLane, key) // renewals travel on lock connections
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitWithin(t, 2*ttl, "a renewal on the old master", func() error {
		if s := oldConn.Capabilities().Load(capSetIfEq); s != conn.Unsupported {
			return fmt.Errorf("old connection's %s: %v", capSetIfEq, s)
		}
		return nil
	})
	// Both replicas have the lock, so the promoted one has it.
	replicas := d.Nodes[1:]
	testkit.WaitWithin(t, 5*time.Second, "the replicas to have the lock", func() error {
		for _, r := range replicas {
			if got, err := r.DoErr(ctx, "GET", key); err != nil || got != token {
				return fmt.Errorf("%s: GET = %q, %v", r.Addr(), got, err)
			}
		}
		return nil
	})
	base := map[string]lockCounters{}
	for _, r := range replicas {
		base[r.Addr()] = countersOf(t, r)
	}

	nm := fault(d)
	testkit.WaitWithin(t, 15*time.Second, "the client to use the new master", func() error {
		addr, err := servedBy(c)
		if err == nil && addr != nm.Addr() {
			err = fmt.Errorf("served by %s", addr)
		}
		return err
	})
	switchedAt := time.Now()

	// Within a lease, the keep-alive renews on the new master or gives up.
	testkit.WaitWithin(t, 2*ttl, "a renewal after the switch, or the end of the keep-alive", func() error {
		if work.Err() != nil || mu.ExpiresAtEstimate().Add(-ttl).After(switchedAt) {
			return nil
		}
		return errors.New("neither yet")
	})
	if work.Err() != nil {
		cause := context.Cause(work)
		t.Logf("the keep-alive ended its context: %v", cause)
		if errors.Is(cause, lock.ErrKeepAliveStopped) || errors.Is(cause, lock.ErrReleased) {
			t.Fatalf("ended by %v, which the test did not ask for", cause)
		}
	} else {
		// It renewed after the switch, so on the new master: the token is there, with
		// the lease the handle believes in (a renewal sent to the old master would
		// leave it at least half a lease shorter).
		if got, err := nm.DoErr(ctx, "GET", key); err != nil || got != token {
			t.Fatalf("the keep-alive runs but the new master holds %q (%v), not the lock's token", got, err)
		}
		text, err := nm.DoErr(ctx, "PTTL", key)
		pttl, _ := strconv.Atoi(text)
		believed := time.Until(mu.ExpiresAtEstimate())
		if err != nil || (believed-time.Duration(pttl)*time.Millisecond).Abs() > 750*time.Millisecond {
			t.Fatalf("new master's PTTL %s (%v), the handle believes %v", text, err, believed)
		}
		if held, err := mu.VerifyStillHeld(ctx); err != nil || !held {
			t.Fatalf("VerifyStillHeld = %v, %v", held, err)
		}
		t.Logf("the keep-alive renewed on the new master %v after the switch; PTTL there %dms", mu.ExpiresAtEstimate().Add(-ttl).Sub(switchedAt).Round(time.Millisecond), pttl)
	}

	// A lock taken after the failover: its connection is new and learns there.
	mu2, ok, err := locks.TryAcquire(ctx, "locks:after", ttl)
	if err != nil || !ok {
		t.Fatalf("TryAcquire after the failover = %v, %v", ok, err)
	}
	if ok, err := mu2.ResetExpiry(ctx, ttl); err != nil || !ok {
		t.Fatalf("ResetExpiry after the failover = %v, %v", ok, err)
	}
	cn, err := link.Of(c).Conn(ctx, route.LockLane, "locks:after")
	if err != nil {
		t.Fatal(err)
	}
	if cn == oldConn || cn.Addr() != nm.Addr() {
		t.Fatalf("lock commands after the failover ran on %s (old connection: %v), want a new one to %s", cn.Addr(), cn == oldConn, nm.Addr())
	}
	if s := cn.Capabilities().Load(capSetIfEq); s != conn.Unsupported {
		t.Fatalf("the new connection's %s is %v after a renewal", capSetIfEq, s)
	}
	got := countersOf(t, nm)
	was := base[nm.Addr()]
	t.Logf("new master %s: SET ... IFEQ refused %d times, scripts run %d times since the failover", nm.Addr(),
		got.failedSets-was.failedSets, got.scripts-was.scripts)
	if got.failedSets <= was.failedSets || got.scripts <= was.scripts {
		t.Fatalf("no capability discovery on the new master: counters %+v, before the failover %+v", got, was)
	}
	if outcome, err := mu2.Release(ctx); err != nil || outcome != lock.Released {
		t.Fatalf("Release after the failover = %v, %v", outcome, err)
	}
}
