package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/emulator"
	"github.com/respire/respire/test/testserver"
)

// profileServer is a real redis-server behind the emulator of one server profile.
type profileServer struct {
	backend *testserver.Server
	emu     *emulator.Emulator
}

func startProfile(t *testing.T, p emulator.Profile, users ...testserver.User) profileServer {
	t.Helper()
	backend := testserver.Start(t, testserver.Config{Users: users})
	return profileServer{backend: backend, emu: emulator.Start(t, emulator.Config{Backend: backend.Addr(), Profile: p})}
}

func (s profileServer) client(t *testing.T, opts respire.Options) *respire.Client {
	return testclient.At(t, s.emu.Addr(), opts)
}

// lockCommands returns the lock-related commands the emulator received, named as the
// command table of the lock package's doc names them.
func lockCommands(e *emulator.Emulator) []string {
	var out []string
	for _, cmd := range e.Commands() {
		name := strings.ToUpper(cmd[0])
		switch name {
		case "SET":
			upper := strings.ToUpper(strings.Join(cmd[3:], " "))
			switch {
			case strings.Contains(upper, "IFEQ"):
				name = "SET IFEQ"
			case strings.Contains(upper, "NX"):
				name = "SET NX"
			}
		case "CLIENT":
			name += " " + strings.ToUpper(cmd[1])
			if name != "CLIENT KILL" {
				continue
			}
		case "EVALSHA", "EVAL", "DELEX", "DELIFEQ", "GET":
		default:
			continue
		}
		out = append(out, name)
	}
	return out
}

// cycle acquires, renews and releases one lock.
func cycle(t *testing.T, locks *Locker, key string) {
	t.Helper()
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := mu.ResetExpiry(ctx, 2*time.Minute); !ok || err != nil {
		t.Fatalf("renew: %v %v", ok, err)
	}
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatalf("release: %v %v", out, err)
	}
}

// The commands chosen per profile are those of the table in the package doc; the
// second operation on a connection goes straight to what it learned, and a fresh
// connection discovers again.
func TestCommandSelectionPerProfile(t *testing.T) {
	// The script cache starts empty, so the first EVALSHA of each script gets NOSCRIPT
	// and is followed by EVAL; after that EVALSHA alone.
	want := map[emulator.Profile]struct{ first, again, fresh []string }{
		emulator.Redis60: { // as Redis 7, through Redis 6's wording of the unknown DELEX and DELIFEQ
			first: []string{"SET NX", "SET IFEQ", "EVALSHA", "EVAL", "DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
			again: []string{"SET NX", "EVALSHA", "EVALSHA"},
			fresh: []string{"SET NX", "SET IFEQ", "EVALSHA", "DELEX", "DELIFEQ", "EVALSHA"},
		},
		emulator.Redis7: {
			first: []string{"SET NX", "SET IFEQ", "EVALSHA", "EVAL", "DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
			again: []string{"SET NX", "EVALSHA", "EVALSHA"},
			fresh: []string{"SET NX", "SET IFEQ", "EVALSHA", "DELEX", "DELIFEQ", "EVALSHA"},
		},
		emulator.Redis84: {
			first: []string{"SET NX", "SET IFEQ", "DELEX"},
			again: []string{"SET NX", "SET IFEQ", "DELEX"},
			fresh: []string{"SET NX", "SET IFEQ", "DELEX"},
		},
		emulator.Valkey81: {
			first: []string{"SET NX", "SET IFEQ", "DELEX", "DELIFEQ", "EVALSHA", "EVAL"},
			again: []string{"SET NX", "SET IFEQ", "EVALSHA"},
			fresh: []string{"SET NX", "SET IFEQ", "DELEX", "DELIFEQ", "EVALSHA"},
		},
		emulator.Valkey90: {
			first: []string{"SET NX", "SET IFEQ", "DELEX", "DELIFEQ"},
			again: []string{"SET NX", "SET IFEQ", "DELIFEQ"},
			fresh: []string{"SET NX", "SET IFEQ", "DELEX", "DELIFEQ"},
		},
	}
	for _, p := range emulator.Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startProfile(t, p)
			for _, proto := range []int{2, 3} {
				s.backend.Do(t, "SCRIPT", "FLUSH")
				s.emu.Reset()
				locks := New(s.client(t, respire.Options{Protocol: proto}))
				cycle(t, locks, "sel")
				if got := lockCommands(s.emu); !slices.Equal(got, want[p].first) {
					t.Errorf("RESP%d first cycle: %v, want %v", proto, got, want[p].first)
				}
				s.emu.Reset()
				cycle(t, locks, "sel")
				if got := lockCommands(s.emu); !slices.Equal(got, want[p].again) {
					t.Errorf("RESP%d same connection: %v, want %v", proto, got, want[p].again)
				}
				s.emu.Reset()
				cycle(t, New(s.client(t, respire.Options{Protocol: proto})), "sel")
				if got := lockCommands(s.emu); !slices.Equal(got, want[p].fresh) {
					t.Errorf("RESP%d fresh connection: %v, want %v", proto, got, want[p].fresh)
				}
			}
		})
	}
}

