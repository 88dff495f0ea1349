package coordination

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/cache"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

func TestFencedLockBasics(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	const lease, fence = "{r}:lease", "{r}:fence"

	fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok {
		t.Fatalf("TryAcquireFencedLock: %v %v", ok, err)
	}
	if fl.FencingToken() != 1 || fl.LeaseKey() != lease || fl.FenceKey() != fence || fl.Duration() != 30*time.Second {
		t.Fatal(fl.FencingToken(), fl.LeaseKey(), fl.FenceKey(), fl.Duration())
	}
	if got, _ := fl.Token().Text(); srv.Do(t, "GET", lease) != got {
		t.Fatalf("lease holds %q, token %q", srv.Do(t, "GET", lease), got)
	}
	if p, _ := strconv.Atoi(srv.Do(t, "PTTL", lease)); p < 29000 {
		t.Fatalf("lease PTTL %d", p)
	}
	if srv.Do(t, "PTTL", fence) != "-1" {
		t.Fatalf("the fence counter has a TTL: %s", srv.Do(t, "PTTL", fence))
	}
	if r := fl.RemainingEstimate(); r < 29*time.Second || fl.ExpiresAtEstimate().IsZero() {
		t.Fatal(r)
	}
	// A second owner neither takes the lease nor moves the counter.
	if other, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Second); ok || err != nil || other != nil {
		t.Fatalf("second owner: %v %v %v", other, ok, err)
	}
	if srv.Do(t, "GET", fence) != "1" {
		t.Fatalf("a failed acquisition advanced the counter to %s", srv.Do(t, "GET", fence))
	}
	if held, err := fl.VerifyStillHeld(ctx); !held || err != nil {
		t.Fatal(held, err)
	}
	if ok, err := fl.ResetExpiry(ctx, time.Minute); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if p, _ := strconv.Atoi(srv.Do(t, "PTTL", lease)); p < 59000 {
		t.Fatalf("PTTL after ResetExpiry %d", p)
	}
	if out, err := fl.Release(ctx); out != lock.Released || err != nil {
		t.Fatal(out, err)
	}
	if out, err := fl.Release(ctx); out != lock.AlreadyReleased || err != nil {
		t.Fatal(out, err)
	}
	if srv.Do(t, "EXISTS", lease) != "0" || srv.Do(t, "GET", fence) != "1" {
		t.Fatal("release must delete the lease and keep the counter")
	}
	if held, _ := fl.VerifyStillHeld(ctx); held {
		t.Fatal("held after release")
	}
	if cause := context.Cause(fl.KeepAliveContext()); !errors.Is(cause, lock.ErrReleased) {
		t.Fatalf("KeepAliveContext after release: %v", cause)
	}

	next, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
	if err != nil || !ok || next.FencingToken() != 2 {
		t.Fatalf("next holder: %v %v %v", next, ok, err)
	}
	if err := next.Close(); err != nil || srv.Do(t, "EXISTS", lease) != "0" {
		t.Fatal("Close did not release", err)
	}
	var none *FencedLock
	if err := none.Close(); err != nil {
		t.Fatal("Close of a nil handle:", err)
	}
}

