package coordination

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/faultproxy"
	"github.com/respire/respire/test/testserver"
)

// liveScript says whether an entry's field holds an expiry still ahead on the server's
// clock: an expired entry stays in the hash until a script reclaims it.
const liveScript = `local t = redis.call('TIME')
local exp = redis.call('HGET', KEYS[1], ARGV[1])
if exp and tonumber(exp) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then return 1 end
return 0`

// live says whether e is live on srv, by the server's clock.
func live(t *testing.T, srv *testserver.Server, e *entry) bool {
	t.Helper()
	return srv.Do(t, "EVAL", liveScript, "1", e.key, e.field) == "1"
}

// endsWith waits for ctx to end and checks its cause.
func endsWith(t *testing.T, what string, ctx context.Context, want error) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the keep-alive's context has not ended", what)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, want) {
		t.Fatalf("%s: the keep-alive's context ended with %v; want %v", what, cause, want)
	}
}

// outlives waits until d has passed since start and checks that ctx lives on.
func outlives(t *testing.T, ctx context.Context, start time.Time, d time.Duration) {
	t.Helper()
	testkit.WaitWithin(t, d+20*time.Second, "several leases to pass", func() bool {
		return ctx.Err() != nil || time.Since(start) > d
	})
	if ctx.Err() != nil {
		t.Fatalf("the keep-alive's context ended while held: %v", context.Cause(ctx))
	}
}

// A permit's and a read/write lease's keep-alive (lock.Lock's) keeps the entry past
// several TTLs on a real server, and its context ends with the cause: lock.ErrLeaseLost
// when the entry is deleted behind its back, lock.ErrReleased after Release,
// lock.ErrKeepAliveStopped after Stop (the entry stays until its TTL).
func TestEntryKeepAlive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	co := New(plainClient(t, srv))
	const ttl = time.Second
	kinds := []struct {
		name    string
		acquire func(key string, opts ...lock.Option) (*entry, error)
	}{{
		name: "permit",
		acquire: func(key string, opts ...lock.Option) (*entry, error) {
			p, _, err := co.Semaphore(key, 1).TryAcquire(ctx, ttl, opts...)
			return p.entryOrNil(), err
		},
	}, {
		name: "read lease",
		acquire: func(key string, opts ...lock.Option) (*entry, error) {
			l, _, err := co.TryAcquireReadLock(ctx, key, ttl, opts...)
			return l.entryOrNil(), err
		},
	}, {
		name: "write lease",
		acquire: func(key string, opts ...lock.Option) (*entry, error) {
			l, _, err := co.TryAcquireWriteLock(ctx, key, ttl, opts...)
			return l.entryOrNil(), err
		},
	}}
	exists := func(e *entry) bool { return live(t, srv, e) }
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			// take acquires the entry at key; with keepAlive through lock.WithKeepAlive.
			take := func(t *testing.T, key string, keepAlive bool) *entry {
				t.Helper()
				var opts []lock.Option
				if keepAlive {
					opts = append(opts, lock.WithKeepAlive())
				}
				e, err := kind.acquire(key, opts...)
				if err != nil || e == nil {
					t.Fatal("not acquired:", err)
				}
				return e
			}
			key := "ka:" + kind.name
			for _, keepAlive := range []bool{true, false} {
				start := time.Now()
				e := take(t, key, keepAlive)
				work := e.KeepAliveContext()
				ka, err := e.KeepAlive(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// With lock.WithKeepAlive, KeepAlive returns the one it started.
				if (work == ka.Context()) != keepAlive || e.KeepAliveContext() != ka.Context() {
					t.Fatal("KeepAliveContext is not the running keep-alive's")
				}
				outlives(t, ka.Context(), start, 3*ttl)
				if !exists(e) {
					t.Fatal("the entry is gone though its keep-alive runs")
				}
				if out, err := e.Release(ctx); out != lock.Released || err != nil {
					t.Fatal(out, err)
				}
				endsWith(t, "after Release", ka.Context(), lock.ErrReleased)
				<-ka.Done()
				if exists(e) {
					t.Fatal("the entry outlived its release")
				}
				if _, err := e.KeepAlive(ctx); !errors.Is(err, lock.ErrReleased) {
					t.Fatalf("KeepAlive after Release: %v", err)
				}
			}

			// Deleted behind its back: the next renewal finds it gone.
			e := take(t, key, true)
			ka := e.KeepAliveContext()
			srv.Do(t, "HDEL", e.key, e.field)
			endsWith(t, "after HDEL", ka, lock.ErrLeaseLost)
			if ok, err := e.ResetExpiry(ctx, ttl); ok || err != nil {
				t.Fatalf("ResetExpiry of a lost entry: %v %v", ok, err)
			}
			e.close()

			// Stopped: the entry stays held until its TTL, and nothing renews it.
			e = take(t, key, false)
			k, err := e.KeepAlive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			k.Stop()
			endsWith(t, "after Stop", k.Context(), lock.ErrKeepAliveStopped)
			if !exists(e) || e.KeepAliveContext() == k.Context() {
				t.Fatal("Stop released the entry, or KeepAliveContext is still the stopped keep-alive's")
			}
			// On the server's clock: the local estimate ends first.
			testkit.WaitWithin(t, 20*time.Second, "the stopped entry to expire", func() bool {
				return srv.Do(t, "EXISTS", e.key) == "0"
			})
			if ok, err := e.ResetExpiry(ctx, ttl); ok || err != nil {
				t.Fatalf("ResetExpiry after the stopped entry's TTL: %v %v", ok, err)
			}
			e.close()
		})
	}
}