// NOPERM goes back to the caller and selects nothing else.
func TestNoPermissionPerProfile(t *testing.T) {
	user := testserver.User{Name: "lim", Password: "pw", Rules: []string{"+@all", "-del", "-evalsha", "-eval", "~*"}}
	for _, p := range emulator.Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startProfile(t, p, user)
			locks := New(s.client(t, respire.Options{Username: "lim", Password: "pw"}))
			ctx := context.Background()
			mu, err := locks.Acquire(ctx, "perm", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			s.emu.Reset()
			_, err = mu.Release(ctx)
			if !resp.HasCode(err, "NOPERM") {
				t.Fatalf("release: %v", err)
			}
			got := lockCommands(s.emu)
			last := map[emulator.Profile]string{
				emulator.Redis60: "EVALSHA", emulator.Redis7: "EVALSHA", emulator.Redis84: "DELEX", emulator.Valkey81: "EVALSHA", emulator.Valkey90: "DELIFEQ",
			}[p]
			if len(got) == 0 || got[len(got)-1] != last || slices.Contains(got, "CLIENT KILL") {
				t.Fatalf("commands %v: NOPERM must end the release at %s, not cut off", got, last)
			}
			if s.backend.Do(t, "GET", "perm") != mu.Token().b {
				t.Fatal("the lock changed")
			}
			if strings.Contains(err.Error(), "this user") != (p == emulator.Redis7 || p == emulator.Redis60) {
				t.Errorf("NOPERM wording of %s: %v", p, err)
			}
		})
	}
}

// Timeouts, cancellation and connection loss go back to the caller: no other command is
// tried and nothing uncertain is sent again.
func TestNoFallbackOnFailure(t *testing.T) {
	for _, p := range emulator.Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startProfile(t, p)
			locks := New(s.client(t, respire.Options{}))
			ctx := context.Background()
			mu, err := locks.Acquire(ctx, "nf", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			// Connection lost with the renewal written: unknown outcome, no Lua, no retry.
			s.emu.Reset()
			s.emu.DropConn("SET IFEQ", emulator.AfterForward)
			if _, err := mu.ResetExpiry(ctx, time.Hour); !errors.Is(err, conn.ErrOutcomeUnknown) {
				t.Fatalf("renewal on a dropped connection: %v", err)
			}
			// The server closed that connection, so nothing of it can run later: no
			// CLIENT KILL, which after a restart could name a stranger's connection.
			if got := lockCommands(s.emu); !slices.Equal(got[:1], []string{"SET IFEQ"}) || slices.Contains(got, "EVALSHA") ||
				slices.Contains(got[1:], "SET IFEQ") || slices.Contains(got, "CLIENT KILL") {
				t.Fatalf("after connection loss: %v", got)
			}
			if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrOwnershipUncertain) {
				t.Fatalf("lock not reported lost after an uncertain renewal: %v", context.Cause(mu.KeepAliveContext()))
			}
			// A timeout on release: no second release command.
			mu2, err := locks.Acquire(ctx, "nf2", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			s.emu.Reset()
			first := map[emulator.Profile]string{emulator.Redis60: "DELEX", emulator.Redis7: "DELEX", emulator.Redis84: "DELEX", emulator.Valkey81: "DELEX", emulator.Valkey90: "DELEX"}[p]
			s.emu.Delay(first, 300*time.Millisecond)
			tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			_, err = mu2.Release(tctx)
			cancel()
			if !errors.Is(err, conn.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("timed-out release: %v", err)
			}
			if got := lockCommands(s.emu); got[0] != "DELEX" || slices.Contains(got, "DELIFEQ") || slices.Contains(got, "EVALSHA") {
				t.Fatalf("after a timeout: %v", got)
			}
		})
	}
}

