package respire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/test/clusterserver"
	"github.com/respire/respire/test/testserver"
)

func cachedClientT(t *testing.T, srv *testserver.Server, opts Options) *Client {
	t.Helper()
	opts.Addrs = []string{srv.Addr()}
	if opts.ClientSideCache == nil {
		opts.ClientSideCache = &cache.Options{}
	}
	return newClientT(t, opts)
}

// serverCalls is how many times the server ran cmd (INFO commandstats), read by the
// harness: proof of whether a read reached the server.
func serverCalls(t *testing.T, srv *testserver.Server, cmd string) int {
	t.Helper()
	info := srv.Do(t, "INFO", "commandstats")
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
		if ok {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			return n
		}
	}
	return 0
}

// eventually polls cond every millisecond for up to 2 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func cachedText(t *testing.T, c *Client, ttl time.Duration, args ...any) string {
	t.Helper()
	v, err := c.DoCached(context.Background(), ttl, args...)
	if err != nil {
		t.Fatalf("DoCached %v: %v", args, err)
	}
	if v.IsNull() {
		return "(nil)"
	}
	s, err := v.Text()
	if err != nil {
		t.Fatalf("DoCached %v: %s: %v", args, v, err)
	}
	return s
}

// A cached read is served without a round trip until another connection changes the
// key; then the next read goes to the server and sees the change.
func TestDoCachedHitsAndInvalidation(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	srv.Do(t, "SET", "ck", "v1")
	srv.Do(t, "HSET", "ch", "f", "h1", "g", "other")

	if got := cachedText(t, c, time.Hour, "GET", "ck"); got != "v1" {
		t.Fatalf("first read: %q", got)
	}
	before := serverCalls(t, srv, "get")
	for range 100 {
		if got := cachedText(t, c, time.Hour, "get", "ck"); got != "v1" {
			t.Fatalf("cached read: %q", got)
		}
	}
	if after := serverCalls(t, srv, "get"); after != before {
		t.Fatalf("the server ran GET %d more times; cached reads must not reach it", after-before)
	}
	if st := c.CacheStats(); st.Hits < 100 || st.Entries != 1 {
		t.Fatalf("stats after 100 hits: %+v", st)
	}

	// Commands of the same key are distinct entries; arguments must match exactly.
	if got := cachedText(t, c, time.Hour, "HGET", "ch", "f"); got != "h1" {
		t.Fatalf("HGET ch f: %q", got)
	}
	if got := cachedText(t, c, time.Hour, "HGET", "ch", "g"); got != "other" {
		t.Fatalf("HGET ch g: %q", got)
	}

	srv.Do(t, "SET", "ck", "v2")
	eventually(t, "the change of ck", func() bool { return cachedText(t, c, time.Hour, "GET", "ck") == "v2" })
	srv.Do(t, "HSET", "ch", "f", "h2")
	eventually(t, "the change of ch", func() bool { return cachedText(t, c, time.Hour, "HGET", "ch", "f") == "h2" })
	if got := cachedText(t, c, time.Hour, "HGET", "ch", "g"); got != "other" {
		t.Fatalf("HGET ch g after the change: %q", got)
	}
	if st := c.CacheStats(); st.Invalidations < 2 {
		t.Fatalf("stats: %+v; want at least 2 invalidations", st)
	}

	// The client's own write invalidates too (the push comes after its reply).
	if _, err := c.Do(context.Background(), "SET", "ck", "v3"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client's own change", func() bool { return cachedText(t, c, time.Hour, "GET", "ck") == "v3" })
}

// An entry lives for the caller's TTL or the key's own, whichever is shorter.
func TestDoCachedExpiry(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})

	srv.Do(t, "SET", "short", "s", "PX", "150")
	if got := cachedText(t, c, time.Hour, "GET", "short"); got != "s" {
		t.Fatalf("GET short: %q", got)
	}
	time.Sleep(200 * time.Millisecond)
	if got := cachedText(t, c, time.Hour, "GET", "short"); got != "(nil)" {
		t.Fatalf("GET short after its expiry: %q", got)
	}

	srv.Do(t, "SET", "long", "l")
	cachedText(t, c, 50*time.Millisecond, "GET", "long")
	misses := c.CacheStats().Misses
	cachedText(t, c, 50*time.Millisecond, "GET", "long")
	if got := c.CacheStats().Misses; got != misses {
		t.Fatalf("a read within the TTL missed")
	}
	time.Sleep(80 * time.Millisecond)
	cachedText(t, c, 50*time.Millisecond, "GET", "long")
	if got := c.CacheStats().Misses; got != misses+1 {
		t.Fatalf("a read after the TTL did not go to the server (misses %d, want %d)", got, misses+1)
	}

	// A missing key is cached as null and invalidated when it appears.
	if got := cachedText(t, c, time.Hour, "GET", "later"); got != "(nil)" {
		t.Fatalf("GET later: %q", got)
	}
	srv.Do(t, "SET", "later", "here")
	eventually(t, "the key to appear", func() bool { return cachedText(t, c, time.Hour, "GET", "later") == "here" })
}