func TestFencedLockKeepAlive(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	fl, ok, err := co.TryAcquireFencedLock(ctx, "{k}:lease", "{k}:fence", 200*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer fl.Close()
	ka, err := fl.KeepAlive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Held past three leases: the keep-alive renews it.
	renewed := fl.ExpiresAtEstimate()
	testkit.WaitFor(t, "three renewals", func() bool {
		return fl.ExpiresAtEstimate().Sub(renewed) > 600*time.Millisecond
	})
	if held, err := fl.VerifyStillHeld(ctx); !held || err != nil || ka.Context().Err() != nil {
		t.Fatal(held, err, context.Cause(ka.Context()))
	}
	// Another owner overwrites the lease: the next renewal finds it lost.
	srv.Do(t, "SET", "{k}:lease", "intruder")
	select {
	case <-ka.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("keep-alive did not notice the loss")
	}
	if cause := context.Cause(ka.Context()); !errors.Is(cause, lock.ErrLeaseLost) {
		t.Fatalf("cause %v", cause)
	}
	ka.Stop()
}

// TestFencedBadInput: every unusable argument is refused with a clear error, before
// anything is sent.
func TestFencedBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	plain := New(plainClient(t, srv))
	tracked := New(trackingClient(t, srv))
	prefixed := New(testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "{"}))
	ctx := context.Background()

	// Keys of different slots whatever the prefix, and keys that share a slot without
	// the prefix "{" but not with it ("{x}{t}:lease" hashes "x").
	crossA, crossB := "lease-a", "fence-b"
	if cluster.Slot(crossA) == cluster.Slot(crossB) {
		t.Fatal("test keys share a slot")
	}
	tagA, tagB := "x}{t}:lease", "y}{t}:fence"
	if cluster.Slot(tagA) != cluster.Slot(tagB) || cluster.PrefixedSlot("{", tagA) == cluster.PrefixedSlot("{", tagB) {
		t.Fatal("test keys do not exercise the prefix")
	}
	cases := []struct {
		name         string
		co           *Coordinator
		lease, fence string
		ttl          time.Duration
		want         error
	}{
		{"empty lease", plain, "", "{a}:f", time.Second, ErrInvalidArg},
		{"empty fence", plain, "{a}:l", "", time.Second, ErrInvalidArg},
		{"same key", plain, "{a}", "{a}", time.Second, ErrInvalidArg},
		{"zero ttl", plain, "{a}:l", "{a}:f", 0, ErrInvalidArg},
		{"negative ttl", plain, "{a}:l", "{a}:f", -time.Second, ErrInvalidArg},
		{"sub-millisecond ttl", plain, "{a}:l", "{a}:f", 500 * time.Microsecond, ErrInvalidArg},
		{"cross-slot", plain, crossA, crossB, time.Second, ErrCrossSlot},
		{"cross-slot with a prefix", prefixed, crossA, crossB, time.Second, ErrCrossSlot},
		{"cross-slot only after the prefix", prefixed, tagA, tagB, time.Second, ErrCrossSlot},
		{"nil coordinator", nil, "{a}:l", "{a}:f", time.Second, ErrInvalidArg},
		{"coordinator without client", &Coordinator{}, "{a}:l", "{a}:f", time.Second, ErrInvalidArg},
	}
	watched := []string{"eval", "evalsha", "set", "incr", "pttl", "get", "client|caching"}
	before := calls(t, srv, watched...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fl, ok, err := tc.co.TryAcquireFencedLock(ctx, tc.lease, tc.fence, tc.ttl)
			if !errors.Is(err, tc.want) || ok || fl != nil {
				t.Fatalf("TryAcquireFencedLock: %v %v %v, want %v", fl, ok, err, tc.want)
			}
			co := tc.co
			if co == plain {
				co = tracked // so the refusal is not for want of tracking
			}
			if fl, err := co.AcquireFencedLock(ctx, tc.lease, tc.fence, tc.ttl); !errors.Is(err, tc.want) || fl != nil {
				t.Fatalf("AcquireFencedLock: %v %v, want %v", fl, err, tc.want)
			}
			if errors.Is(tc.want, ErrCrossSlot) && !errors.Is(err, respire.ErrCrossSlot) {
				t.Fatalf("%v does not match respire.ErrCrossSlot", err)
			}
			t.Log(err)
		})
	}
	t.Run("resource", func(t *testing.T) {
		for _, keys := range [][2]string{{"", "{a}:acc"}, {"{a}:res", ""}, {"{a}", "{a}"}, {crossA, crossB}} {
			if r, err := plain.Resource(keys[0], keys[1]); err == nil || r != nil {
				t.Fatalf("Resource(%q, %q) accepted", keys[0], keys[1])
			}
		}
		if _, err := prefixed.Resource(tagA, tagB); !errors.Is(err, ErrCrossSlot) {
			t.Fatalf("cross-slot after the prefix: %v", err)
		}
		r, err := plain.Resource("{a}:res", "{a}:acc")
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range []int64{0, -1} {
			if _, err := r.Write(ctx, tok, "SET", "v"); !errors.Is(err, ErrInvalidArg) {
				t.Fatalf("token %d: %v", tok, err)
			}
		}
		if _, err := r.Write(ctx, 1, "", "v"); !errors.Is(err, ErrInvalidArg) {
			t.Fatalf("empty command: %v", err)
		}
		// What the fence cannot guard: a read, an unknown command, a second key.
		for _, cmd := range [][]any{{"GET"}, {"NOSUCHCOMMAND", "v"}, {"RENAME", "other"}, {"DEL", "other"}, {"MSET", "v", "other", "w"}} {
			if _, err := r.Write(ctx, 1, cmd[0].(string), cmd[1:]...); !errors.Is(err, ErrInvalidArg) {
				t.Fatalf("Write %v: %v; want ErrInvalidArg", cmd, err)
			}
		}
		var none *Resource
		if _, err := none.Write(ctx, 1, "SET", "v"); !errors.Is(err, ErrInvalidArg) {
			t.Fatalf("nil resource: %v", err)
		}
	})
	if after := calls(t, srv, watched...); !maps(before, after) {
		t.Fatalf("bad input sent commands: before %v, after %v", before, after)
	}
}