// A Redlock's keep-alive renews on a quorum past several TTLs, and its context ends
// with the cause: lock.ErrLeaseLost when the key is deleted on a quorum, ErrNoQuorum
// when a quorum of servers is gone, lock.ErrReleased after Release and
// lock.ErrKeepAliveStopped after Stop. VerifyStillHeld asks the quorum.
func TestRedlockKeepAlive(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	const ttl = time.Second
	const key = "rl:ka"

	start := time.Now()
	rl, ok, err := g.TryAcquire(ctx, key, ttl, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	work := rl.KeepAliveContext()
	outlives(t, work, start, 3*ttl)
	if n := holders(t, srvs, key, tokenText(t, rl)); n != 3 {
		t.Fatalf("held on %d servers though the keep-alive runs", n)
	}
	if held, err := rl.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatalf("VerifyStillHeld: %v %v", held, err)
	}
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	endsWith(t, "after Release", work, lock.ErrReleased)
	if held, err := rl.VerifyStillHeld(ctx); held || err != nil {
		t.Fatalf("VerifyStillHeld after Release: %v %v", held, err)
	}

	// Deleted on a quorum behind its back.
	rl, ok, err = g.TryAcquire(ctx, key, ttl)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ka, err := rl.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvs[0].Do(t, "DEL", key)
	if held, err := rl.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatalf("VerifyStillHeld with one server's key gone: %v %v", held, err)
	}
	srvs[1].Do(t, "DEL", key)
	if held, err := rl.VerifyStillHeld(ctx); held || err != nil {
		t.Fatalf("VerifyStillHeld with a quorum's keys gone: %v %v", held, err)
	}
	endsWith(t, "after DEL on a quorum", ka.Context(), lock.ErrLeaseLost)
	if rl.RemainingEstimate() != 0 {
		t.Fatal("the handle still reports ownership")
	}
	rl.Close()

	// Stopped: held until the TTL.
	rl, ok, err = g.TryAcquire(ctx, key, ttl)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ka, err = rl.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ka.Stop()
	endsWith(t, "after Stop", ka.Context(), lock.ErrKeepAliveStopped)
	if n := holders(t, srvs, key, tokenText(t, rl)); n != 3 {
		t.Fatalf("Stop released the lease: held on %d servers", n)
	}
	rl.Close()

	// A quorum of servers gone.
	rl, ok, err = g.TryAcquire(ctx, key, ttl, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	srvs[0].Kill(t)
	srvs[1].Kill(t)
	endsWith(t, "with two servers of three gone", rl.KeepAliveContext(), ErrNoQuorum)
	if _, err := rl.VerifyStillHeld(ctx); !errors.Is(err, ErrNoQuorum) {
		t.Fatalf("VerifyStillHeld with two servers of three gone: %v", err)
	}
	rl.Close()
}

