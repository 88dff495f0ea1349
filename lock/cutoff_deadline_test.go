package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// The cut-off of an uncertain command may take up to severTimeout when the server does
// not answer its CLIENT KILL. These tests hold every CLIENT KILL on a fake server, on
// the bubble's fake clock, and check that no caller bounded by a deadline, and no
// keep-alive, waits for the cut-off past its bound; the cut-off goes on and is
// reported once answered.

// wantCutoffOnceAnswered fails t unless the cut-off, in a synctest bubble, waits for
// its held CLIENT KILL without being reported, and is reported, as one that succeeded,
// once resumeKills lets the server answer.
func wantCutoffOnceAnswered(t *testing.T, rec *recorder, resumeKills func()) {
	t.Helper()
	synctest.Wait() // the cut-off's CLIENT KILL is sent, and held
	if cs := cutoffsOf(rec); len(cs) != 0 {
		t.Fatalf("cut-offs %+v before the server answered", cs)
	}
	resumeKills()
	synctest.Wait()
	if cs := cutoffsOf(rec); len(cs) != 1 || cs[0].Err != nil || cs[0].ClientID <= 0 {
		t.Fatalf("cut-offs %+v, want one that succeeded", cs)
	}
}

// A ResetExpiry or a Release whose context's deadline passes after its command was
// written returns at that deadline, with the lock lost as uncertain, while its cut-off
// waits for a CLIENT KILL the server does not answer; the cut-off is reported once
// answered (review of the coordination code, gap 1).
func TestCallsReturnByTheirDeadlineWhileCutOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold func(*fakeRedis) (release func())
		call func(context.Context, *Lock) error
	}{
		{"ResetExpiry", (*fakeRedis).holdRenewals, func(ctx context.Context, mu *Lock) error {
			ok, err := mu.ResetExpiry(ctx, time.Minute)
			if ok {
				return errors.New("renewed")
			}
			return err
		}},
		{"Release", (*fakeRedis).holdDeletes, func(ctx context.Context, mu *Lock) error {
			_, err := mu.Release(ctx)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const lease, deadline = 30 * time.Second, time.Second
				ctx := context.Background()
				rec := &recorder{}
				f, c := fakeClientWith(t, respire.Options{Observer: rec})
				mu, err := New(c).Acquire(ctx, "cut-off", lease)
				if err != nil {
					t.Fatal(err)
				}
				resume := tc.hold(f)
				defer resume()
				resumeKills := sync.OnceFunc(f.holdKills())
				defer resumeKills()

				cctx, cancel := context.WithTimeout(ctx, deadline)
				defer cancel()
				start := time.Now()
				err = tc.call(cctx, mu)
				if took := time.Since(start); took > deadline {
					t.Errorf("returned %v after it began, past its deadline (%v)", took, deadline)
				}
				if !errors.Is(err, ErrOwnershipUncertain) {
					t.Fatalf("with its command held: %v, want ErrOwnershipUncertain", err)
				}
				if cause := context.Cause(mu.KeepAliveContext()); !errors.Is(cause, ErrOwnershipUncertain) {
					t.Fatalf("the lock's context ends with %v", cause)
				}
				wantCutoffOnceAnswered(t, rec, resumeKills)
			})
		})
	}
}

// A keep-alive whose renewal is never answered ends its context at the lease's safe
// deadline (a twentieth of the lease before its expiry), and its goroutine stops
// then too, while the renewal's cut-off waits for a CLIENT KILL the server does not
// answer: the cut-off never holds back the loss (review of the coordination code, gap 1).
func TestKeepAliveStopsBySafeDeadlineWhileCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		ctx := context.Background()
		rec := &recorder{}
		f, c := fakeClientWith(t, respire.Options{Observer: rec})
		mu, err := New(c).Acquire(ctx, "cut-keepalive", lease)
		if err != nil {
			t.Fatal(err)
		}
		safe := mu.ExpiresAtEstimate().Add(-lease / 20)
		resumeRenewals := f.holdRenewals()
		defer resumeRenewals()
		resumeKills := sync.OnceFunc(f.holdKills())
		defer resumeKills()
		ka, err := mu.KeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}

		<-ka.Context().Done()
		if now := time.Now(); now.After(safe) {
			t.Errorf("the keep-alive's context ended %v past the safe deadline", now.Sub(safe))
		}
		cause := context.Cause(ka.Context())
		if !errors.Is(cause, ErrOwnershipUncertain) && !errors.Is(cause, ErrLeaseExpired) {
			t.Fatalf("the keep-alive's context ends with %v", cause)
		}
		<-ka.Done()
		if now := time.Now(); now.After(safe) {
			t.Errorf("the keep-alive stopped %v past the safe deadline", now.Sub(safe))
		}
		ka.Stop()
		wantCutoffOnceAnswered(t, rec, resumeKills)
	})
}

