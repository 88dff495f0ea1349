package lock

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// acquisition is how a waiting TryAcquire ended.
type acquisition struct {
	mu  *Lock
	ok  bool
	err error
}

// waitFor starts a TryAcquire of key that waits an hour and polls once an hour, so
// that only a release of the same Locker can end its pauses, and returns where it
// reports.
func waitFor(ctx context.Context, locks *Locker, key string, ttl time.Duration, opts ...Option) <-chan acquisition {
	got := make(chan acquisition, 1)
	opts = append([]Option{WithWait(time.Hour), WithRetryEvery(time.Hour)}, opts...)
	go func() {
		mu, ok, err := locks.TryAcquire(ctx, key, ttl, opts...)
		got <- acquisition{mu, ok, err}
	}()
	return got
}

// tookKey waits for the acquisition at got and fails t unless it took the lock.
func tookKey(t *testing.T, got <-chan acquisition) *Lock {
	t.Helper()
	select {
	case a := <-got:
		if a.err != nil || !a.ok {
			t.Fatalf("the waiter: %v %v", a.ok, a.err)
		}
		return a.mu
	case <-time.After(testkit.Wait):
		t.Fatalf("the waiter did not take the key within %v", testkit.Wait)
	}
	return nil
}

// asleep waits until key has n waiters of locks sleeping in a pause, offering their
// next try's handle to a release.
func asleep(t *testing.T, locks *Locker, key string, n int) {
	t.Helper()
	testkit.WaitFor(t, "the waiters to find the key held and sleep", func() bool {
		return locks.handoff.sleepers(key) == n && locks.handoff.waiters(key) == n
	})
}

// passCalls snapshots the calls of the commands a release and an acquisition may run
// on s, those run by scripts included.
func passCalls(t *testing.T, s *testserver.Server) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, cmd := range append([]string{"get", "del"}, lockStats...) {
		if n := s.CommandStat(t, cmd, "calls"); n != 0 {
			m[cmd] = n
		}
	}
	return m
}

// On every generation a release passes the key to a waiter of the same Locker that
// sleeps in its pause, in one command the server runs: SET ... IFEQ where the server
// has it (Redis 8.6, Valkey 8.1 and 9.1), the compare-and-set script elsewhere (Redis
// 6.0 and 7). The waiter holds the key, under a token of its own, with its own TTL,
// when the release returns, without a SET NX of its own; its handle renews and
// releases as any other.
func TestReleasePassesTheKeyInOneCommand(t *testing.T) {
	// The server counts the commands a script runs too: the pass script's GET and SET.
	// Two steps would have deleted the key (DEL, DELEX or DELIFEQ) and then SET it NX.
	want := map[string]map[string]int{
		testserver.Redis60:  {"evalsha": 1, "get": 1, "set": 1},
		testserver.Redis7:   {"evalsha": 1, "get": 1, "set": 1},
		testserver.Redis86:  {"set": 1},
		testserver.Valkey81: {"set": 1},
		testserver.Valkey91: {"set": 1},
	}
	for _, gen := range testserver.Generations {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
			ctx := context.Background()
			const key = "locks:pass"

			held, err := locks.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// The first pass on a connection learns its path (SET IFEQ, or NOSCRIPT
			// then EVAL); the second is counted.
			for round := range 2 {
				got := waitFor(ctx, locks, key, 30*time.Second)
				asleep(t, locks, key, 1)
				before := passCalls(t, srv)
				if out, err := held.Release(ctx); out != Released || err != nil {
					t.Fatalf("round %d: release: %v %v", round, out, err)
				}
				next := tookKey(t, got)
				if round == 1 {
					if ran := statDelta(before, passCalls(t, srv)); !maps.Equal(ran, want[gen]) {
						t.Errorf("the server ran %v for the release and the waiter's acquisition, want %v", ran, want[gen])
					}
				}
				if next.Token() == held.Token() {
					t.Fatal("the waiter holds the releasing lock's token")
				}
				if owner := srv.Do(t, "GET", key); owner != next.Token().b {
					t.Fatalf("the key holds %q, not the waiter's token", owner)
				}
				if p := pttl(t, srv, key); p <= 0 || p > 30000 {
					t.Fatalf("the key's TTL is %d ms, want the waiter's 30 s", p)
				}
				if cause := context.Cause(held.KeepAliveContext()); !errors.Is(cause, ErrReleased) {
					t.Fatalf("the releasing lock's context ended with %v, want ErrReleased", cause)
				}
				if ok, err := next.ResetExpiry(ctx, time.Minute); !ok || err != nil {
					t.Fatalf("renewal of the passed lock: %v %v", ok, err)
				}
				held = next
			}
			if out, err := held.Release(ctx); out != Released || err != nil {
				t.Fatalf("release of the passed lock: %v %v", out, err)
			}
			if srv.Do(t, "EXISTS", key) != "0" {
				t.Fatal("the key is still there after the last release, with no waiter")
			}
		})
	}
}

