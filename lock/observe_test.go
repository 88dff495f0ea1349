package lock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// recorder is an observer that keeps the lock and cut-off events it is told of.
type recorder struct {
	observe.Base
	mu      sync.Mutex
	locks   []observe.Lock
	cutoffs []observe.Cutoff
}

func (r *recorder) Lock(_ context.Context, e observe.Lock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.locks = append(r.locks, e)
}

func (r *recorder) Cutoff(e observe.Cutoff) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cutoffs = append(r.cutoffs, e)
}

// take returns the lock events so far and forgets them.
func (r *recorder) take() []observe.Lock {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.locks
	r.locks = nil
	return es
}

// cutoffsOf returns the cut-offs rec was told of.
func cutoffsOf(rec *recorder) []observe.Cutoff {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.cutoffs)
}

func kinds(es []observe.Lock) []observe.LockKind {
	out := make([]observe.LockKind, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

// wantKinds fails t unless es are events of exactly the kinds want, in order.
func wantKinds(t *testing.T, step string, es []observe.Lock, want ...observe.LockKind) {
	t.Helper()
	if got := kinds(es); !slices.Equal(got, want) {
		t.Fatalf("%s: events %v, want %v", step, got, want)
	}
}

// observedServer starts a server and a Locker whose client reports to a recorder.
func observedServer(t *testing.T) (*testserver.Server, *respire.Client, *Locker, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.At(t, srv.Addr(), respire.Options{Observer: rec})
	if link.Of(c).Observer == nil {
		t.Fatal("the client has no observer: Options.Observer is not wired into NewClient")
	}
	return srv, c, New(c), rec
}

// An acquisition, a renewal, a renewal that fails unsent, a release and a second
// release each report themselves.
func TestObserveCycle(t *testing.T) {
	_, _, locks, rec := observedServer(t)
	ctx := context.Background()

	mu, ok, err := locks.TryAcquire(ctx, "obs:cycle", time.Minute)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	es := rec.take()
	wantKinds(t, "acquire", es, observe.LockAttempt, observe.LockAcquired)
	if es[1].Err != nil {
		t.Fatalf("acquired with error %v", es[1].Err)
	}

	if ok, err := mu.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatalf("ResetExpiry %v %v", ok, err)
	}
	es = rec.take()
	wantKinds(t, "renewal", es, observe.LockRenewed)
	if es[0].Err != nil {
		t.Fatalf("a successful renewal reports %v", es[0].Err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := mu.ResetExpiry(cancelled, time.Minute); err == nil || conn.WasWritten(err) {
		t.Fatalf("ResetExpiry with a cancelled context: %v; want a renewal not sent", err)
	}
	es = rec.take()
	wantKinds(t, "unsent renewal", es, observe.LockRenewed)
	if !errors.Is(es[0].Err, context.Canceled) {
		t.Fatalf("an unsent renewal reports %v, want its context's error", es[0].Err)
	}

	for _, want := range []observe.ReleaseOutcome{observe.Released, observe.AlreadyReleased} {
		if _, err := mu.Release(ctx); err != nil {
			t.Fatal(err)
		}
		es = rec.take()
		wantKinds(t, "release", es, observe.LockReleased)
		if es[0].Release != want || es[0].Err != nil {
			t.Fatalf("release reports %v (%v), want %v", es[0].Release, es[0].Err, want)
		}
	}
}

// A try that finds another owner reports LockContended; the acquisition gives up
// (LockGaveUp) when it was to wait, or to fail, and ends without the lock.
func TestObserveContention(t *testing.T) {
	_, _, locks, rec := observedServer(t)
	ctx := context.Background()
	holder, err := locks.Acquire(ctx, "obs:held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	poll := WithRetryEvery(5 * time.Millisecond)

	cases := []struct {
		name    string
		acquire func(ctx context.Context) error
		timeout time.Duration // of the acquisition's context; 0 for none
		gaveUp  error         // the LockGaveUp's Err; nil: no LockGaveUp
	}{{
		name: "TryAcquire once",
		acquire: func(ctx context.Context) error {
			_, _, err := locks.TryAcquire(ctx, "obs:held", time.Second)
			return err
		},
	}, {
		name: "Acquire once",
		acquire: func(ctx context.Context) error {
			_, err := locks.Acquire(ctx, "obs:held", time.Second)
			return nil2(err, ErrNotAcquired)
		},
		gaveUp: ErrNotAcquired,
	}, {
		name: "wait budget",
		acquire: func(ctx context.Context) error {
			_, _, err := locks.TryAcquire(ctx, "obs:held", time.Second, WithWait(50*time.Millisecond), poll)
			return err
		},
		gaveUp: ErrNotAcquired,
	}, {
		name: "context timeout",
		acquire: func(ctx context.Context) error {
			_, err := locks.Acquire(ctx, "obs:held", time.Second, WithWait(time.Hour), poll)
			return nil2(err, context.DeadlineExceeded)
		},
		timeout: 50 * time.Millisecond,
		gaveUp:  context.DeadlineExceeded,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			actx := ctx
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			rec.take()
			if err := tc.acquire(actx); err != nil {
				t.Fatal(err)
			}
			es := rec.take()
			tries := es
			if tc.gaveUp != nil {
				if len(es) == 0 || es[len(es)-1].Kind != observe.LockGaveUp || !errors.Is(es[len(es)-1].Err, tc.gaveUp) {
					t.Fatalf("events %v, want tries then a LockGaveUp with %v", kinds(es), tc.gaveUp)
				}
				tries = es[:len(es)-1]
				if n := len(tries); tc.timeout > 0 && n%2 == 1 && tries[n-1].Kind == observe.LockAttempt {
					tries = tries[:n-1] // the context ended during the last try
				}
			}
			var lastWait time.Duration
			for i, e := range tries {
				want := []observe.LockKind{observe.LockAttempt, observe.LockContended}[i%2]
				if e.Kind != want || len(tries)%2 != 0 {
					t.Fatalf("events %v, want attempts each followed by LockContended", kinds(es))
				}
				if e.Kind == observe.LockContended {
					if e.Wait < lastWait {
						t.Fatalf("contended after %v, then after %v", lastWait, e.Wait)
					}
					lastWait = e.Wait
				}
			}
			if len(tries) == 0 {
				t.Fatal("no try reported")
			}
		})
	}
}

// nil2 returns nil when err matches want, else an error saying what came instead.
func nil2(err, want error) error {
	if errors.Is(err, want) {
		return nil
	}
	return errors.Join(errors.New("want "+want.Error()), err)
}

// A keep-alive that finds its key deleted or overwritten reports the loss with the
// cause the lock's context ends with, and how long the lock was held; the release that
// follows reports NotOwned. On the bubble's clock, after one good renewal.
func TestObserveLeaseLost(t *testing.T) {
	const lease = 10 * time.Second
	cases := []struct {
		name   string
		change func(f *fakeRedis, key string)
	}{
		{"deleted", func(f *fakeRedis, key string) { f.del(key) }},
		{"overwritten", func(f *fakeRedis, key string) { f.set(key, "another owner", time.Minute) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				rec := &recorder{}
				f, c := fakeClientWith(t, respire.Options{Observer: rec})
				if link.Of(c).Observer == nil {
					t.Fatal("the client has no observer: Options.Observer is not wired into NewClient")
				}
				mu, ok, err := New(c).TryAcquire(ctx, "ka", lease, WithKeepAlive())
				if err != nil || !ok {
					t.Fatal(ok, err)
				}
				time.Sleep(lease/2 + time.Second) // renewed at lease/2
				tc.change(f, "ka")
				time.Sleep(lease/2 + time.Second) // the next renewal, at lease, finds it
				synctest.Wait()
				if cause := context.Cause(mu.KeepAliveContext()); !errors.Is(cause, ErrLeaseLost) {
					t.Fatalf("the lock's context ends with %v", cause)
				}
				es := rec.take()
				wantKinds(t, "keep-alive", es, observe.LockAttempt, observe.LockAcquired, observe.LockRenewed, observe.LockLost)
				if lost := es[3]; !errors.Is(lost.Err, ErrLeaseLost) || lost.Wait != lease {
					t.Fatalf("lost after %v with %v; want after %v with ErrLeaseLost", lost.Wait, lost.Err, lease)
				}
				if out, err := mu.Release(ctx); out != NotOwned || err != nil {
					t.Fatal(out, err)
				}
				es = rec.take()
				wantKinds(t, "release", es, observe.LockReleased)
				if es[0].Release != observe.NotOwned || es[0].Wait != lease+2*time.Second {
					t.Fatalf("release reports %v after %v", es[0].Release, es[0].Wait)
				}
			})
		})
	}
}

// A release after the key expired reports NotOwned, and no loss: the release is what
// found it.
func TestObserveReleaseAfterExpiry(t *testing.T) {
	srv, _, locks, rec := observedServer(t)
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "obs:expiring", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "PEXPIRE", "obs:expiring", "1")
	testkit.WaitFor(t, "the key to expire", func() bool { return srv.Do(t, "EXISTS", "obs:expiring") == "0" })
	rec.take()
	if out, err := mu.Release(ctx); out != NotOwned || err != nil {
		t.Fatal(out, err)
	}
	es := rec.take()
	wantKinds(t, "release", es, observe.LockReleased)
	if es[0].Release != observe.NotOwned || es[0].Err != nil {
		t.Fatalf("release reports %v (%v), want not owned", es[0].Release, es[0].Err)
	}
}