// A renewal delayed past its deadline is cut off: CLIENT KILL of its connection, the lock
// reports the loss, and the delayed command never takes effect.
func TestSeveringOfUncertainRenewalAndRelease(t *testing.T) {
	for _, p := range emulator.Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startProfile(t, p)
			locks := New(s.client(t, respire.Options{}))
			ctx := context.Background()
			cycle(t, locks, "warm") // the connection learns its commands first
			extendCmd := map[emulator.Profile]string{emulator.Redis60: "EVALSHA", emulator.Redis7: "EVALSHA", emulator.Redis84: "SET IFEQ", emulator.Valkey81: "SET IFEQ", emulator.Valkey90: "SET IFEQ"}[p]
			releaseCmd := map[emulator.Profile]string{emulator.Redis60: "EVALSHA", emulator.Redis7: "EVALSHA", emulator.Redis84: "DELEX", emulator.Valkey81: "EVALSHA", emulator.Valkey90: "DELIFEQ"}[p]

			mu, err := locks.Acquire(ctx, "severed", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			s.emu.Reset()
			s.emu.Delay(extendCmd, time.Second)
			tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			ok, err := mu.ResetExpiry(tctx, time.Hour)
			cancel()
			if ok || !errors.Is(err, conn.ErrOutcomeUnknown) {
				t.Fatalf("delayed renewal: %v %v", ok, err)
			}
			// The cut-off goes on once ResetExpiry returned at its deadline.
			testkit.WaitFor(t, "the cut-off", func() bool { return s.emu.Count("CLIENT KILL") > 0 })
			if s.emu.Count("CLIENT KILL") != 1 {
				t.Fatalf("CLIENT KILL sent %d times", s.emu.Count("CLIENT KILL"))
			}
			if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrOwnershipUncertain) {
				t.Fatalf("lock does not report the loss: %v", context.Cause(mu.KeepAliveContext()))
			}
			testkit.WaitFor(t, "the delayed command to be dropped", func() bool { return s.emu.Conns() <= 2 })
			time.Sleep(time.Second) // past the delay: the command would have run by now
			if p := pttl(t, s.backend, "severed"); p > 10000 {
				t.Fatalf("the renewal cut off took effect: PTTL %d", p)
			}
			if ok, _ := mu.ResetExpiry(ctx, time.Minute); ok {
				t.Fatal("a lost lock renewed")
			}

			// Release: the same, and the lock stays until a later release or expiry.
			mu2, err := locks.Acquire(ctx, "severed2", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			cycle(t, locks, "warm") // the new connection learns its commands
			s.emu.Reset()
			s.emu.Delay(releaseCmd, time.Second)
			tctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
			_, err = mu2.Release(tctx)
			cancel()
			testkit.WaitFor(t, "the cut-off", func() bool { return s.emu.Count("CLIENT KILL") > 0 })
			if !errors.Is(err, conn.ErrOutcomeUnknown) || s.emu.Count("CLIENT KILL") != 1 {
				t.Fatalf("delayed release: %v, %d kills", err, s.emu.Count("CLIENT KILL"))
			}
			time.Sleep(1200 * time.Millisecond)
			if s.backend.Do(t, "GET", "severed2") != mu2.Token().b {
				t.Fatal("the release cut off took effect")
			}
			s.emu.Reset()
			if out, err := mu2.Release(ctx); out != Released || err != nil {
				t.Fatalf("release again after the cut-off: %v %v", out, err)
			}
		})
	}
}