// A release whose pass finds another token in the key has lost its lock, exactly as a
// delete that finds one: NotOwned, ErrLeaseLost, and the other owner's key untouched.
// The waiter it took is woken and tries the key itself: it sleeps again while the
// other owner holds it, and takes it once it is free.
func TestPassFindsTheLockLost(t *testing.T) {
	for _, gen := range []string{testserver.Redis60, testserver.Redis7, testserver.Redis86, testserver.Valkey91} {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
			ctx := context.Background()
			const key = "locks:lost"

			held, err := locks.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			got := waitFor(ctx, locks, key, time.Minute)
			asleep(t, locks, key, 1)
			srv.Do(t, "SET", key, "someone-else", "PX", "60000")
			if out, err := held.Release(ctx); out != NotOwned || err != nil {
				t.Fatalf("release of a lock another owner took: %v %v", out, err)
			}
			if cause := context.Cause(held.KeepAliveContext()); !errors.Is(cause, ErrLeaseLost) {
				t.Fatalf("the lost lock's context ended with %v, want ErrLeaseLost", cause)
			}
			if owner := srv.Do(t, "GET", key); owner != "someone-else" {
				t.Fatalf("the other owner's key holds %q", owner)
			}
			if p := pttl(t, srv, key); p > 60000 {
				t.Fatalf("the other owner's TTL changed to %d ms", p)
			}
			// Woken, the waiter tried, found the key held, and sleeps again.
			asleep(t, locks, key, 1)
			select {
			case a := <-got:
				t.Fatalf("the waiter ended while another owner holds the key: %v %v", a.ok, a.err)
			default:
			}
			// A lock of this Locker whose key expired: its release finds the key gone,
			// and wakes the waiter it took, which takes the key with its own try.
			srv.Do(t, "DEL", key)
			expired, err := locks.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			srv.Do(t, "DEL", key)
			if out, err := expired.Release(ctx); out != NotOwned || err != nil {
				t.Fatalf("release of an expired lock: %v %v", out, err)
			}
			next := tookKey(t, got)
			if owner := srv.Do(t, "GET", key); owner != next.Token().b {
				t.Fatalf("the key holds %q, not the woken waiter's token", owner)
			}
			if out, err := next.Release(ctx); out != Released || err != nil {
				t.Fatalf("release: %v %v", out, err)
			}
		})
	}
}

