package coordination

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// recorder is an observer that keeps the lock events it is told of, and calls its hook,
// if set, with each of them.
type recorder struct {
	observe.Base
	mu    sync.Mutex
	locks []observe.Lock
	hook  func(observe.Lock)
}

func (r *recorder) Lock(_ context.Context, e observe.Lock) {
	r.mu.Lock()
	r.locks = append(r.locks, e)
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(e)
	}
}

// onLock makes every later event call hook, as well as being kept.
func (r *recorder) onLock(hook func(observe.Lock)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hook = hook
}

// take returns the events so far and forgets them.
func (r *recorder) take() []observe.Lock {
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.locks
	r.locks = nil
	return es
}

// want fails t unless the events so far are of the kinds want, in order, and the last
// one's Err matches err (nil: no error) and, for a release, its outcome is out.
func (r *recorder) want(t *testing.T, step string, err error, out observe.ReleaseOutcome, want ...observe.LockKind) {
	t.Helper()
	es := r.take()
	got := make([]observe.LockKind, len(es))
	for i, e := range es {
		got[i] = e.Kind
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: events %v, want %v", step, got, want)
	}
	last := es[len(es)-1]
	if !errors.Is(last.Err, err) {
		t.Fatalf("%s: %v reports %v, want %v", step, last.Kind, last.Err, err)
	}
	if last.Kind == observe.LockReleased && last.Release != out {
		t.Fatalf("%s: release reports %v, want %v", step, last.Release, out)
	}
}

func observedClient(t *testing.T, srv *testserver.Server, rec *recorder, tracking bool) *respire.Client {
	t.Helper()
	opts := respire.Options{Addrs: []string{srv.Addr()}, Observer: rec}
	if tracking {
		opts.ClientSideCache = &cache.Options{}
	}
	c := testclient.New(t, opts)
	if link.Of(c).Observer == nil {
		t.Fatal("the client has no observer")
	}
	return c
}

const (
	attempt   = observe.LockAttempt
	acquired  = observe.LockAcquired
	contended = observe.LockContended
	gaveUp    = observe.LockGaveUp
	renewed   = observe.LockRenewed
	lost      = observe.LockLost
	released  = observe.LockReleased
)

// A fenced lock reports its acquisition here and the rest of its life through package
// lock's handle.
func TestObserveFencedLock(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	co := New(observedClient(t, srv, rec, true))
	ctx := context.Background()

	fl, ok, err := co.TryAcquireFencedLock(ctx, "{obs}:lease", "{obs}:fence", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rec.want(t, "acquire", nil, 0, attempt, acquired)
	if _, ok, err := co.TryAcquireFencedLock(ctx, "{obs}:lease", "{obs}:fence", time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "held", nil, 0, attempt, contended)

	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := co.AcquireFencedLock(wctx, "{obs}:lease", "{obs}:fence", time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	rec.want(t, "wait", context.DeadlineExceeded, 0, attempt, contended, gaveUp)

	if ok, err := fl.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "renewal", nil, 0, renewed)
	srv.Do(t, "DEL", "{obs}:lease")
	if ok, err := fl.ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "renewal of a deleted lease", lock.ErrLeaseLost, 0, lost)
	if out, err := fl.Release(ctx); out != lock.NotOwned || err != nil {
		t.Fatal(out, err)
	}
	rec.want(t, "release", nil, observe.NotOwned, released)

	next, err := co.AcquireFencedLock(ctx, "{obs}:lease", "{obs}:fence", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rec.want(t, "waiting acquisition", nil, 0, attempt, acquired)
	for _, out := range []observe.ReleaseOutcome{observe.Released, observe.AlreadyReleased} {
		if _, err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
		rec.want(t, "release", nil, out, released)
	}
}

// Semaphore permits and read/write leases report the same steps at the same points.
func TestObserveEntries(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	rec := &recorder{}
	co := New(observedClient(t, srv, rec, false))
	ctx := context.Background()
	type lease interface {
		ResetExpiry(context.Context, time.Duration) (bool, error)
		Release(context.Context) (lock.ReleaseOutcome, error)
		Token() lock.Token
	}
	cases := []struct {
		name, key, field string
		acquire          func() (lease, bool, error)
	}{{
		name: "permit", key: "obs:sem", field: "p:",
		acquire: func() (lease, bool, error) {
			p, ok, err := co.Semaphore("obs:sem", 1).TryAcquire(ctx, time.Minute)
			return p, ok, err
		},
	}, {
		name: "write lease", key: "obs:rw", field: "w:",
		acquire: func() (lease, bool, error) {
			l, ok, err := co.TryAcquireWriteLock(ctx, "obs:rw", time.Minute)
			return l, ok, err
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec.take()
			l, ok, err := tc.acquire()
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			rec.want(t, "acquire", nil, 0, attempt, acquired)
			if _, ok, err := tc.acquire(); ok || err != nil {
				t.Fatal(ok, err)
			}
			rec.want(t, "held", nil, 0, attempt, contended)
			if ok, err := l.ResetExpiry(ctx, time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
			rec.want(t, "renewal", nil, 0, renewed)
			srv.Do(t, "HDEL", tc.key, tc.field+string(l.Token().Bytes()))
			if ok, err := l.ResetExpiry(ctx, time.Minute); ok || err != nil {
				t.Fatal(ok, err)
			}
			rec.want(t, "renewal of a deleted entry", lock.ErrLeaseLost, 0, lost)
			if out, err := l.Release(ctx); out != lock.NotOwned || err != nil {
				t.Fatal(out, err)
			}
			rec.want(t, "release", nil, observe.NotOwned, released)

			again, ok, err := tc.acquire()
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			rec.take()
			for _, out := range []observe.ReleaseOutcome{observe.Released, observe.AlreadyReleased} {
				if _, err := again.Release(ctx); err != nil {
					t.Fatal(err)
				}
				rec.want(t, "release", nil, out, released)
			}
		})
	}
}

// A Redlock reports as one lease, not once per server, though every server's client
// has the observer.
func TestObserveRedlock(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	srvs := make([]*testserver.Server, 3)
	clients := make([]*respire.Client, 3)
	for i := range srvs {
		srvs[i] = testserver.Start(t, testserver.Config{})
		clients[i] = observedClient(t, srvs[i], rec, false)
	}
	g := newGroup(t, clients)

	rl, ok, err := g.TryAcquire(ctx, "obs:rl", 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rec.want(t, "acquire", nil, 0, attempt, acquired)
	if _, ok, err := g.TryAcquire(ctx, "obs:rl", 30*time.Second); ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "held", nil, 0, attempt, contended)
	if ok, err := rl.ResetExpiry(ctx, 30*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "renewal", nil, 0, renewed)
	for _, out := range []observe.ReleaseOutcome{observe.Released, observe.AlreadyReleased} {
		if ok, err := rl.Release(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		rec.want(t, "release", nil, out, released)
	}

	rl, ok, err = g.TryAcquire(ctx, "obs:rl", 30*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rec.take()
	srvs[0].Do(t, "DEL", "obs:rl")
	srvs[1].Do(t, "DEL", "obs:rl")
	if ok, err := rl.ResetExpiry(ctx, 30*time.Second); ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.want(t, "renewal without quorum", lock.ErrLeaseLost, 0, lost)
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// The third server still held it, but no majority did: the lease was lost first.
	rec.want(t, "release", nil, observe.NotOwned, released)
}
