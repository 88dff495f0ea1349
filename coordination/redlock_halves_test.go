package coordination

import (
	"context"
	"errors"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// goroutinesCreated is how many goroutines the process has created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A Redlock cycle on servers whose connections are up sends every server's command
// from the caller's goroutine and collects the replies the connections' readers read:
// it starts no goroutine. Before, the acquisition and the release each started one
// per server but the last (4 a cycle on three servers), whose stacks grew through the
// whole call path. Other goroutines the process starts meanwhile (a runtime's, a
// timer's) are allowed for: fewer than one a cycle.
func TestRedlockCycleStartsNoGoroutine(t *testing.T) {
	_, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	ctx := context.Background()
	cycle := func() {
		rl, ok, err := g.TryAcquire(ctx, "rl:no-goroutine", time.Minute)
		if !ok || err != nil {
			t.Fatalf("TryAcquire: %v, %v", ok, err)
		}
		if ok, err := rl.Release(ctx); !ok || err != nil {
			t.Fatalf("Release: %v, %v", ok, err)
		}
	}
	cycle() // dials the connections, learns the servers and their commands
	const cycles = 50
	before := goroutinesCreated()
	for range cycles {
		cycle()
	}
	if n := goroutinesCreated() - before; n >= cycles {
		t.Errorf("%d Redlock cycles created %d goroutines, want none", cycles, n)
	}
}

// pauseWrites makes each server hold back write commands (and scripts) until the
// test ends or unpause is called.
func pauseWrites(t *testing.T, srvs []*testserver.Server) (unpause func()) {
	t.Helper()
	for _, s := range srvs {
		s.Do(t, "CLIENT", "PAUSE", "60000", "WRITE")
	}
	unpause = func() {
		for _, s := range srvs {
			s.Do(t, "CLIENT", "UNPAUSE")
		}
	}
	t.Cleanup(unpause)
	return unpause
}

// setAfterSend sets the hook between the halves for the rest of the test.
func setAfterSend(t *testing.T, f func(by time.Time)) {
	afterSend.Store(&f)
	t.Cleanup(func() { afterSend.Store(nil) })
}

// A deadline that passes between the halves of a release fails each server's delete
// as written and of unknown outcome, without a cut-off (the caller stopped waiting):
// no quorum, the ownership uncertain. The deletes left behind still run, and can only
// remove this lease.
func TestRedlockReleaseDeadlinePassesBetweenHalves(t *testing.T) {
	srvs, clients, g := halvesGroup(t)
	ctx := context.Background()
	warmUp(t, g, "rl:halves-warm")
	rl, ok, err := g.TryAcquire(ctx, "rl:halves-deadline", time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire: %v, %v", ok, err)
	}
	unpause := pauseWrites(t, srvs)
	setAfterSend(t, func(by time.Time) {
		testkit.WaitFor(t, "the node deadline to pass", func() bool { return !time.Now().Before(by) })
	})
	ok, err = rl.Release(ctx)
	if ok || !errors.Is(err, ErrNoQuorum) || !errors.Is(err, lock.ErrOwnershipUncertain) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, conn.ErrOutcomeUnknown) {
		t.Fatalf("Release whose deadline passed between the halves: %v, %v; want no quorum, ownership uncertain, deadline exceeded", ok, err)
	}
	afterSend.Store(nil)
	unpause()
	testkit.WaitFor(t, "the deletes left behind to run", func() bool { return keysGone(t, srvs, "rl:halves-deadline") })
	for _, c := range clients {
		if _, err := c.Do(ctx, "PING"); err != nil {
			t.Fatalf("the client after the timed-out release: %v", err)
		}
	}
}

// warmUp runs a Redlock cycle on key, which dials the group's connections, both
// lanes, and learns the servers and their commands: the next cycle's halves have
// nothing to wait for before they send.
func warmUp(t *testing.T, g *RedlockGroup, key string) {
	t.Helper()
	ctx := context.Background()
	rl, ok, err := g.TryAcquire(ctx, key, time.Minute)
	if !ok || err != nil {
		t.Fatalf("TryAcquire: %v, %v", ok, err)
	}
	if ok, err := rl.Release(ctx); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}
}

