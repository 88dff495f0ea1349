package coordination

import (
	"context"
	"crypto/fips140"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/test/testserver"
)

// fipsChild names the environment variable under which TestScriptsInFIPSOnlyMode runs
// its scenario in a test binary of its own started with GODEBUG=fips140=only: the mode
// is fixed at start-up, and a package that hashed with SHA-1 at init kills the process
// before any test runs.
const fipsChild = "RESPIRE_COORDINATION_FIPS_CHILD"

// TestScriptsInFIPSOnlyMode: in FIPS 140-only mode, where crypto/sha1 panics, a lock, a
// fenced lock and a fenced write, a semaphore permit, a Redlock over three servers and
// a respire.Script each run their scripts on real servers, which give the digests
// (SCRIPT LOAD, once per connection and script: a second round loads nothing more).
// Outside it the scripts run as before, by a digest computed here, with no SCRIPT LOAD.
func TestScriptsInFIPSOnlyMode(t *testing.T) {
	if os.Getenv(fipsChild) != "" {
		if !fips140.Enforced() {
			t.Fatal("the child does not run in FIPS 140-only mode")
		}
		runScriptsTwice(t, true)
		return
	}
	runScriptsTwice(t, false)
	cmd := exec.Command(os.Args[0], "-test.run=^TestScriptsInFIPSOnlyMode$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fipsChild+"=1", "GODEBUG=fips140=only")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("in FIPS 140-only mode: %v\n%s", err, out)
	}
}

// runScriptsTwice runs every script user twice and checks how the digests were had:
// from the servers (fips) or computed here.
func runScriptsTwice(t *testing.T, fips bool) {
	srvs, clients := redlockNodes(t, 3)
	loads := func() int {
		n := 0
		for _, s := range srvs {
			n += s.Calls(t, "script|load")
		}
		return n
	}
	useScripts(t, srvs[0], clients, 1)
	first := loads()
	useScripts(t, srvs[0], clients, 2)
	switch again := loads(); {
	case fips && first == 0:
		t.Error("no SCRIPT LOAD in FIPS 140-only mode: where did the digests come from?")
	case again != first:
		t.Errorf("SCRIPT LOAD ran %d times in the first round, %d in both: a connection forgot a digest", first, again)
	case !fips && first != 0:
		t.Errorf("%d SCRIPT LOADs where this process computes the digests", first)
	}

	// A server that lost its scripts answers NOSCRIPT to the remembered digest; the
	// script then runs by its source.
	for _, s := range srvs {
		s.Do(t, "SCRIPT", "FLUSH")
	}
	useScripts(t, srvs[0], clients, 3)
}

// useScripts takes and gives back each kind of lease whose commands are scripts on
// Redis 7 (clients[0] for all but the Redlock, which uses the three), and runs a
// respire.Script; round makes its keys its own.
func useScripts(t *testing.T, srv *testserver.Server, clients []*respire.Client, round int) {
	t.Helper()
	ctx := context.Background()
	c, co := clients[0], New(clients[0])
	key := func(name string) string { return "fips:" + name + ":" + strconv.Itoa(round) }
	const ttl = 10 * time.Second

	l, ok, err := lock.New(c).TryAcquire(ctx, key("lock"), ttl)
	if err != nil || !ok {
		t.Fatalf("lock: %v, %v", ok, err)
	}
	if ok, err := l.ResetExpiry(ctx, 2*ttl); err != nil || !ok { // SET IFEQ is Redis 8.4: the script
		t.Fatalf("lock: ResetExpiry: %v, %v", ok, err)
	}
	if out, err := l.Release(ctx); err != nil || out != lock.Released {
		t.Fatalf("lock: Release: %v, %v", out, err)
	}

	lease, fence := "{"+key("fenced")+"}:lease", "{"+key("fenced")+"}:fence"
	fl, ok, err := co.TryAcquireFencedLock(ctx, lease, fence, ttl)
	if err != nil || !ok {
		t.Fatalf("fenced lock: %v, %v", ok, err)
	}
	res, err := co.Resource("{"+key("fenced")+"}:body", "{"+key("fenced")+"}:accepted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(ctx, fl.FencingToken(), "SET", "v"); err != nil {
		t.Fatalf("fenced write: %v", err)
	}
	if out, err := fl.Release(ctx); err != nil || out != lock.Released {
		t.Fatalf("fenced lock: Release: %v, %v", out, err)
	}

	p, ok, err := co.Semaphore(key("semaphore"), 2).TryAcquire(ctx, ttl)
	if err != nil || !ok {
		t.Fatalf("semaphore: %v, %v", ok, err)
	}
	if ok, err := p.ResetExpiry(ctx, 2*ttl); err != nil || !ok {
		t.Fatalf("semaphore: ResetExpiry: %v, %v", ok, err)
	}
	if out, err := p.Release(ctx); err != nil || out != lock.Released {
		t.Fatalf("semaphore: Release: %v, %v", out, err)
	}

	g := newGroup(t, clients)
	rl, ok, err := g.TryAcquire(ctx, key("redlock"), ttl)
	if err != nil || !ok {
		t.Fatalf("redlock: %v, %v", ok, err)
	}
	if ok, err := rl.ResetExpiry(ctx, 2*ttl); err != nil || !ok {
		t.Fatalf("redlock: ResetExpiry: %v, %v", ok, err)
	}
	if ok, err := rl.Release(ctx); err != nil || !ok {
		t.Fatalf("redlock: Release: %v, %v", ok, err)
	}

	s := respire.NewScript("return redis.call('SET', KEYS[1], ARGV[1])")
	if v, err := s.Run(ctx, c, []string{key("script")}, "ran"); err != nil {
		t.Fatalf("script: %v, %v", v, err)
	}
	if got := srv.Do(t, "GET", key("script")); got != "ran" {
		t.Fatalf("script: the key holds %q", got)
	}
	if fips140.Enforced() != (s.Hash() == "") {
		t.Errorf("script: Hash() = %q", s.Hash())
	}
}