// Readers racing a writer: whatever they see meanwhile, once the writer stops every
// reader converges on the last value, and stays there. A reply that predates a change
// and was kept anyway would stay for the hour-long TTL.
func TestDoCachedNeverKeepsAStaleReply(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	w := newClientT(t, Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	const keys, writes = 4, 400

	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if _, err := c.DoCached(ctx, time.Hour, "GET", fmt.Sprint("race", (g+i)%keys)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range writes {
		if _, err := w.Do(ctx, "INCR", fmt.Sprint("race", i%keys)); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	for k := range keys {
		key := fmt.Sprint("race", k)
		want := strconv.Itoa(writes / keys)
		eventually(t, key+" to converge", func() bool { return cachedText(t, c, time.Hour, "GET", key) == want })
		for range 20 {
			if got := cachedText(t, c, time.Hour, "GET", key); got != want {
				t.Fatalf("%s went back to %s after converging on %s", key, got, want)
			}
		}
	}
	st := c.CacheStats()
	t.Logf("stats: %+v", st)
	if st.Hits == 0 || st.Invalidations == 0 {
		t.Fatal("the race did not exercise both hits and invalidations")
	}
}

// Losing the tracked connection loses the invalidations it would have carried: the
// cache is flushed, and reads go to the server again on a new tracked connection.
func TestDoCachedConnectionLossFlushes(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	srv.Do(t, "SET", "lk", "before")
	if got := cachedText(t, c, time.Hour, "GET", "lk"); got != "before" {
		t.Fatalf("GET lk: %q", got)
	}
	// Kill the tracking connection; the change made while it is down reaches nobody.
	killed := srv.Do(t, "CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
	if killed == "0" {
		t.Fatal("no connection killed")
	}
	srv.Do(t, "SET", "lk", "after")
	eventually(t, "the flush", func() bool { return c.CacheStats().Flushes > 0 })
	if got := cachedText(t, c, time.Hour, "GET", "lk"); got != "after" {
		t.Fatalf("GET lk after the connection loss: %q", got)
	}
	srv.Do(t, "SET", "lk", "again")
	eventually(t, "invalidation on the new tracked connection", func() bool {
		return cachedText(t, c, time.Hour, "GET", "lk") == "again"
	})
}

// FLUSHALL invalidates everything at once (a null invalidation).
func TestDoCachedFlushAll(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	for i := range 10 {
		srv.Do(t, "SET", fmt.Sprint("f", i), "v")
		cachedText(t, c, time.Hour, "GET", fmt.Sprint("f", i))
	}
	srv.Do(t, "FLUSHALL")
	eventually(t, "the flush", func() bool { return c.CacheStats().Entries == 0 })
	if got := cachedText(t, c, time.Hour, "GET", "f3"); got != "(nil)" {
		t.Fatalf("GET f3 after FLUSHALL: %q", got)
	}
}

// With a key prefix the server's key is the prefixed one, and so is the one its
// invalidations name.
func TestDoCachedKeyPrefix(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{KeyPrefix: "app:"})
	srv.Do(t, "SET", "app:pk", "mine")
	srv.Do(t, "SET", "pk", "not mine")
	if got := cachedText(t, c, time.Hour, "GET", "pk"); got != "mine" {
		t.Fatalf("GET pk: %q", got)
	}
	srv.Do(t, "SET", "app:pk", "changed")
	eventually(t, "the change of app:pk", func() bool { return cachedText(t, c, time.Hour, "GET", "pk") == "changed" })
}

// The cache stays within its bounds.
func TestDoCachedBounds(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{ClientSideCache: &cache.Options{MaxEntries: 64}})
	for i := range 500 {
		cachedText(t, c, time.Hour, "GET", fmt.Sprint("b", i))
	}
	if st := c.CacheStats(); st.Entries > 64 || st.Evictions < 500-64 {
		t.Fatalf("stats after 500 keys with room for 64: %+v", st)
	}
}

// Error replies are returned and not kept.
func TestDoCachedErrorReplyIsNotKept(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, Options{})
	srv.Do(t, "LPUSH", "list", "x")
	for range 2 {
		if _, err := c.DoCached(context.Background(), time.Hour, "GET", "list"); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("GET of a list: %v", err)
		}
	}
	if st := c.CacheStats(); st.Entries != 0 || st.Misses != 2 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestDoCachedBadInput(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	ctx := context.Background()
	plain := newClientT(t, Options{Addrs: []string{srv.Addr()}})
	if _, err := plain.DoCached(ctx, time.Second, "GET", "k"); !errors.Is(err, ErrNoCache) {
		t.Fatalf("without a cache: %v", err)
	}
	if _, err := NewClient(ctx, Options{Addrs: []string{srv.Addr()}, Protocol: 2, ClientSideCache: &cache.Options{}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("RESP2 with a cache: %v", err)
	}
	if _, err := NewClient(ctx, Options{Addrs: []string{srv.Addr()}, ClientSideCache: &cache.Options{MaxBytes: -1}}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("negative MaxBytes: %v", err)
	}
	c := cachedClientT(t, srv, Options{})
	cases := []struct {
		ttl  time.Duration
		args []any
		want error
	}{
		{0, []any{"GET", "k"}, ErrInvalidArg},
		{-time.Second, []any{"GET", "k"}, ErrInvalidArg},
		{time.Second, []any{"GET", ""}, ErrInvalidArg},
		{time.Second, []any{"SET", "k", "v"}, ErrNotCacheable},
		{time.Second, []any{"MGET", "a", "b"}, ErrNotCacheable},
		{time.Second, []any{"BLPOP", "a", 0}, ErrNotCacheable},
		{time.Second, []any{"PING"}, ErrNotCacheable},
		{time.Second, []any{"NOSUCHCOMMAND", "k"}, ErrNotCacheable},
		{time.Second, []any{"GET", 42}, ErrNotCacheable},
		{time.Second, []any{"SRANDMEMBER", "s"}, ErrNotCacheable},
		{time.Second, []any{"PTTL", "k"}, ErrNotCacheable},
		{time.Second, []any{"HTTL", "h", "FIELDS", 1, "f"}, ErrNotCacheable},
		{time.Second, []any{"HPTTL", "h", "FIELDS", 1, "f"}, ErrNotCacheable},
		{time.Second, []any{"HEXPIRETIME", "h", "FIELDS", 1, "f"}, ErrNotCacheable},
		{time.Second, []any{"HPEXPIRETIME", "h", "FIELDS", 1, "f"}, ErrNotCacheable},
		{time.Second, []any{"OBJECT", "IDLETIME", "k"}, ErrNotCacheable},
		{time.Second, []any{"EVAL_RO", "return 1", 1, "k"}, ErrNotCacheable},
		{time.Second, []any{"SORT_RO", "k", "BY", "w_*"}, ErrNotCacheable},
	}
	for _, tc := range cases {
		if _, err := c.DoCached(ctx, tc.ttl, tc.args...); !errors.Is(err, tc.want) {
			t.Errorf("DoCached(%v, %v): %v; want %v", tc.ttl, tc.args, err, tc.want)
		}
	}
	if _, err := c.DoCached(ctx, time.Second); err == nil {
		t.Error("DoCached without a command: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.DoCached(cctx, time.Second, "GET", "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if st := c.CacheStats(); st.Entries != 0 {
		t.Errorf("a refused or cancelled read left %d entries", st.Entries)
	}
	srv.Do(t, "SET", "kept", "v")
	cachedText(t, c, time.Hour, "GET", "kept")
	c.Close()
	if _, err := c.DoCached(ctx, time.Second, "GET", "kept"); !errors.Is(err, ErrClosed) {
		t.Errorf("a kept reply after Close: %v", err)
	}
	if _, err := c.DoCached(ctx, time.Second, "GET", "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// On a Cluster every node tracks the keys read through it.
func TestDoCachedCluster(t *testing.T) {
	cl := clusterserver.Start(t, clusterserver.Config{NoReplicas: true})
	c := clusterClient(t, cl, Options{ClientSideCache: &cache.Options{}})
	w := clusterClient(t, cl, Options{})
	ctx := context.Background()
	var keys []string
	for _, slot := range []int{100, 8000, 16000} { // one per master of three
		keys = append(keys, keyIn(slot, "ck"))
	}
	for _, k := range keys {
		if _, err := w.Do(ctx, "SET", k, "1"); err != nil {
			t.Fatal(err)
		}
		if got := cachedText(t, c, time.Hour, "GET", k); got != "1" {
			t.Fatalf("GET %s: %q", k, got)
		}
	}
	hits := c.CacheStats().Hits
	for _, k := range keys {
		cachedText(t, c, time.Hour, "GET", k)
	}
	if st := c.CacheStats(); st.Hits != hits+3 || st.Flushes != 0 {
		t.Fatalf("second reads of three keys: %+v; want 3 more hits and no flush", st)
	}
	for _, k := range keys {
		if _, err := w.Do(ctx, "SET", k, "2"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the change of "+k, func() bool { return cachedText(t, c, time.Hour, "GET", k) == "2" })
	}
	c.tracking.mu.Lock()
	n := len(c.tracking.conns)
	c.tracking.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d tracked connections; want one per master", n)
	}

	// A slot that changes hands flushes the cache: a key read as missing on the old
	// node is not tracked by the new one.
	if got := cachedText(t, c, time.Hour, "GET", keyIn(100, "missing")); got != "(nil)" {
		t.Fatalf("GET of a missing key: %q", got)
	}
	other := cl.MasterOf(t, 8000).Addr()
	if err := c.route.Inspect().Moved(100, other); err != nil {
		t.Fatal(err)
	}
	if st := c.CacheStats(); st.Flushes != 1 || st.Entries != 0 {
		t.Fatalf("after a slot moved: %+v; want one flush and no entries", st)
	}
}

// A server that refuses CLIENT TRACKING makes DoCached fail with ErrNoTracking, and
// the failure is remembered for a while instead of costing a dial per read.
func TestDoCachedWithoutTrackingPermission(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{
		{Name: "app", Password: "pw", Rules: []string{"+@all", "-client|tracking", "~*"}},
	}})
	c := cachedClientT(t, srv, Options{Username: "app", Password: "pw"})
	ctx := context.Background()
	connections := func() int {
		for _, line := range strings.Split(srv.Do(t, "INFO", "stats"), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
				n, _ := strconv.Atoi(rest)
				return n
			}
		}
		return -1
	}
	if _, err := c.DoCached(ctx, time.Minute, "GET", "k"); !errors.Is(err, ErrNoTracking) || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("DoCached without permission: %v", err)
	}
	before := connections()
	for range 20 {
		if _, err := c.DoCached(ctx, time.Minute, "GET", "k"); !errors.Is(err, ErrNoTracking) {
			t.Fatalf("DoCached again: %v", err)
		}
	}
	// One connection is the harness's own INFO.
	if n := connections() - before; n > 1 {
		t.Fatalf("%d connections for 20 reads after the refusal; want none", n-1)
	}
	if _, err := c.Do(ctx, "GET", "k"); err != nil {
		t.Fatalf("Do is unaffected: %v", err)
	}
}
