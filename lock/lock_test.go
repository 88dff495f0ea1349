package lock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

func pttl(t *testing.T, srv *testserver.Server, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(srv.Do(t, "PTTL", key), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAcquireReleaseBasics(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()

	mu, ok, err := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v %v", ok, err)
	}
	if got := srv.Do(t, "GET", "locks:report"); got != mu.Token().b {
		t.Fatalf("stored %q, token %q", got, mu.Token().b)
	}
	if p := pttl(t, srv, "locks:report"); p < 29000 || p > 30000 {
		t.Fatalf("PTTL %d", p)
	}
	if mu.Key() != "locks:report" || mu.Duration() != 30*time.Second {
		t.Fatal(mu.Key(), mu.Duration())
	}
	if r := mu.RemainingEstimate(); r <= 29*time.Second || r > 30*time.Second {
		t.Fatalf("RemainingEstimate %v", r)
	}
	if _, ok, _ := locks.TryAcquire(ctx, "locks:report", time.Second); ok {
		t.Fatal("second owner acquired a held lock")
	}
	if _, err := locks.Acquire(ctx, "locks:report", time.Second); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("Acquire of a held lock: %v", err)
	}
	if held, err := mu.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatalf("VerifyStillHeld %v %v", held, err)
	}
	owner, ok, err := locks.OwnerToken(ctx, "locks:report")
	if err != nil || !ok || owner != mu.Token() {
		t.Fatalf("OwnerToken %v %v %v", owner, ok, err)
	}
	if ok, err := mu.ResetExpiry(ctx, 60*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry %v %v", ok, err)
	}
	// ResetExpiry sets the TTL from now; it does not add to what is left.
	if p := pttl(t, srv, "locks:report"); p < 59000 || p > 60000 {
		t.Fatalf("PTTL after ResetExpiry(60s) %d", p)
	}
	if ok, err := mu.ResetExpiry(ctx, 5*time.Second); !ok || err != nil {
		t.Fatalf("ResetExpiry %v %v", ok, err)
	}
	if p := pttl(t, srv, "locks:report"); p < 4000 || p > 5000 {
		t.Fatalf("PTTL after ResetExpiry(5s) %d: a renewal must set, not extend", p)
	}
	if r := mu.RemainingEstimate(); r <= 4*time.Second || r > 5*time.Second {
		t.Fatalf("RemainingEstimate after ResetExpiry(5s) %v", r)
	}
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatalf("Release %v %v", out, err)
	}
	if srv.Do(t, "EXISTS", "locks:report") != "0" {
		t.Fatal("key still there after Release")
	}
	if out, err := mu.Release(ctx); out != AlreadyReleased || err != nil {
		t.Fatalf("second Release %v %v", out, err)
	}
	if ok, err := mu.ResetExpiry(ctx, time.Second); ok || err != nil {
		t.Fatalf("ResetExpiry after release %v %v", ok, err)
	}
	if _, ok, err := locks.OwnerToken(ctx, "locks:report"); ok || err != nil {
		t.Fatalf("OwnerToken of a free lock %v %v", ok, err)
	}
	if err := mu.KeepAliveContext().Err(); err == nil || !errors.Is(context.Cause(mu.KeepAliveContext()), ErrReleased) {
		t.Fatalf("KeepAliveContext after release: %v", context.Cause(mu.KeepAliveContext()))
	}
	if err := mu.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReleaseOfAnotherOwnersLock(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "SET", "k", "someone-else", "PX", "50000")
	if out, err := mu.Release(ctx); out != NotOwned || err != nil {
		t.Fatalf("Release of a replaced lock: %v %v", out, err)
	}
	if srv.Do(t, "GET", "k") != "someone-else" {
		t.Fatal("another owner's lock was deleted")
	}
	if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrLeaseLost) {
		t.Fatalf("cause %v", context.Cause(mu.KeepAliveContext()))
	}
}