// A renewal stuck behind CLIENT PAUSE until its context ends reports the loss as
// ErrOwnershipUncertain and the cut-off (CLIENT KILL) of the lock connection that carried
// it, by that connection's CLIENT ID.
func TestObserveCutoff(t *testing.T) {
	srv, c, locks, rec := observedServer(t)
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		if attempt == 50 {
			t.Fatal("no renewal was written before its context ended")
		}
		key := "obs:severed:" + strconv.Itoa(attempt)
		mu, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		cn, err := link.Of(c).Conn(ctx, route.LockLane, key)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := cn.ID()
		rec.take()
		srv.Do(t, "CLIENT", "PAUSE", "60", "WRITE")
		tctx, cancel := context.WithTimeout(ctx, 15*time.Millisecond)
		_, err = mu.ResetExpiry(tctx, time.Minute)
		cancel()
		if errors.Is(err, conn.ErrNotSent) {
			continue // the context ended before the renewal was written: nothing to sever
		}
		if !errors.Is(err, ErrOwnershipUncertain) {
			t.Fatalf("renewal stuck behind the pause: %v", err)
		}
		srv.Do(t, "CLIENT", "UNPAUSE")
		es := rec.take()
		wantKinds(t, "uncertain renewal", es, observe.LockLost)
		if !errors.Is(es[0].Err, ErrOwnershipUncertain) {
			t.Fatalf("lost with %v, want ErrOwnershipUncertain", es[0].Err)
		}
		// The cut-off goes on once ResetExpiry returned at its deadline.
		testkit.WaitFor(t, "the cut-off", func() bool { return len(cutoffsOf(rec)) > 0 })
		cutoffs := cutoffsOf(rec)
		want := observe.Cutoff{Addr: cn.Addr(), ClientID: id}
		if len(cutoffs) != 1 || cutoffs[0] != want || id <= 0 {
			t.Fatalf("cut-offs %+v, want %+v", cutoffs, want)
		}
		return
	}
}