// halvesGroup is a group of three servers for the tests between the halves, with a
// node timeout long enough for a loaded machine's acquisition and short enough for a
// hook to wait out.
func halvesGroup(t *testing.T) ([]*testserver.Server, []*respire.Client, *RedlockGroup) {
	t.Helper()
	srvs, clients := redlockNodes(t, 3)
	g, err := NewRedlockGroup(clients, RedlockOptions{NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return srvs, clients, g
}

// keysGone reports that no server has key.
func keysGone(t *testing.T, srvs []*testserver.Server, key string) bool {
	t.Helper()
	for _, s := range srvs {
		if s.Do(t, "EXISTS", key) != "0" {
			return false
		}
	}
	return true
}

// A connection that dies between the halves fails that server's part as of unknown
// outcome: an acquisition gets no vote there (and its clean-up finds the connections
// dialled again), and a release is not confirmed there; the next release, on fresh
// connections, deletes the lease.
func TestRedlockConnectionDiesBetweenHalves(t *testing.T) {
	srvs, _, g := halvesGroup(t)
	ctx := context.Background()
	killAll := func(time.Time) {
		for _, s := range srvs {
			s.Do(t, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
		}
	}

	t.Run("acquisition", func(t *testing.T) {
		warmUp(t, g, "rl:halves-warm")
		unpause := pauseWrites(t, srvs) // the SETs wait on the servers until killed
		setAfterSend(t, func(by time.Time) {
			afterSend.Store(nil) // the clean-up's release goes on undisturbed
			killAll(by)
		})
		_, ok, err := g.TryAcquire(ctx, "rl:halves-kill-a", time.Minute)
		if ok || !errors.Is(err, ErrNoQuorum) || !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("TryAcquire whose connections died between the halves: %v, %v; want no quorum, outcome unknown", ok, err)
		}
		unpause()
		if !keysGone(t, srvs, "rl:halves-kill-a") {
			t.Fatal("a SET whose connection was killed before it ran took the key")
		}
	})

	t.Run("release", func(t *testing.T) {
		warmUp(t, g, "rl:halves-warm") // dials the connections killed above
		rl, ok, err := g.TryAcquire(ctx, "rl:halves-kill-r", time.Minute)
		if !ok || err != nil {
			t.Fatalf("TryAcquire: %v, %v", ok, err)
		}
		unpause := pauseWrites(t, srvs)
		setAfterSend(t, killAll)
		ok, err = rl.Release(ctx)
		if ok || !errors.Is(err, ErrNoQuorum) || !errors.Is(err, lock.ErrOwnershipUncertain) || !errors.Is(err, conn.ErrOutcomeUnknown) {
			t.Fatalf("Release whose connections died between the halves: %v, %v; want no quorum, ownership uncertain", ok, err)
		}
		afterSend.Store(nil)
		unpause()
		if n := holders(t, srvs, "rl:halves-kill-r", tokenText(t, rl)); n != 3 {
			t.Fatalf("%d servers hold the lease after deletes whose connections were killed before they ran, want 3", n)
		}
		if ok, err := rl.Release(ctx); !ok || err != nil {
			t.Fatalf("the second Release: %v, %v", ok, err)
		}
		if !keysGone(t, srvs, "rl:halves-kill-r") {
			t.Fatal("the second Release left the lease")
		}
	})
}

// The script that a release's finish half finds flushed (NOSCRIPT) runs by EVAL, on
// each server, as a release in one piece runs it.
func TestRedlockReleaseNoScriptInFinishHalf(t *testing.T) {
	srvs, clients := redlockNodes(t, 3)
	g := newGroup(t, clients)
	ctx := context.Background()
	cycle := func(key string) {
		t.Helper()
		rl, ok, err := g.TryAcquire(ctx, key, time.Minute)
		if !ok || err != nil {
			t.Fatalf("TryAcquire: %v, %v", ok, err)
		}
		if ok, err := rl.Release(ctx); !ok || err != nil {
			t.Fatalf("Release: %v, %v", ok, err)
		}
	}
	cycle("rl:noscript-warm") // the lock connections learn the server's commands and the script
	for _, s := range srvs {
		s.Do(t, "SCRIPT", "FLUSH")
	}
	before := make([]map[string]int, len(srvs))
	for i, s := range srvs {
		before[i] = calls(t, s, "eval", "evalsha")
	}
	sent := false
	setAfterSend(t, func(time.Time) { sent = true })
	cycle("rl:noscript")
	if !sent {
		t.Fatal("the release was not split in halves")
	}
	for i, s := range srvs {
		after := calls(t, s, "eval", "evalsha")
		if after["evalsha"] != before[i]["evalsha"]+1 || after["eval"] != before[i]["eval"]+1 {
			t.Errorf("server %d: EVALSHA %d→%d, EVAL %d→%d; want one of each (NOSCRIPT, then EVAL)", i, before[i]["evalsha"], after["evalsha"], before[i]["eval"], after["eval"])
		}
	}
	if !keysGone(t, srvs, "rl:noscript") {
		t.Fatal("the release left the lease")
	}
}

// A Redlock's release deletes with DELEX on Redis 8.6 and with the compare-and-delete
// script on Redis 7 and 6.0, split in halves on each, once the lock connections know
// their server; the first release on a fresh connection learns it through the
// fallbacks of the finish half.
func TestRedlockReleaseCommandPerGeneration(t *testing.T) {
	for _, tt := range []struct {
		gen, want string
	}{
		{testserver.Redis86, "delex"},
		{testserver.Redis7, "evalsha"},
		{testserver.Redis60, "evalsha"},
	} {
		t.Run(tt.gen, func(t *testing.T) {
			srvs := make([]*testserver.Server, 3)
			clients := make([]*respire.Client, 3)
			for i := range srvs {
				srvs[i] = testserver.StartGeneration(t, tt.gen, testserver.Config{})
				clients[i] = testclient.New(t, respire.Options{Addrs: []string{srvs[i].Addr()}})
			}
			g := newGroup(t, clients)
			ctx := context.Background()
			for round := range 2 {
				before := make([]map[string]int, len(srvs))
				for i, s := range srvs {
					before[i] = calls(t, s, "delex", "evalsha", "eval", "set")
				}
				halved := 0
				setAfterSend(t, func(time.Time) { halved++ })
				rl, ok, err := g.TryAcquire(ctx, "rl:gen", time.Minute)
				if !ok || err != nil {
					t.Fatalf("TryAcquire: %v, %v", ok, err)
				}
				if ok, err := rl.Release(ctx); !ok || err != nil {
					t.Fatalf("Release: %v, %v", ok, err)
				}
				if !keysGone(t, srvs, "rl:gen") {
					t.Fatal("the release left the lease")
				}
				if round == 0 {
					continue // the connections learn the server's commands
				}
				if halved != 2 {
					t.Errorf("%d of the cycle's 2 operations were split in halves", halved)
				}
				for i, s := range srvs {
					after := calls(t, s, "delex", "evalsha", "eval", "set")
					for cmd, n := range after {
						want := before[i][cmd]
						if cmd == tt.want || cmd == "set" {
							want++
						}
						if n != want {
							t.Errorf("server %d: %s called %d times in a cycle, want %d", i, cmd, n-before[i][cmd], want-before[i][cmd])
						}
					}
				}
			}
		})
	}
}

// commandPairs counts an observer's CommandStart and CommandEnd events by name.
type commandPairs struct {
	observe.Base
	mu     sync.Mutex
	starts map[string]int
	ends   map[string]int
	addrs  []string // of every CommandEnd
}

func (o *commandPairs) CommandStart(ctx context.Context, e observe.CommandStart) context.Context {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts[e.Name]++
	return ctx
}

func (o *commandPairs) CommandEnd(_ context.Context, e observe.CommandEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ends[e.Name]++
	o.addrs = append(o.addrs, e.Addr)
}

// Split in halves, every server's command still reports one CommandStart and one
// CommandEnd to its client's observer, the end naming the server that answered.
func TestRedlockHalvesPairObserverEvents(t *testing.T) {
	var clients []*respire.Client
	var observers []*commandPairs
	var addrs []string
	for range 3 {
		srv := testserver.Start(t, testserver.Config{})
		addrs = append(addrs, srv.Addr())
		o := &commandPairs{starts: map[string]int{}, ends: map[string]int{}}
		observers = append(observers, o)
		clients = append(clients, testclient.At(t, srv.Addr(), respire.Options{Observer: o}))
	}
	g := newGroup(t, clients)
	warmUp(t, g, "rl:pairs-warm") // identifies the servers, loads the script
	for _, o := range observers {
		o.mu.Lock()
		clear(o.starts)
		clear(o.ends)
		o.addrs = nil
		o.mu.Unlock()
	}
	warmUp(t, g, "rl:pairs")
	for i, o := range observers {
		o.mu.Lock()
		if o.starts["SET"] != 1 || o.ends["SET"] != 1 {
			t.Errorf("server %d: SET started %d times, ended %d; want once each", i, o.starts["SET"], o.ends["SET"])
		}
		deletes := 0
		for name, n := range o.starts {
			if name != "SET" {
				deletes += n
				if o.ends[name] != n {
					t.Errorf("server %d: %s started %d times, ended %d", i, name, n, o.ends[name])
				}
			}
		}
		if deletes != 1 {
			t.Errorf("server %d: %d deletes started (%v), want 1", i, deletes, o.starts)
		}
		for _, a := range o.addrs {
			if a != addrs[i] {
				t.Errorf("server %d (%s): a CommandEnd names %q", i, addrs[i], a)
			}
		}
		o.mu.Unlock()
	}
}

// A deadline that passes between the halves of an acquisition gives those servers no
// vote: no quorum, the deadline's error. The SETs left behind on the servers still run
// when they can, and the attempt's clean-up deletes, sent after them on the same
// connections, remove them: no key is left for its TTL.
func TestRedlockAcquireDeadlinePassesBetweenHalves(t *testing.T) {
	srvs, _, g := halvesGroup(t)
	ctx := context.Background()
	warmUp(t, g, "rl:halves-warm")
	unpause := pauseWrites(t, srvs)
	setAfterSend(t, func(by time.Time) {
		afterSend.Store(nil) // the clean-up's release goes on undisturbed
		testkit.WaitFor(t, "the node deadline to pass", func() bool { return !time.Now().Before(by) })
	})
	_, ok, err := g.TryAcquire(ctx, "rl:halves-deadline-a", time.Minute)
	if ok || !errors.Is(err, ErrNoQuorum) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TryAcquire whose deadline passed between the halves: %v, %v; want no quorum, deadline exceeded", ok, err)
	}
	unpause()
	testkit.WaitFor(t, "the SETs left behind to be deleted after them", func() bool { return keysGone(t, srvs, "rl:halves-deadline-a") })
}