func maps(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// TestFencingTokensStrictlyIncrease: 10,000 acquisitions by 16 goroutines, some
// released and some left to expire: every token is above every token returned before
// its acquisition began, and none repeats.
func TestFencingTokensStrictlyIncrease(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	const total, workers = 10000, 16
	var (
		acquired  atomic.Int64
		highest   atomic.Int64 // the highest token returned so far
		expired   atomic.Int64
		mu        sync.Mutex
		tokens    []int64
		violation atomic.Int64
		wg        sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			var mine []int64
			defer func() {
				mu.Lock()
				tokens = append(tokens, mine...)
				mu.Unlock()
			}()
			for i := 0; acquired.Load() < total; i++ {
				// Every eighth try of each worker cuts its lease to 1 ms and never
				// releases it: the next holder gets the lock only after the lease
				// expired. (Taken for 1 ms, it would come back too late to be held.)
				expire := (i+w)%8 == 0
				floor := highest.Load()
				fl, ok, err := co.TryAcquireFencedLock(ctx, "{many}:lease", "{many}:fence", 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue
				}
				if expire {
					if ok, err := fl.ResetExpiry(ctx, time.Millisecond); !ok || err != nil {
						errs <- errors.Join(errors.New("cut to 1 ms"), err)
						return
					}
				}
				n := fl.FencingToken()
				if n <= floor {
					violation.Add(1)
				}
				for h := highest.Load(); n > h && !highest.CompareAndSwap(h, n); h = highest.Load() {
				}
				mine = append(mine, n)
				acquired.Add(1)
				if expire {
					expired.Add(1)
					continue
				}
				if out, err := fl.Release(ctx); out != lock.Released || err != nil {
					errs <- errors.Join(errors.New("release"), err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(tokens)
	repeats := 0
	for i := 1; i < len(tokens); i++ {
		if tokens[i] == tokens[i-1] {
			repeats++
		}
	}
	t.Logf("%d acquisitions, %d after a lease left to expire; regressions %d, repeats %d", len(tokens), expired.Load(), violation.Load(), repeats)
	if violation.Load() != 0 || repeats != 0 {
		t.Fatalf("fencing-token regressions %d, repeats %d", violation.Load(), repeats)
	}
	if n := int64(len(tokens)); n < total || tokens[0] != 1 || tokens[len(tokens)-1] != n {
		t.Fatalf("%d tokens from %d to %d: the counter must advance once per acquisition", n, tokens[0], tokens[len(tokens)-1])
	}
	if got := srv.Do(t, "GET", "{many}:fence"); got != strconv.Itoa(len(tokens)) {
		t.Fatalf("counter %s after %d acquisitions", got, len(tokens))
	}
}

// TestStaleWriteRejected: a holder that stops renewing past its lease has its late write
// refused by the resource-side fence, and the successor's write stands.
func TestStaleWriteRejected(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	res, err := co.Resource("{job}:report", "{job}:accepted")
	if err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	staleAccepted := 0
	for round := range rounds {
		// Taken for long, then cut to a short lease: a 50 ms acquisition whose reply a
		// loaded machine delays would not be held at all.
		old, ok, err := co.TryAcquireFencedLock(ctx, "{job}:lease", "{job}:fence", time.Minute)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if ok, err := old.ResetExpiry(ctx, 50*time.Millisecond); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if round%2 == 0 {
			// The goroutine variant: a keep-alive runs, then stops renewing (a pause, a
			// stuck process) while the work goes on.
			ka, err := old.KeepAlive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ka.Stop()
		}
		if _, err := res.Write(ctx, old.FencingToken(), "SET", "old-"+strconv.Itoa(round)); err != nil {
			t.Fatalf("the holder's own write: %v", err)
		}
		// Equal tokens may write again within one lease.
		if _, err := res.Write(ctx, old.FencingToken(), "SET", "old-again-"+strconv.Itoa(round)); err != nil {
			t.Fatalf("a repeated write with the same token: %v", err)
		}
		testkit.WaitFor(t, "the lease to expire", func() bool { return srv.Do(t, "EXISTS", "{job}:lease") == "0" })
		next, ok, err := co.TryAcquireFencedLock(ctx, "{job}:lease", "{job}:fence", 10*time.Second)
		if err != nil || !ok || next.FencingToken() <= old.FencingToken() {
			t.Fatalf("successor: %v %v %v", ok, err, next)
		}
		want := "new-" + strconv.Itoa(round)
		if _, err := res.Write(ctx, next.FencingToken(), "SET", want); err != nil {
			t.Fatal(err)
		}
		// The old holder wakes up and writes late.
		_, err = res.Write(ctx, old.FencingToken(), "SET", "stale-"+strconv.Itoa(round))
		var stale *StaleTokenError
		switch {
		case err == nil:
			staleAccepted++
		case !errors.Is(err, ErrStaleToken) || !errors.As(err, &stale) || stale.Highest != next.FencingToken():
			t.Fatalf("late write: %v", err)
		}
		if got := srv.Do(t, "GET", "{job}:report"); got != want {
			t.Fatalf("resource holds %q, want %q", got, want)
		}
		if h, err := res.HighestAccepted(ctx); err != nil || h != next.FencingToken() {
			t.Fatal(h, err)
		}
		if out, err := next.Release(ctx); out != lock.Released || err != nil {
			t.Fatal(out, err)
		}
		old.Close()
	}
	t.Logf("stale writes accepted: %d of %d", staleAccepted, rounds)
	if staleAccepted != 0 {
		t.Fatalf("stale writes accepted = %d", staleAccepted)
	}
	if srv.Do(t, "PTTL", "{job}:accepted") != "-1" {
		t.Fatal("the accepted-token key must not expire")
	}
}

func TestResourceWriteCommands(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "app:"})
	co := New(c)
	ctx := context.Background()
	res, err := co.Resource("{h}:res", "{h}:acc")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := res.Write(ctx, 5, "HSET", "f", "v"); err != nil || mustInt(t, v) != 1 {
		t.Fatal(v, err)
	}
	if srv.Do(t, "HGET", "app:{h}:res", "f") != "v" || srv.Do(t, "GET", "app:{h}:acc") != "5" {
		t.Fatal("the prefix was not applied to both keys")
	}
	// A nil reply survives the trip through the script.
	str, err := co.Resource("{h}:str", "{h}:acc")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := str.Write(ctx, 5, "SET", "x", "NX", "GET"); err != nil || !v.IsNull() {
		t.Fatal(v, err)
	}
	if v, err := str.Write(ctx, 5, "SET", "y", "GET"); err != nil || mustText(t, v) != "x" {
		t.Fatal(v, err)
	}
	// An error reply of the command is returned and records nothing.
	if _, err := str.Write(ctx, 9, "RPUSH", "x"); err == nil || errors.Is(err, ErrStaleToken) {
		t.Fatalf("WRONGTYPE expected: %v", err)
	}
	if h, _ := res.HighestAccepted(ctx); h != 5 {
		t.Fatalf("a failed write recorded token %d", h)
	}
	// Tokens compare exactly beyond 2^53, where Lua numbers do not.
	big := int64(1)<<62 + 1
	if _, err := res.Write(ctx, big, "HSET", "f", "big"); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(ctx, big-1, "HSET", "f", "stale"); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("token one below a big one: %v", err)
	}
	if h, _ := res.HighestAccepted(ctx); h != big {
		t.Fatal(h)
	}
}

func mustText(t *testing.T, v interface{ Text() (string, error) }) string {
	t.Helper()
	s, err := v.Text()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustInt(t *testing.T, v interface{ Int() (int64, error) }) int64 {
	t.Helper()
	n, err := v.Int()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAcquireFencedLockNeedsTracking(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	before := calls(t, srv, "eval", "evalsha", "pttl")
	fl, err := co.AcquireFencedLock(context.Background(), "{n}:lease", "{n}:fence", time.Second)
	if !errors.Is(err, ErrNoTracking) || fl != nil {
		t.Fatalf("%v %v", fl, err)
	}
	if after := calls(t, srv, "eval", "evalsha", "pttl"); !maps(before, after) {
		t.Fatalf("sent commands without tracking: %v -> %v", before, after)
	}
	// A RESP2 client cannot have tracking either: it is refused at construction.
	if c, err := respire.NewClient(context.Background(), respire.Options{Addrs: []string{srv.Addr()}, Protocol: 2, ClientSideCache: &cache.Options{}}); !errors.Is(err, respire.ErrInvalidOptions) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("a RESP2 client with a cache: %v, want ErrInvalidOptions", err)
	}
}

// TryAcquireFencedLock with lock.WithWait is DistributedLock's TryAcquireAsync(timeout)
// (seed 001, "Preserve a bounded acquisition wait"): "not acquired" when the budget
// ends with the lease held, the caller's own cancellation an error, a zero budget one
// immediate attempt, a negative one refused before anything is sent; and it acquires
// once the lease is released within the budget. With tracking and by polling alike.
func TestTryAcquireFencedLockWait(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		client func(*testing.T, *testserver.Server) *respire.Client
	}{{"tracking", trackingClient}, {"polling", plainClient}} {
		t.Run(tc.name, func(t *testing.T) {
			co := New(tc.client(t, srv))
			lease, fence := "{wait:"+tc.name+"}:lease", "{wait:"+tc.name+"}:fence"
			holder, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Minute)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			scripts := func() int { return srv.Calls(t, "eval") + srv.Calls(t, "evalsha") }

			before := scripts()
			if fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Minute, lock.WithWait(-time.Second)); !errors.Is(err, lock.ErrInvalidArg) || ok || fl != nil {
				t.Fatalf("negative budget: %v %v %v, want lock.ErrInvalidArg", fl, ok, err)
			}
			if n := scripts() - before; n != 0 {
				t.Fatalf("a negative budget sent %d scripts", n)
			}

			before = scripts()
			if fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Minute, lock.WithWait(0)); err != nil || ok || fl != nil {
				t.Fatalf("zero budget while held: %v %v %v, want not acquired", fl, ok, err)
			}
			if n := scripts() - before; n != 1 {
				t.Fatalf("a zero budget sent %d scripts, want one attempt", n)
			}

			before = scripts()
			fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, time.Minute,
				lock.WithWait(200*time.Millisecond), lock.WithRetryEvery(20*time.Millisecond))
			if err != nil || ok || fl != nil {
				t.Fatalf("budget spent while held: %v %v %v, want not acquired and no error", fl, ok, err)
			}
			if tc.name == "polling" && scripts()-before < 2 {
				t.Fatalf("a polling wait of 200 ms sent %d scripts, want retries", scripts()-before)
			}

			// The caller's own deadline, inside the budget: an error, not "not acquired".
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			fl, ok, err = co.TryAcquireFencedLock(dctx, lease, fence, time.Minute, lock.WithWait(time.Minute))
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || ok || fl != nil {
				t.Fatalf("caller's deadline: %v %v %v, want its DeadlineExceeded", fl, ok, err)
			}

			// Released once the waiter has found the lease held.
			before = scripts()
			acquired := make(chan struct{})
			go func() {
				defer close(acquired)
				fl, ok, err = co.TryAcquireFencedLock(ctx, lease, fence, time.Minute,
					lock.WithWait(30*time.Second), lock.WithRetryEvery(10*time.Millisecond), lock.WithKeepAlive())
			}()
			testkit.WaitFor(t, "the waiter's first attempt", func() bool { return scripts() > before })
			if _, err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			<-acquired
			if err != nil || !ok {
				t.Fatalf("released within the budget: %v %v", ok, err)
			}
			defer fl.Close()
			if fl.FencingToken() <= holder.FencingToken() {
				t.Fatalf("token %d after %d", fl.FencingToken(), holder.FencingToken())
			}
			if kept := fl.KeepAliveContext(); kept.Err() != nil {
				t.Fatalf("WithKeepAlive: the keep-alive context ended: %v", context.Cause(kept))
			}
		})
	}
}