// Without CLIENT KILL permission there is no cut-off: release is a plain
// compare-and-delete, which a late execution cannot turn against another owner.
func TestReleaseWithoutKillPermission(t *testing.T) {
	user := testserver.User{Name: "nokill", Password: "pw", Rules: []string{"+@all", "-client|kill", "~*"}}
	s := startProfile(t, emulator.Redis84, user)
	locks := New(s.client(t, respire.Options{Username: "nokill", Password: "pw"}))
	ctx := context.Background()
	cycle(t, locks, "warm")
	if got := lockCommands(s.emu); slices.Contains(got, "CLIENT KILL") {
		t.Fatalf("a plain cycle sent %v", got)
	}
	mu, err := locks.Acquire(ctx, "nk", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s.emu.Reset()
	s.emu.Delay("DELEX", 300*time.Millisecond)
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = mu.Release(tctx)
	cancel()
	if !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
	// The kill was refused, so the compare-and-delete runs late, deleting only our token.
	testkit.WaitFor(t, "the late delete", func() bool { return s.backend.Do(t, "EXISTS", "nk") == "0" })
	if !errors.Is(context.Cause(mu.KeepAliveContext()), ErrOwnershipUncertain) {
		t.Fatal("lock not reported lost")
	}
}

// 32 goroutines × 200 iterations over 4 keys, with keep-alive and random cancellation:
// never two holders inside a critical section at once. A holder counts as inside while
// its keep-alive context lives and its handle does not say Expired, which is how
// protected work must guard itself: the context ends on a timer, which an overloaded
// machine (the race detector beside other test binaries) can run later than the 15 ms
// margin a 300 ms lease keeps before the server's expiry, while Expired reads the
// clock, and the estimate it reads starts when the acquisition or renewal was sent, so
// it never outlasts the server's key. Any overlap of two holders so defined is a
// violation, with no tolerance. Contexts that outlived their lease are counted and
// logged; one still alive lateBound after its lease's end fails the test on its own: no
// timer runs that late on this machine, so the context is not ending at all. (The exact
// instant the context ends is TestObserveLeaseExpired's, under synctest.)
func TestMutualExclusionUnderContention(t *testing.T) {
	const workers, iterations, keys = 32, 200, 4
	const lateBound = 50 * time.Millisecond
	for _, p := range emulator.Profiles {
		t.Run(string(p), func(t *testing.T) {
			s := startProfile(t, p)
			locks := New(s.client(t, respire.Options{}))
			type holder struct {
				ctx  context.Context
				lock *Lock
			}
			var (
				mu                   sync.Mutex
				inside               [keys][]holder
				violations, acquired atomic.Int64
				cancelled, late      atomic.Int64
				stuck                atomic.Int64  // contexts alive lateBound past their lease
				latest               time.Duration // the latest a context was seen alive past its lease; under mu
			)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(w), 99))
					for range iterations {
						k := rng.IntN(keys)
						key := fmt.Sprintf("mx:%d", k)
						ctx, cancel := context.WithCancel(context.Background())
						if rng.IntN(10) == 0 {
							time.AfterFunc(time.Duration(rng.IntN(3000))*time.Microsecond, cancel)
						}
						l, ok, err := locks.TryAcquire(ctx, key, 300*time.Millisecond, WithKeepAlive(), WithWait(50*time.Millisecond), WithRetryEvery(time.Millisecond))
						if err != nil || !ok {
							cancel()
							if err != nil {
								cancelled.Add(1)
							}
							continue
						}
						acquired.Add(1)
						work := l.KeepAliveContext()
						mu.Lock()
						for _, h := range inside[k] {
							switch {
							case h.ctx.Err() != nil:
							case !h.lock.Expired():
								violations.Add(1)
							case time.Since(h.lock.ExpiresAtEstimate()) >= lateBound:
								stuck.Add(1)
							default:
								late.Add(1)
								latest = max(latest, time.Since(h.lock.ExpiresAtEstimate()))
							}
						}
						inside[k] = append(inside[k], holder{work, l})
						mu.Unlock()
						// Mostly short work; one in twenty outlasts the lease, so only
						// the keep-alive keeps others out. Work stops when its context ends.
						hold := time.Duration(rng.IntN(500)) * time.Microsecond
						if rng.IntN(20) == 0 {
							hold = 400 * time.Millisecond
						}
						select {
						case <-time.After(hold):
						case <-work.Done():
						}
						mu.Lock()
						inside[k] = slices.DeleteFunc(inside[k], func(h holder) bool { return h.ctx == work })
						mu.Unlock()
						l.Release(ctx)
						cancel()
						l.Close()
					}
				}()
			}
			wg.Wait()
			t.Logf("%s: %d acquisitions, %d cancelled attempts, %d cut-offs, %d keep-alive contexts ended after their lease (at most %v after)", p, acquired.Load(), cancelled.Load(), s.emu.Count("CLIENT KILL"), late.Load(), latest)
			if violations.Load() != 0 {
				t.Fatalf("%d times two holders were inside at once", violations.Load())
			}
			if stuck.Load() != 0 {
				t.Fatalf("%d keep-alive contexts still alive %v after their lease ended", stuck.Load(), lateBound)
			}
			if acquired.Load() < workers {
				t.Fatalf("only %d acquisitions", acquired.Load())
			}
		})
	}
}