// Renewing a missing, expired or replaced lock never creates it and never touches
// another owner's TTL.
func TestRenewNeverCreatesOrStealsTTL(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	tok := TokenFromString("mine")

	if ok, err := locks.ResetExpiry(ctx, "missing", tok, time.Minute); ok || err != nil {
		t.Fatalf("renew missing: %v %v", ok, err)
	}
	if srv.Do(t, "EXISTS", "missing") != "0" {
		t.Fatal("renew created the key")
	}
	srv.Do(t, "SET", "other", "theirs", "PX", "40000")
	if ok, err := locks.ResetExpiry(ctx, "other", tok, 5*time.Minute); ok || err != nil {
		t.Fatalf("renew other's: %v %v", ok, err)
	}
	if p := pttl(t, srv, "other"); p > 40000 {
		t.Fatalf("another owner's TTL changed to %d", p)
	}
	// Taken for long, then cut to a short lease: a 50 ms acquisition whose reply a
	// loaded machine delays would not be held at all.
	mu, err := locks.Acquire(ctx, "short", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := mu.ResetExpiry(ctx, 50*time.Millisecond); !ok || err != nil {
		t.Fatalf("cut to 50 ms: %v %v", ok, err)
	}
	testkit.WaitFor(t, "expiry", func() bool { return srv.Do(t, "EXISTS", "short") == "0" })
	if ok, err := mu.ResetExpiry(ctx, time.Minute); ok || err != nil {
		t.Fatalf("renew expired: %v %v", ok, err)
	}
	if srv.Do(t, "EXISTS", "short") != "0" {
		t.Fatal("renewal recreated an expired lock")
	}
	if out, _ := mu.Release(ctx); out != NotOwned {
		t.Fatalf("release of expired: %v", out)
	}
	// A list under the key: the server's WRONGTYPE comes back, nothing else is tried.
	srv.Do(t, "RPUSH", "list", "x")
	if _, err := locks.ResetExpiry(ctx, "list", tok, time.Minute); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("renew a list: %v", err)
	}
}

func TestBinaryTokens(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range []int{2, 3} {
		locks := New(testclient.At(t, srv.Addr(), respire.Options{Protocol: proto}))
		ctx := context.Background()
		kib := make([]byte, 1024)
		for i := range kib {
			kib[i] = byte(i * 31)
		}
		for name, raw := range map[string][]byte{
			"nul bytes":     []byte("a\x00b\x00"),
			"invalid utf-8": {0xff, 0xfe, 0xc3, 0x28},
			"1 KiB":         kib,
		} {
			tok := TokenFromBytes(raw)
			key := "bin:" + name
			if ok, err := locks.TryTake(ctx, key, tok, time.Minute); !ok || err != nil {
				t.Fatalf("%s: take %v %v", name, ok, err)
			}
			owner, ok, err := locks.OwnerToken(ctx, key)
			if !ok || err != nil || owner != tok || string(owner.Bytes()) != string(raw) {
				t.Fatalf("%s: owner %s, want %s (%v)", name, owner, tok, err)
			}
			near := TokenFromBytes(append(append([]byte{}, raw[:len(raw)-1]...), raw[len(raw)-1]^1))
			if ok, _ := locks.ResetExpiry(ctx, key, near, time.Hour); ok {
				t.Fatalf("%s: a token one bit off renewed", name)
			}
			if ok, _ := locks.Release(ctx, key, near); ok {
				t.Fatalf("%s: a token one bit off released", name)
			}
			if ok, err := locks.ResetExpiry(ctx, key, tok, time.Hour); !ok || err != nil {
				t.Fatalf("%s: renew %v %v", name, ok, err)
			}
			if ok, err := locks.Release(ctx, key, tok); !ok || err != nil {
				t.Fatalf("%s: release %v %v", name, ok, err)
			}
		}
	}
}