// A waiter whose context ends while a release is passing it the key returns its
// context's cause and no lock; the release, which learns the key is passed, gives it
// back rather than leave it held by nobody until its TTL, and wakes the next waiter,
// which takes it.
func TestPassToACancelledWaiter(t *testing.T) {
	for _, gen := range []string{testserver.Redis7, testserver.Redis86} {
		t.Run(gen, func(t *testing.T) {
			srv := testserver.StartGeneration(t, gen, testserver.Config{})
			// No reply timeout: the server is paused while the pass is in flight.
			locks := New(testclient.At(t, srv.Addr(), respire.Options{ReadTimeout: -1}))
			ctx := context.Background()
			const key = "locks:cancelled"

			held, err := locks.Acquire(ctx, key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithCancel(ctx)
			defer cancel()
			first := waitFor(short, locks, key, time.Minute)
			asleep(t, locks, key, 1)
			second := waitFor(ctx, locks, key, time.Minute)
			asleep(t, locks, key, 2)

			srv.Pause(t)
			released := make(chan error, 1)
			go func() {
				out, err := held.Release(ctx)
				if err == nil && out != Released {
					err = errors.New(out.String())
				}
				released <- err
			}()
			// The release took the first waiter off the list: its pass is on its way.
			testkit.WaitFor(t, "the release to take the first waiter", func() bool { return locks.handoff.waiters(key) == 1 })
			cancel()
			a := <-first
			srv.Resume(t)
			if a.ok || a.mu != nil || !errors.Is(a.err, context.Canceled) {
				t.Fatalf("the cancelled waiter: %v %v %v, want no lock and context.Canceled", a.mu, a.ok, a.err)
			}
			if err := <-released; err != nil {
				t.Fatalf("the release: %v", err)
			}
			next := tookKey(t, second)
			if owner := srv.Do(t, "GET", key); owner != next.Token().b {
				t.Fatalf("the key holds %q, not the second waiter's token", owner)
			}
			if out, err := next.Release(ctx); out != Released || err != nil {
				t.Fatalf("release: %v %v", out, err)
			}
			if srv.Do(t, "EXISTS", key) != "0" || locks.handoff.waiters(key) != 0 {
				t.Fatal("the key or a waiter is left over")
			}
		})
	}
}

// A passed lock asked for WithKeepAlive starts its keep-alive as an acquired one does,
// and the events are those of a waiter that took the key with its own try: attempts,
// the try that found it held, the attempt that took it, acquired; the release reports
// itself released.
func TestKeepAliveAfterPass(t *testing.T) {
	srv, _, locks, rec := observedServer(t)
	ctx := context.Background()
	const key = "locks:kept"

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rec.take()
	got := waitFor(ctx, locks, key, 2*time.Second, WithKeepAlive())
	asleep(t, locks, key, 1)
	wantKinds(t, "the waiter's first try", rec.take(), observe.LockAttempt, observe.LockContended)
	if out, err := held.Release(ctx); out != Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
	next := tookKey(t, got)
	// The release reports itself before the waiter hears of the pass
	// (TestPassReportsTheReleaseFirst); here each side's events are checked apart.
	var released, waiter []observe.Lock
	for _, e := range rec.take() {
		if e.Kind == observe.LockReleased {
			released = append(released, e)
		} else {
			waiter = append(waiter, e)
		}
	}
	wantKinds(t, "the waiter", waiter, observe.LockAttempt, observe.LockAcquired)
	if len(released) != 1 || released[0].Release != observe.Released {
		t.Fatalf("the release reports %v, want one release that released", released)
	}
	// The keep-alive renews the 2 s lease: the key outlives it.
	testkit.WaitFor(t, "the keep-alive to renew the passed lock", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, e := range rec.locks {
			if e.Kind == observe.LockRenewed && e.Err == nil {
				return true
			}
		}
		return false
	})
	if owner := srv.Do(t, "GET", key); owner != next.Token().b {
		t.Fatalf("after the renewal the key holds %q", owner)
	}
	if err := next.KeepAliveContext().Err(); err != nil {
		t.Fatalf("the keep-alive's context ended: %v", context.Cause(next.KeepAliveContext()))
	}
	if out, err := next.Release(ctx); out != Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
	if cause := context.Cause(next.KeepAliveContext()); !errors.Is(cause, ErrReleased) {
		t.Fatalf("the keep-alive ended with %v, want ErrReleased", cause)
	}
}

// failures is an observer that counts the commands of its client that failed, by
// name.
type failures struct {
	observe.Base
	mu sync.Mutex
	n  map[string]int
}

func (f *failures) CommandEnd(_ context.Context, e observe.CommandEnd) {
	if e.Err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[e.Name]++
}

func (f *failures) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[name]
}