// waiting is a waiter's AcquireFencedLock running in the background.
type waiting struct {
	fl *FencedLock
	at time.Time // when it returned
}

// startWaiter starts AcquireFencedLock of the test's pair on co and returns once the
// waiter has armed its key watch.
func startWaiter(t *testing.T, srv *testserver.Server, co *Coordinator, lease, fence string) <-chan waiting {
	t.Helper()
	armed := srv.Calls(t, "pttl")
	got := make(chan waiting, 1)
	go func() {
		fl, err := co.AcquireFencedLock(context.Background(), lease, fence, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		got <- waiting{fl, time.Now()}
	}()
	waitArmed(t, srv, armed)
	return got
}

// TestAcquireFencedLockHandOff measures the time from a release to the waiter's
// acquisition and checks that a waiter sends nothing while it waits.
func TestAcquireFencedLockHandOff(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	holder := New(plainClient(t, srv))
	waiter := New(trackingClient(t, srv))
	ctx := context.Background()
	const lease, fence = "{ho}:lease", "{ho}:fence"

	t.Run("NoPollingWhileWaiting", func(t *testing.T) {
		h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		got := startWaiter(t, srv, waiter, lease, fence)
		watched := []string{"get", "set", "eval", "evalsha", "pttl", "client|caching"}
		before := calls(t, srv, watched...)
		time.Sleep(2 * time.Second) // the observation window, not a synchronisation
		after := calls(t, srv, watched...)
		if !maps(before, after) {
			t.Fatalf("the waiter polled: %v -> %v", before, after)
		}
		start := time.Now()
		h.Release(ctx)
		fl := (<-got).fl
		t.Logf("commandstats flat over 2 s (%v); hand-off after release %v", after, time.Since(start))
		if fl == nil || fl.FencingToken() != h.FencingToken()+1 {
			t.Fatal("waiter's lock", fl)
		}
		fl.Release(ctx)
	})

	t.Run("Latency", func(t *testing.T) {
		const rounds = 200
		lat := make([]time.Duration, 0, rounds)
		for range rounds {
			h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			got := startWaiter(t, srv, waiter, lease, fence)
			start := time.Now()
			if out, err := h.Release(ctx); out != lock.Released || err != nil {
				t.Fatal(out, err)
			}
			r := <-got
			if r.fl == nil {
				t.FailNow()
			}
			lat = append(lat, r.at.Sub(start))
			r.fl.Release(ctx)
		}
		slices.Sort(lat)
		t.Logf("AcquireFencedLock hand-off over %d releases: median %v, p99 %v, max %v",
			rounds, lat[rounds/2], lat[rounds*99/100], lat[rounds-1])
	})

	t.Run("WokenByExpiry", func(t *testing.T) {
		// The holder never releases: the waiter's timer at the lease's TTL takes over.
		h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 300*time.Millisecond)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		start := time.Now()
		fl, err := waiter.AcquireFencedLock(ctx, lease, fence, time.Second)
		if err != nil || fl.FencingToken() != h.FencingToken()+1 {
			t.Fatal(fl, err)
		}
		t.Logf("acquired %v after a 300 ms lease was taken", time.Since(start))
		fl.Release(ctx)
	})

	t.Run("WokenByOverwriteAndRearmed", func(t *testing.T) {
		// An invalidation that leaves the lease taken (another owner rewrote it) wakes
		// the waiter, which must track the key again to hear of the release.
		h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		got := startWaiter(t, srv, waiter, lease, fence)
		armed := srv.Calls(t, "pttl")
		tok, _ := h.Token().Text()
		srv.Do(t, "SET", lease, tok, "PX", "30000") // same owner, rewritten
		waitArmed(t, srv, armed)                    // woken, tried, armed again
		h.Release(ctx)
		select {
		case w := <-got:
			w.fl.Release(ctx)
		case <-time.After(10 * time.Second):
			t.Fatal("the re-armed waiter was not woken by the release")
		}
	})

	t.Run("Cancellation", func(t *testing.T) {
		h, ok, err := holder.TryAcquireFencedLock(ctx, lease, fence, 30*time.Second)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		defer h.Release(ctx)
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		fl, err := waiter.AcquireFencedLock(cctx, lease, fence, time.Second)
		if !errors.Is(err, context.DeadlineExceeded) || fl != nil {
			t.Fatal(fl, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("cancellation took %v", d)
		}
		if errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Log("the cancelled try may have acquired")
		}
	})
}