// A Redlock release whose deletes may have run on a quorum without an answer (the
// servers paused past NodeTimeout) ends a running keep-alive with
// lock.ErrOwnershipUncertain before it returns. Close deletes the key on every server.
func TestRedlockReleaseEndsKeepAlive(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, "rl:close", time.Minute, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n := holders(t, srvs, "rl:close", tokenText(t, rl)); n != 3 {
		t.Fatalf("held on %d servers", n)
	}
	if err := rl.Close(); err != nil {
		t.Fatal(err)
	}
	for i, s := range srvs {
		if s.Do(t, "EXISTS", "rl:close") != "0" {
			t.Fatalf("server %d keeps the key after Close", i)
		}
	}
	endsWith(t, "after Close", rl.KeepAliveContext(), lock.ErrReleased)

	rl, ok, err = g.TryAcquire(ctx, "rl:uncertain", time.Minute, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	ka := rl.KeepAliveContext()
	srvs[0].Pause(t)
	srvs[1].Pause(t)
	released, err := rl.Release(ctx)
	srvs[0].Resume(t)
	srvs[1].Resume(t)
	if released || !errors.Is(err, ErrNoQuorum) || !errors.Is(err, lock.ErrOwnershipUncertain) {
		t.Fatalf("Release with a quorum paused: %v %v; want ErrNoQuorum and ErrOwnershipUncertain", released, err)
	}
	select {
	case <-ka.Done():
	default:
		t.Fatal("the keep-alive's context outlived an uncertain release")
	}
	// Not "stopped with the lease still held": the handle no longer knows.
	if cause := context.Cause(ka); !errors.Is(cause, lock.ErrOwnershipUncertain) || errors.Is(cause, lock.ErrKeepAliveStopped) {
		t.Fatalf("the keep-alive's cause: %v; want ErrOwnershipUncertain", cause)
	}
	if _, err := rl.KeepAlive(ctx); !errors.Is(err, lock.ErrOwnershipUncertain) {
		t.Fatalf("KeepAlive after an uncertain release: %v", err)
	}
}

// A Redlock waits with lock.WithWait: it acquires once the holder releases, returns
// not acquired (no error) when the budget ends with the key held, and the caller's own
// deadline as an error.
func TestRedlockWait(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	const key = "rl:wait"
	holder, ok, err := g.TryAcquire(ctx, key, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if rl, ok, err := g.TryAcquire(ctx, key, time.Minute, lock.WithWait(300*time.Millisecond)); ok || err != nil || rl != nil {
		t.Fatalf("budget spent: %v %v %v", rl, ok, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, ok, err = g.TryAcquire(dctx, key, time.Minute, lock.WithWait(time.Minute))
	cancel()
	if ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline: %v %v", ok, err)
	}
	for _, opt := range []lock.Option{lock.WithWait(-time.Second), nil, lock.WithMaxAttempts(0)} {
		if _, ok, err := g.TryAcquire(ctx, key, time.Minute, opt); ok || !errors.Is(err, lock.ErrInvalidArg) {
			t.Fatalf("bad option: %v %v", ok, err)
		}
	}
	// The waiter must find the key held first: the release is the event it waits for.
	setsBefore := srvs[0].Calls(t, "set")
	var rl *Redlock
	acquired := make(chan struct{})
	go func() {
		defer close(acquired)
		rl, ok, err = g.TryAcquire(ctx, key, time.Minute, lock.WithWait(20*time.Second), lock.WithKeepAlive())
	}()
	testkit.WaitFor(t, "the waiter's first attempt", func() bool { return srvs[0].Calls(t, "set") > setsBefore })
	if _, err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	<-acquired
	if err != nil || !ok {
		t.Fatalf("waiting for a release: %v %v", ok, err)
	}
	// A majority is what a Redlock holds: an attempt that lands while the holder's
	// three deletes are in flight takes two servers and is acquired, as it should be.
	if n := holders(t, srvs, key, tokenText(t, rl)); n < 2 {
		t.Fatalf("the waiter holds %d servers, want a majority of 3", n)
	}
	if rl.KeepAliveContext().Err() != nil {
		t.Fatal("WithKeepAlive started no keep-alive")
	}
	rl.Close()
}

func (p *Permit) entryOrNil() *entry {
	if p == nil {
		return nil
	}
	return p.entry
}

func (l *RWLease) entryOrNil() *entry {
	if l == nil {
		return nil
	}
	return l.entry
}

// A renewal made by hand while a keep-alive runs moves it, on a real server: one that
// shortens the lease below half the TTL is followed by the keep-alive's renewal at
// once (not at the old schedule, after the short lease ended), and one that lengthens
// it moves the keep-alive's expiry deadline, which would end its context at the old
// expiry.
func TestKeepAliveFollowsResetExpiry(t *testing.T) {
	ctx := context.Background()
	srvs, clients := redlockNodes(t, 3)
	co := New(clients[0])
	g := newGroup(t, clients)
	// A short lease well above the keep-alive's margin (a twentieth of the TTL).
	const ttl, short = 10 * time.Second, 2 * time.Second

	p, ok, err := co.Semaphore("ka:reset", 1).TryAcquire(ctx, ttl, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	rl, ok, err := g.TryAcquire(ctx, "rl:ka:reset", ttl, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	shortened := time.Now()
	if ok, err := p.ResetExpiry(ctx, short); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := rl.ResetExpiry(ctx, short); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// Past the short lease, before the keep-alive's old schedule (half the TTL).
	outlives(t, p.KeepAliveContext(), shortened, 2*short)
	if !live(t, srvs[0], p.entry) {
		t.Fatal("the permit expired with the short lease set by hand")
	}
	if rl.KeepAliveContext().Err() != nil || holders(t, srvs, "rl:ka:reset", tokenText(t, rl)) != 3 {
		t.Fatalf("the Redlock expired with the short lease set by hand: %v", context.Cause(rl.KeepAliveContext()))
	}
	p.Close()
	rl.Close()

	// Lengthened: the keep-alive's context must not end at the old expiry.
	p, ok, err = co.Semaphore("ka:reset", 1).TryAcquire(ctx, short, lock.WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	lengthened := time.Now()
	if ok, err := p.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	outlives(t, p.KeepAliveContext(), lengthened, 2*short)
	p.Close()
}

// A permit's KeepAlive called while its Release is in flight (the delete has run on
// the server, its reply is held back) renews nothing, on a real server: the keep-alive
// it returns has stopped at once, only the delete reached the server, and the context
// ends with lock.ErrReleased when Release returns.
func TestPermitKeepAliveDuringRelease(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	p := faultproxy.Start(t, srv.Addr())
	ctx := context.Background()
	co := New(testclient.New(t, respire.Options{Addrs: []string{p.Addr()}}))
	permit, ok, err := co.Semaphore("ka:during:release", 1).TryAcquire(ctx, 10*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	// Less than half the TTL left: a keep-alive started now renews at once.
	if ok, err := permit.ResetExpiry(ctx, 4*time.Second); !ok || err != nil {
		t.Fatal(ok, err)
	}
	srv.Do(t, "SCRIPT", "LOAD", entryReleaseSource) // one EVALSHA per release, no NOSCRIPT first
	scripts := func() int { n := calls(t, srv, "evalsha", "eval"); return n["evalsha"] + n["eval"] }
	before := scripts()
	p.Pause(faultproxy.ToClient)
	type result struct {
		out lock.ReleaseOutcome
		err error
	}
	released := make(chan result, 1)
	go func() {
		out, err := permit.Release(ctx)
		released <- result{out, err}
	}()
	testkit.WaitFor(t, "the release's delete to run", func() bool { return scripts() > before })

	ka, err := permit.KeepAlive(ctx)
	if err != nil {
		t.Fatalf("KeepAlive during the release: %v", err)
	}
	select {
	case <-ka.Done():
	default:
		t.Fatal("KeepAlive during the release returned a keep-alive that renews")
	}
	p.Resume(faultproxy.ToClient)
	if r := <-released; r.out != lock.Released || r.err != nil {
		t.Fatalf("Release: %v %v", r.out, r.err)
	}
	if cause := context.Cause(ka.Context()); !errors.Is(cause, lock.ErrReleased) {
		t.Fatalf("the keep-alive's cause: %v; want lock.ErrReleased", cause)
	}
	if n := scripts() - before; n != 1 {
		t.Fatalf("%d scripts ran from the release on; want its delete alone", n)
	}
}

// A Redlock's KeepAlive called while its Release is in flight (the deletes have run on
// every server, their replies are held back) starts no renewal and is not refused as
// lost: the keep-alive it returns has stopped at once, and its context ends with
// lock.ErrReleased when Release returns.
func TestRedlockKeepAliveDuringRelease(t *testing.T) {
	ctx := context.Background()
	const key = "rl:ka:during:release"
	srvs, _ := redlockNodes(t, 3)
	proxies := make([]*faultproxy.Proxy, len(srvs))
	clients := make([]*respire.Client, len(srvs))
	for i, srv := range srvs {
		proxies[i] = faultproxy.Start(t, srv.Addr())
		clients[i] = testclient.New(t, respire.Options{Addrs: []string{proxies[i].Addr()}})
	}
	g := newGroup(t, clients)
	// A first lease taken and released makes the lock connections and loads the
	// release script, so that the release below is one round trip per server.
	warm, ok, err := g.TryAcquire(ctx, key+":warm", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := warm.Release(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rl, ok, err := g.TryAcquire(ctx, key, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	for _, p := range proxies {
		p.Pause(faultproxy.ToClient)
	}
	released := make(chan error, 1)
	go func() {
		ok, err := rl.Release(ctx)
		if err == nil && !ok {
			err = errors.New("no quorum confirmed the release")
		}
		released <- err
	}()
	testkit.WaitFor(t, "the release's deletes to run", func() bool {
		for _, s := range srvs {
			if s.Do(t, "EXISTS", key) != "0" {
				return false
			}
		}
		return true
	})

	ka, err := rl.KeepAlive(ctx)
	if err != nil {
		t.Fatalf("KeepAlive during the release: %v", err)
	}
	select {
	case <-ka.Done():
	default:
		t.Fatal("KeepAlive during the release returned a keep-alive that renews")
	}
	for _, p := range proxies {
		p.Resume(faultproxy.ToClient)
	}
	if err := <-released; err != nil {
		t.Fatalf("Release: %v", err)
	}
	if cause := context.Cause(ka.Context()); !errors.Is(cause, lock.ErrReleased) {
		t.Fatalf("the keep-alive's cause: %v; want lock.ErrReleased", cause)
	}
}