// A pass whose reply never comes (its reply times out) is an uncertain release, cut
// off as one; the waiter it took is told so, gives the token that may have been
// passed to it back once the cut-off has settled the pass, and goes on waiting with a
// fresh one: the passed token never stays in the key. Against Redis 7, paused so that
// the pass is written and not answered until its reply timed out.
func TestUncertainPass(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	failed := &failures{}
	// The reply timeout is what makes the pass uncertain: it runs from the write.
	locks := New(testclient.At(t, srv.Addr(), respire.Options{ReadTimeout: 200 * time.Millisecond, Observer: failed}))
	ctx := context.Background()
	const key = "locks:uncertain"

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The lock connection is dialled, and has learned the script path, before the
	// pause.
	if ok, err := held.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	wctx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	got := waitFor(wctx, locks, key, time.Minute)
	asleep(t, locks, key, 1)
	locks.handoff.mu.Lock()
	offered := locks.handoff.waiting[key][0].offer.Token()
	locks.handoff.mu.Unlock()

	failedBefore := failed.count("EVALSHA") // the renewal's NOSCRIPT
	srv.Pause(t)
	// A release whose context can end travels on the lock connection, which is cut
	// off when its outcome is unknown.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	released := make(chan error, 1)
	go func() {
		_, err := held.Release(rctx)
		released <- err
	}()
	testkit.WaitFor(t, "the pass to time out", func() bool { return failed.count("EVALSHA") > failedBefore })
	srv.Resume(t) // the cut-off's CLIENT KILL can run
	if err := <-released; !errors.Is(err, ErrOwnershipUncertain) || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("the timed-out release: %v, want ownership uncertain, outcome unknown", err)
	}
	if cause := context.Cause(held.KeepAliveContext()); !errors.Is(cause, ErrOwnershipUncertain) {
		t.Fatalf("the releasing lock's context ended with %v", cause)
	}
	// The cut-off settled the pass: it ran, and the waiter gave the key back and took
	// it with a fresh token, or it never will, and the releasing token stays until
	// its TTL while the waiter sleeps again.
	var next *Lock
	testkit.WaitFor(t, "the waiter to take the key or sleep again", func() bool {
		select {
		case a := <-got:
			if a.err != nil || !a.ok {
				t.Fatalf("the waiter: %v %v", a.ok, a.err)
			}
			next = a.mu
			return true
		default:
			return locks.handoff.sleepers(key) == 1 && srv.Do(t, "GET", key) == held.Token().b
		}
	})
	owner := srv.Do(t, "GET", key)
	if owner == offered.b {
		t.Fatal("the key holds the token passed to the waiter")
	}
	t.Logf("the pass ran: %v", next != nil)
	if next != nil {
		if next.Token() == offered || owner != next.Token().b {
			t.Fatalf("the waiter holds %v, the key %q: want a fresh token in the key", next.Token(), owner)
		}
		if out, err := next.Release(ctx); out != Released || err != nil {
			t.Fatalf("release: %v %v", out, err)
		}
	}
}

// With no waiter of its own Locker sleeping on the key, a release deletes it, for
// other processes to take: a waiter of another client (another process, as far as
// this Locker knows) takes it with its own try, and a local waiter of another key is
// not passed it.
func TestReleaseWithoutLocalWaiterDeletes(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	remote := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	const key = "locks:shared"

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := locks.Acquire(ctx, "locks:other", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	octx, stop := context.WithCancel(ctx)
	defer stop()
	local := waitFor(octx, locks, "locks:other", time.Minute)
	asleep(t, locks, "locks:other", 1)
	far := make(chan acquisition, 1)
	go func() {
		mu, ok, err := remote.TryAcquire(ctx, key, time.Minute, WithWait(time.Hour), WithRetryEvery(10*time.Millisecond))
		far <- acquisition{mu, ok, err}
	}()
	testkit.WaitFor(t, "the remote waiter to find the key held", func() bool { return remote.handoff.waiters(key) == 1 })
	if out, err := held.Release(ctx); out != Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
	next := tookKey(t, far)
	if owner := srv.Do(t, "GET", key); owner != next.Token().b {
		t.Fatalf("the key holds %q, not the remote waiter's token", owner)
	}
	if locks.handoff.sleepers("locks:other") != 1 || srv.Do(t, "GET", "locks:other") != other.Token().b {
		t.Fatal("the release of one key passed another key's lock")
	}
	stop()
	if a := <-local; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the local waiter of the other key: %v %v", a.ok, a.err)
	}
	for _, mu := range []*Lock{next, other} {
		if out, err := mu.Release(ctx); out != Released || err != nil {
			t.Fatalf("release: %v %v", out, err)
		}
	}
}