func TestWaitBudgetRetryAndCancellation(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	held, err := locks.Acquire(ctx, "busy", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	start := time.Now()
	_, ok, err := locks.TryAcquire(ctx, "busy", time.Second, WithWait(300*time.Millisecond), WithRetryEvery(100*time.Millisecond))
	waited := time.Since(start)
	if ok || err != nil || waited < 300*time.Millisecond {
		t.Fatalf("wait budget: ok %v err %v after %v", ok, err, waited)
	}
	t.Logf("gave up after %v (budget 300ms)", waited)

	// Released during the wait, once the waiter has found the lock taken: acquired on a
	// retry.
	setsBefore := srv.CommandStat(t, "set", "calls")
	var mu *Lock
	acquired := make(chan struct{})
	go func() {
		defer close(acquired)
		mu, ok, err = locks.TryAcquire(ctx, "busy", time.Second, WithWait(5*time.Second), WithRetryEvery(20*time.Millisecond))
	}()
	testkit.WaitFor(t, "the waiter's first attempt", func() bool { return srv.CommandStat(t, "set", "calls") > setsBefore })
	srv.Do(t, "DEL", "busy")
	<-acquired
	if !ok || err != nil {
		t.Fatalf("acquire after release: %v %v", ok, err)
	}
	mu.Close()

	// Cancellation interrupts the wait promptly.
	srv.Do(t, "SET", "busy", "x", "PX", "60000")
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, _, err = locks.TryAcquire(cctx, "busy", time.Second, WithWait(time.Minute), WithRetryEvery(time.Second))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("cancelled wait: %v after %v", err, time.Since(start))
	}
}

func TestBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.At(t, srv.Addr(), respire.Options{})
	locks := New(c)
	ctx := context.Background()
	tok := TokenFromString("t")
	checks := []struct {
		name string
		err  error
		want error
	}{
		{"empty key", second(locks.TryAcquire(ctx, "", time.Second)), ErrInvalidArg},
		{"zero TTL", second(locks.TryAcquire(ctx, "k", 0)), ErrInvalidArg},
		{"negative TTL", second(locks.TryAcquire(ctx, "k", -time.Second)), ErrInvalidArg},
		{"TTL under 1ms", second(locks.TryAcquire(ctx, "k", 999*time.Microsecond)), ErrInvalidArg},
		{"negative wait", second(locks.TryAcquire(ctx, "k", time.Second, WithWait(-1))), ErrInvalidArg},
		{"zero retry", second(locks.TryAcquire(ctx, "k", time.Second, WithRetryEvery(0))), ErrInvalidArg},
		{"nil option", second(locks.TryAcquire(ctx, "k", time.Second, nil)), ErrInvalidArg},
		{"empty token take", errOf(locks.TryTake(ctx, "k", Token{}, time.Second)), ErrEmptyToken},
		{"empty token renew", errOf(locks.ResetExpiry(ctx, "k", Token{}, time.Second)), ErrEmptyToken},
		{"empty token release", errOf(locks.Release(ctx, "k", Token{})), ErrEmptyToken},
		{"empty key release", errOf(locks.Release(ctx, "", tok)), ErrInvalidArg},
		{"empty key owner", third(locks.OwnerToken(ctx, "")), ErrInvalidArg},
		{"no client", second(New(nil).TryAcquire(ctx, "k", time.Second)), ErrInvalidArg},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if srv.Do(t, "DBSIZE") != "0" {
		t.Fatal("bad input wrote something")
	}
	mu, err := locks.Acquire(ctx, "k", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mu.ResetExpiry(ctx, 0); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("ResetExpiry(0): %v", err)
	}
	c.Close()
	if _, _, err := locks.TryAcquire(ctx, "k2", time.Second); !errors.Is(err, respire.ErrClosed) {
		t.Errorf("closed client: %v", err)
	}
	if err := mu.Close(); err != nil {
		t.Errorf("Close on a closed client must be quiet: %v", err)
	}
}

func second(_ *Lock, _ bool, err error) error { return err }
func errOf(_ bool, err error) error           { return err }
func third(_ Token, _ bool, err error) error  { return err }