// A keep-alive whose renewals are refused (LOADING) until the lease runs out reports
// each failed renewal, then the loss to expiry, once, when the lock's context ends.
func TestObserveLeaseExpired(t *testing.T) {
	const lease = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rec := &recorder{}
		f, c := fakeClientWith(t, respire.Options{Observer: rec})
		f.mu.Lock()
		f.loading = 1 << 30
		f.mu.Unlock()
		mu, ok, err := New(c).TryAcquire(ctx, "ka", lease, WithKeepAlive())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		defer mu.Close()
		time.Sleep(lease + time.Second)
		synctest.Wait()
		if cause := context.Cause(mu.KeepAliveContext()); !errors.Is(cause, ErrLeaseExpired) {
			t.Fatalf("the lock's context ends with %v", cause)
		}
		es := rec.take()
		wantKinds(t, "acquire", es[:2], observe.LockAttempt, observe.LockAcquired)
		var losses, failed int
		for _, e := range es[2:] {
			switch {
			case e.Kind == observe.LockLost:
				losses++
				if !errors.Is(e.Err, ErrLeaseExpired) || e.Wait != lease-lease/20 {
					t.Fatalf("lost after %v with %v; want after %v with ErrLeaseExpired", e.Wait, e.Err, lease-lease/20)
				}
			case e.Kind == observe.LockRenewed && e.Err != nil:
				failed++
			default:
				t.Fatalf("%v (%v) among the refused renewals", e.Kind, e.Err)
			}
		}
		if losses != 1 || failed == 0 {
			t.Fatalf("%d losses and %d failed renewals; want one loss after failed renewals", losses, failed)
		}
	})
}