// A waiter that a release took while its server is stalled returns when its wait
// budget is spent, not when the server answers: with no reply timeout and a release
// whose context cannot end, it would wait for as long as the server is paused. The
// release gives back what it passed once the server answers, and the key is free.
// Before, the waiter's pause ended only on the pass's outcome or its context.
func TestPassWaiterKeepsItsBudget(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{ReadTimeout: -1}))
	ctx := context.Background()
	const key = "locks:budget"

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan acquisition, 1)
	go func() {
		mu, ok, err := locks.TryAcquire(ctx, key, time.Minute, WithWait(time.Second), WithRetryEvery(time.Hour))
		got <- acquisition{mu, ok, err}
	}()
	asleep(t, locks, key, 1)
	srv.Pause(t)
	released := make(chan error, 1)
	go func() {
		_, err := held.Release(ctx)
		released <- err
	}()
	testkit.WaitFor(t, "the release to take the waiter", func() bool { return locks.handoff.waiters(key) == 0 })
	var a acquisition
	testkit.WaitFor(t, "the waiter to return while the server is paused", func() bool {
		select {
		case a = <-got:
			return true
		default:
			return false
		}
	})
	srv.Resume(t)
	if a.ok || a.mu != nil || a.err != nil {
		t.Fatalf("the waiter: %v %v %v, want not acquired", a.mu, a.ok, a.err)
	}
	if err := <-released; err != nil {
		t.Fatalf("the release: %v", err)
	}
	testkit.WaitFor(t, "the passed key to be given back", func() bool { return srv.Do(t, "EXISTS", key) == "0" })
}