// TestAcquireFencedLockContended: 16 goroutines of one client wait for one lease in
// turn. One release wakes one waiter; none may be left asleep (a stranded waiter would
// only wake at the 30 s TTL), and no two hold the lease at once.
func TestAcquireFencedLockContended(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(trackingClient(t, srv))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const workers, each = 16, 40
	var (
		holders, overlaps, highest atomic.Int64
		regressions                atomic.Int64
		wg                         sync.WaitGroup
	)
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for range each {
				fl, err := co.AcquireFencedLock(ctx, "{busy}:lease", "{busy}:fence", 30*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if holders.Add(1) != 1 {
					overlaps.Add(1)
				}
				if n := fl.FencingToken(); n <= highest.Load() {
					regressions.Add(1)
				} else {
					highest.Store(n)
				}
				// Work that takes time, so that a second holder let in early would
				// be inside with this one and counted.
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				holders.Add(-1)
				if out, err := fl.Release(ctx); out != lock.Released || err != nil {
					t.Error(out, err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	t.Logf("%d acquisitions by %d waiters in %v (%v each); overlaps %d, regressions %d",
		workers*each, workers, elapsed, elapsed/(workers*each), overlaps.Load(), regressions.Load())
	if overlaps.Load() != 0 || regressions.Load() != 0 {
		t.Fatal("two holders at once, or a token that went back")
	}
	if elapsed > 25*time.Second {
		t.Fatal("a waiter slept until the lease's TTL: a wake was lost")
	}
}

// A fenced acquisition that fails on the server (a fence key that is no counter) takes
// nothing: the lease stays free for the next owner, instead of blocked for its TTL with
// no handle to release it.
func TestFencedAcquireThatFailsTakesNothing(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	co := New(plainClient(t, srv))
	ctx := context.Background()
	srv.Do(t, "SET", "{broken}:fence", "not a counter")
	if fl, ok, err := co.TryAcquireFencedLock(ctx, "{broken}:lease", "{broken}:fence", time.Minute); err == nil || ok || fl != nil {
		t.Fatalf("TryAcquireFencedLock with a fence key that is no counter: %v, %v, %v; want an error", fl, ok, err)
	}
	if n := srv.Do(t, "EXISTS", "{broken}:lease"); n != "0" {
		t.Fatalf("the failed acquisition left the lease taken (EXISTS %s)", n)
	}
}