// Against a real server whose replies stop coming (a proxy holds them): a Release
// whose context's deadline passes after the delete was written returns without
// waiting for its cut-off, which cannot reach the server until the replies flow again
// (the dial's handshake waits) and is reported once they do. Before, Release waited
// for the cut-off, up to severTimeout past its deadline (review of the coordination
// code, gap 1).
func TestReleaseDoesNotWaitForItsCutOff(t *testing.T) {
	p, rec, _, mu := lockBehindProxy(t, "release-cut-off")

	p.Pause(faultproxy.ToClient)
	rctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := mu.Release(rctx)
	atReturn := len(cutoffsOf(rec))
	p.Resume(faultproxy.ToClient)
	if !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Release past its deadline: %v, want ErrOwnershipUncertain and context.DeadlineExceeded", err)
	}
	if atReturn != 0 {
		t.Fatalf("%d cut-offs reported when Release returned: it waited for the cut-off", atReturn)
	}
	testkit.WaitFor(t, "the cut-off, once the server answers", func() bool { return len(cutoffsOf(rec)) == 1 })
	if cs := cutoffsOf(rec); cs[0].Err != nil {
		t.Fatalf("the cut-off failed: %v", cs[0].Err)
	}
}

// A cut-off left running in the background when its caller's deadline passed belongs
// to the client: Close ends it and returns once it has, so nothing of the client's runs
// after Close. Closing the pool ended it before too, but on a goroutine nobody waited
// for, which could report the cut-off, and still run, after Close had returned.
func TestCloseEndsABackgroundCutOff(t *testing.T) {
	p, rec, c, mu := lockBehindProxy(t, "close-cut-off")
	ctx := context.Background()
	// A blocking command leaves a dedicated connection in the pool: the cut-off takes
	// it and writes its CLIENT KILL, whose answer the proxy then holds back (a dial
	// would wait for its handshake instead, which closing the pool ends anyway).
	if _, err := c.Do(ctx, "BLPOP", "close-cut-off:none", "0.01"); err != nil {
		t.Fatal(err)
	}

	p.Pause(faultproxy.ToClient)
	defer p.Resume(faultproxy.ToClient)
	rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := mu.Release(rctx); !errors.Is(err, ErrOwnershipUncertain) {
		t.Fatalf("Release past its deadline: %v, want ErrOwnershipUncertain", err)
	}
	if n := len(cutoffsOf(rec)); n != 0 {
		t.Fatalf("%d cut-offs reported when Release returned; want the cut-off still running", n)
	}
	c.Close()
	cs := cutoffsOf(rec)
	if len(cs) != 1 || !(errors.Is(cs[0].Err, context.Canceled) || errors.Is(cs[0].Err, respire.ErrClosed)) {
		t.Fatalf("cut-offs reported when Close returned: %+v; want the one Close ended", cs)
	}
}

// A cut-off whose CLIENT KILL fails (the server never answers it) closes the
// connection all the same, and what dies of that close is uncertain, not severed: the
// server may still run what it has read. Another lock's renewal in flight on that
// connection makes its lock lost at once. Before, the failed kill left the connection
// marked as severed, and that renewal was sent again on a fresh connection as if the
// first could no longer run.
func TestFailedCutOffLeavesOthersUncertain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = time.Hour
		ctx := context.Background()
		f, c := fakeClientWith(t, respire.Options{})
		locks := New(c)
		a, err := locks.Acquire(ctx, "failed-cut-a", lease)
		if err != nil {
			t.Fatal(err)
		}
		b, err := locks.Acquire(ctx, "failed-cut-b", lease)
		if err != nil {
			t.Fatal(err)
		}
		resumeRenewals := f.holdRenewals()
		defer resumeRenewals()
		resumeKills := sync.OnceFunc(f.holdKills())
		defer resumeKills()

		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if ok, err := a.ResetExpiry(actx, lease); ok || !errors.Is(err, ErrOwnershipUncertain) {
			t.Fatalf("a's renewal held past its deadline: %v %v", ok, err)
		}
		// b's renewal goes on the connection a's cut-off is trying to kill.
		bctx, bcancel := context.WithTimeout(ctx, 10*time.Minute)
		defer bcancel()
		start := time.Now()
		ok, err := b.ResetExpiry(bctx, lease)
		if ok || !errors.Is(err, ErrOwnershipUncertain) {
			t.Fatalf("b's renewal on the connection a failed to cut off: %v %v; want ErrOwnershipUncertain", ok, err)
		}
		if took := time.Since(start); took > 2*severTimeout {
			t.Errorf("b's renewal took %v: it did not end with the failed cut-off", took)
		}
	})
}

// lockBehindProxy holds key through a client that reaches a real server through a
// fault proxy, with an observer of its cut-offs, and has renewed it once, so that the
// managed calls' connection is dialled before a test pauses the proxy.
func lockBehindProxy(t *testing.T, key string) (*faultproxy.Proxy, *recorder, *respire.Client, *Lock) {
	t.Helper()
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	rec := &recorder{}
	c := testclient.At(t, p.Addr(), respire.Options{DialTimeout: time.Hour, ReadTimeout: time.Hour, Observer: rec})
	ctx := context.Background()
	mu, err := New(c).Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := mu.ResetExpiry(ctx, time.Minute); !held || err != nil {
		t.Fatal(held, err)
	}
	return p, rec, c, mu
}