// Local waiters that take a key in turn do not keep it from others for ever: after
// maxPassStreak passes in a row the release deletes the key, as releases did before
// passes, so that other processes and Lockers can race for it, and wakes the longest
// local waiter, which takes it with a try of its own, without waiting out its retry
// pause (an hour here). The next release passes again. Counted on Redis 8.6, where a
// pass is a SET and a delete a DELEX. Before the streak, every release passed; with a
// streak that woke nobody, the ninth waiter slept out its hour.
func TestPassStreakDeletesAndWakes(t *testing.T) {
	srv := testserver.StartGeneration(t, testserver.Redis86, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	const key = "locks:streak"

	h, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for release := 1; release <= maxPassStreak+2; release++ {
		got := waitFor(ctx, locks, key, time.Minute)
		asleep(t, locks, key, 1)
		before := statCalls(t, srv)
		if out, err := h.Release(ctx); out != Released || err != nil {
			t.Fatalf("release %d: %v %v", release, out, err)
		}
		deletes := statDelta(before, statCalls(t, srv))["delex"]
		h = tookKey(t, got)
		if want := release == maxPassStreak+1; (deletes == 1) != want || deletes > 1 {
			t.Fatalf("release %d sent %d DELEX; want a delete only at release %d", release, deletes, maxPassStreak+1)
		}
	}
	if out, err := h.Release(ctx); out != Released || err != nil {
		t.Fatalf("last release: %v %v", out, err)
	}
}

// Observers see a release that passed the key before the acquisition it made: the
// waiter's LockAcquired comes after the release's LockReleased, so that a gauge of
// held locks never counts two holders. Before, the waiter was told first and often
// reported first.
func TestPassReportsTheReleaseFirst(t *testing.T) {
	_, _, locks, rec := observedServer(t)
	ctx := context.Background()
	const key = "locks:order"

	for round := range 20 {
		held, err := locks.Acquire(ctx, key, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		got := waitFor(ctx, locks, key, time.Minute)
		asleep(t, locks, key, 1)
		rec.take()
		if out, err := held.Release(ctx); out != Released || err != nil {
			t.Fatalf("round %d: release: %v %v", round, out, err)
		}
		next := tookKey(t, got)
		var order []observe.LockKind
		for _, e := range rec.take() {
			if e.Kind == observe.LockReleased || e.Kind == observe.LockAcquired {
				order = append(order, e.Kind)
			}
		}
		if want := []observe.LockKind{observe.LockReleased, observe.LockAcquired}; !slices.Equal(order, want) {
			t.Fatalf("round %d: events %v, want %v", round, order, want)
		}
		// Released with no waiter: deleted, so each round passes a lock of its own
		// try's, never one at the end of a streak (maxPassStreak).
		if out, err := next.Release(ctx); out != Released || err != nil {
			t.Fatalf("round %d: release: %v %v", round, out, err)
		}
	}
}

// A passed lock's validity is counted from when the pass was sent, not from its reply:
// the waiter's TTL started on the server no earlier. The lock connection is held up
// on the server by a BLPOP sent ahead of the pass, so that the reply comes well after
// the send.
func TestPassValidityStartsAtTheSend(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{ReadTimeout: -1}))
	ctx := context.Background()
	const key = "locks:validity"
	const ttl = 30 * time.Second

	held, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// The lock connection is dialled before it is blocked.
	if ok, err := held.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	got := waitFor(ctx, locks, key, ttl)
	asleep(t, locks, key, 1)
	block := blockLockLane(t, srv, locks, key)
	// A release whose context can end goes on the lock connection.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	released := make(chan error, 1)
	go func() {
		_, err := held.Release(rctx)
		released <- err
	}()
	testkit.WaitFor(t, "the pass to wait behind the BLPOP", func() bool { return block.queued(t) })
	sent := time.Now() // the pass was sent by now
	block.unblock(t)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	next := tookKey(t, got)
	if exp := next.ExpiresAtEstimate(); exp.After(sent.Add(ttl)) {
		t.Fatalf("the passed lock expires %v after the pass was sent, more than its TTL %v", exp.Sub(sent), ttl)
	}
	if out, err := next.Release(ctx); out != Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
}

// laneBlock holds up a Locker's lock connection on its server behind a BLPOP, so that
// what is sent on it meanwhile runs only once the test unblocks it, after anything
// sent on other connections. The client needs no reply timeout (ReadTimeout -1).
type laneBlock struct {
	srv       *testserver.Server
	lane      *conn.Conn
	unblocked chan error
}

var queuedBehindBLPOP = regexp.MustCompile(`qbuf=[1-9][0-9]* .*cmd=blpop`)

// blockLockLane blocks the lock connection of locks that serves key, which must be
// dialled already.
func blockLockLane(t *testing.T, srv *testserver.Server, locks *Locker, key string) *laneBlock {
	t.Helper()
	lane, err := locks.ln.ConnBy(t.Context(), time.Time{}, route.LockLane, key)
	if err != nil {
		t.Fatal(err)
	}
	b := &laneBlock{srv: srv, lane: lane, unblocked: make(chan error, 1)}
	go func() {
		_, err := lane.Do(context.Background(), "BLPOP", "locks:unblock", 0)
		b.unblocked <- err
	}()
	testkit.WaitFor(t, "the lock connection to block", func() bool {
		return strings.Contains(srv.Do(t, "CLIENT", "LIST"), "cmd=blpop")
	})
	return b
}

// queued says that a command waits behind the BLPOP, unread by the server.
func (b *laneBlock) queued(t *testing.T) bool {
	return queuedBehindBLPOP.MatchString(b.srv.Do(t, "CLIENT", "LIST"))
}

// unblock ends the BLPOP, and returns once what was queued behind it has run.
func (b *laneBlock) unblock(t *testing.T) {
	t.Helper()
	b.srv.Do(t, "LPUSH", "locks:unblock", "go")
	if err := <-b.unblocked; err != nil {
		t.Fatal(err)
	}
	if _, err := b.lane.Do(context.Background(), "PING"); err != nil {
		t.Fatal(err)
	}
}
