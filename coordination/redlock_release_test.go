package coordination

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// observedNodes starts n independent servers, with extra server arguments, and a
// client of each that reports to rec.
func observedNodes(t *testing.T, n int, rec *recorder, args ...string) ([]*testserver.Server, []*respire.Client) {
	t.Helper()
	srvs := make([]*testserver.Server, n)
	clients := make([]*respire.Client, n)
	for i := range n {
		srvs[i] = testserver.Start(t, testserver.Config{Args: args})
		clients[i] = observedClient(t, srvs[i], rec, false)
	}
	return srvs, clients
}

// A release is confirmed by a quorum of servers that no longer hold the token, and is
// reported as Released only when its deletes reached a majority: when fewer found the
// token, a majority may have lost the lease before the release, which the observer
// hears as NotOwned.
func TestRedlockReleaseOutcome(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		breakIt func(t *testing.T, srvs []*testserver.Server)
		ok      bool
		out     observe.ReleaseOutcome // the observer's
		left    int                    // servers still holding the token afterwards
	}{{
		name: "every server deletes", ok: true, out: observe.Released,
		breakIt: func(*testing.T, []*testserver.Server) {},
	}, {
		name: "a minority down", ok: true, out: observe.Released,
		breakIt: func(t *testing.T, srvs []*testserver.Server) { srvs[2].Kill(t) },
	}, {
		name: "lost on a majority", ok: true, out: observe.NotOwned,
		breakIt: func(t *testing.T, srvs []*testserver.Server) {
			srvs[0].Do(t, "DEL", "rl:out")
			srvs[1].Do(t, "DEL", "rl:out")
		},
	}, {
		// One server has another owner's token, one is down: one delete confirmed, and
		// a quorum without the token, but no proof a majority held it until now.
		name: "one of three deletes", ok: true, out: observe.NotOwned,
		breakIt: func(t *testing.T, srvs []*testserver.Server) {
			srvs[0].Do(t, "SET", "rl:out", "another owner")
			srvs[1].Kill(t)
		},
	}, {
		name: "a majority down", ok: false, out: observe.ReleaseFailed, left: 0,
		breakIt: func(t *testing.T, srvs []*testserver.Server) {
			srvs[0].Kill(t)
			srvs[1].Kill(t)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			srvs, clients := observedNodes(t, 3, rec)
			rl, ok, err := newGroup(t, clients).TryAcquire(ctx, "rl:out", 30*time.Second)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			rec.take()
			tc.breakIt(t, srvs)
			ok, err = rl.Release(ctx)
			if ok != tc.ok || (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNoQuorum)) {
				t.Fatalf("release: %v %v, want %v", ok, err, tc.ok)
			}
			var wantErr error
			if !tc.ok {
				wantErr = ErrNoQuorum
			}
			rec.want(t, "release", wantErr, tc.out, released)
			if n := holders(t, srvs, "rl:out", tokenText(t, rl)); n != tc.left {
				t.Fatalf("%d servers hold the token after the release, want %d", n, tc.left)
			}
			if !tc.ok {
				return
			}
			again := observe.AlreadyReleased
			if tc.out == observe.NotOwned {
				again = observe.NotOwned
			}
			if ok, err := rl.Release(ctx); !ok || err != nil {
				t.Fatalf("second release: %v %v", ok, err)
			}
			rec.want(t, "second release", nil, again, released)
		})
	}
}

// The deletes of a failed release count for the retry that reaches a quorum: one
// delete in each call makes a majority of deletes, so the lease was held until then.
func TestRedlockRetriedReleaseCountsEarlierDeletes(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	// With persistence, a stopped server keeps the lease for a retry to delete.
	srvs, clients := observedNodes(t, 3, rec, "--appendonly", "yes")
	rl, ok, err := newGroup(t, clients).TryAcquire(ctx, "rl:retry", 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	token := tokenText(t, rl)
	rec.take()
	srvs[1].Stop(t)
	srvs[2].Stop(t)
	if ok, err := rl.Release(ctx); ok || !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("release with a majority down: %v %v", ok, err)
	}
	rec.want(t, "failed release", ErrNoQuorum, observe.ReleaseFailed, released)

	srvs[1].Restart(t)
	if n := holders(t, srvs, "rl:retry", token); n != 1 {
		t.Fatalf("%d servers hold the lease after a restart, want 1", n)
	}
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("retried release: %v %v", ok, err)
	}
	rec.want(t, "retried release", nil, observe.Released, released)

	// A later release still sends to the server not yet confirmed.
	srvs[2].Restart(t)
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("third release: %v %v", ok, err)
	}
	rec.want(t, "third release", nil, observe.AlreadyReleased, released)
	if n := holders(t, srvs, "rl:retry", token); n != 0 {
		t.Fatalf("%d servers hold the lease after the releases", n)
	}
}