func TestKeepAliveRenewsAndEndsOnLoss(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	// Long enough for a loaded machine: the schedule itself is TestKeepAliveSchedule's,
	// under synctest; here the checks are coarse.
	const lease = 2 * time.Second
	mu, ok, err := locks.TryAcquire(ctx, "ka", lease, WithKeepAlive())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	work := mu.KeepAliveContext()
	// Work for three leases: the keep-alive must hold the lock all along. The context
	// is looked at after the key: a keep-alive that did not renew in time ends its
	// context before the lease can end on the server, which is a failure of its own,
	// not a key lost under an open context.
	deadline := time.Now().Add(3 * lease)
	for time.Now().Before(deadline) {
		owner := srv.Do(t, "GET", "ka")
		if work.Err() != nil {
			t.Fatalf("keep-alive context ended: %v", context.Cause(work))
		}
		if owner != mu.Token().b {
			t.Fatal("lock lost while the keep-alive's context was open")
		}
		time.Sleep(lease / 8) // a pace for the checks, not a synchronisation
	}
	// Another owner overwrites it: the context ends within one renewal interval.
	srv.Do(t, "SET", "ka", "thief", "PX", "60000")
	start := time.Now()
	select {
	case <-work.Done():
	case <-time.After(2 * lease):
		t.Fatal("keep-alive context still open after the lock was stolen")
	}
	if !errors.Is(context.Cause(work), ErrLeaseLost) {
		t.Fatalf("cause %v", context.Cause(work))
	}
	t.Logf("loss noticed after %v (interval %v)", time.Since(start), lease/2)
	if p := pttl(t, srv, "ka"); p < 59000 {
		t.Fatalf("the keep-alive touched the thief's TTL: %d", p)
	}
	mu.Close()

	// Deleted: same.
	mu2, err := locks.Acquire(ctx, "ka2", lease)
	if err != nil {
		t.Fatal(err)
	}
	ka, err := mu2.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv.Do(t, "DEL", "ka2")
	select {
	case <-ka.Context().Done():
	case <-time.After(2 * lease):
		t.Fatal("keep-alive context still open after the key was deleted")
	}
	if !errors.Is(context.Cause(ka.Context()), ErrLeaseLost) {
		t.Fatalf("cause %v", context.Cause(ka.Context()))
	}
	mu2.Close()

	// Stop stops renewing without releasing.
	mu3, err := locks.Acquire(ctx, "ka3", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ka3, _ := mu3.KeepAlive(ctx)
	ka3.Stop()
	if !errors.Is(context.Cause(ka3.Context()), ErrKeepAliveStopped) || srv.Do(t, "GET", "ka3") != mu3.Token().b {
		t.Fatalf("Stop: cause %v", context.Cause(ka3.Context()))
	}
	if out, err := mu3.Release(ctx); out != Released || err != nil {
		t.Fatal(out, err)
	}
}

// Concurrent Release calls share one release; a joiner stops waiting on its own
// context while the shared one goes on.
func TestConcurrentReleaseSharesOne(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{}))
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "shared", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var released, already atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := mu.Release(ctx)
			if err != nil {
				t.Error(err)
			}
			switch out {
			case Released:
				released.Add(1)
			case AlreadyReleased:
				already.Add(1)
			}
		}()
	}
	wg.Wait()
	if released.Load() < 1 || released.Load()+already.Load() != 20 {
		t.Fatalf("released %d, already %d", released.Load(), already.Load())
	}
	if srv.Do(t, "EXISTS", "shared") != "0" {
		t.Fatal("not released")
	}
}

func TestKeyPrefixAppliesToLocks(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{KeyPrefix: "app:"}))
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Do(t, "GET", "app:job") != mu.Token().b || srv.Do(t, "EXISTS", "job") != "0" {
		t.Fatal("lock key not prefixed")
	}
	if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatal(out, err)
	}
	if srv.Do(t, "EXISTS", "app:job") != "0" {
		t.Fatal("prefixed lock not released")
	}
}

// TryTakeBy stops waiting for its reply at its deadline, as a context with that
// deadline would make it, though its own context never ends: against a real server,
// paused so that the SET is written and never answered in time.
func TestTryTakeByDeadline(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.At(t, srv.Addr(), respire.Options{})
	locks := New(c)
	ctx := context.Background()
	if _, ok, err := locks.OwnerToken(ctx, "took-by"); ok || err != nil { // dials before the pause
		t.Fatal(ok, err)
	}
	srv.Pause(t)
	_, err := locks.TryTakeBy(ctx, time.Now().Add(50*time.Millisecond), "took-by", NewToken(), time.Minute)
	srv.Resume(t)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("TryTakeBy on a paused server: %v, want an unknown outcome matching context.DeadlineExceeded", err)
	}
}
