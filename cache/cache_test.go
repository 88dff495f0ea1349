package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/resp"
)

func newT(t *testing.T, o Options) *Cache {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func store(c *Cache, key string, args []any, v resp.Value, ttl time.Duration) bool {
	return c.Store(c.Reserve(key, nil), args, v, ttl)
}

// getBG is Get with a background context, where no source can make it wait or fail.
func getBG(c *Cache, key string, args []any) (resp.Value, bool) {
	v, ok, err := c.Get(context.Background(), key, args)
	if err != nil {
		panic(err) // no test source fails with a background context
	}
	return v, ok
}

func TestGetStoreMatch(t *testing.T) {
	c := newT(t, Options{})
	get := []any{"GET", "k"}
	if _, ok := getBG(c, "k", get); ok {
		t.Fatal("hit in an empty cache")
	}
	if !store(c, "k", get, resp.BulkString("v"), time.Hour) {
		t.Fatal("store refused")
	}
	cases := []struct {
		args []any
		hit  bool
	}{
		{[]any{"GET", "k"}, true},
		{[]any{"get", "k"}, true},
		{[]any{[]byte("Get"), []byte("k")}, true},
		{[]any{"GET", "K"}, false}, // keys are case-sensitive
		{[]any{"GET", "k", "extra"}, false},
		{[]any{"GETDEL", "k"}, false},
	}
	for _, tc := range cases {
		v, ok := getBG(c, "k", tc.args)
		if ok != tc.hit {
			t.Errorf("Get %v: hit = %v, want %v", tc.args, ok, tc.hit)
		}
		if ok && v.String() != `"v"` {
			t.Errorf("Get %v = %s", tc.args, v)
		}
	}

	// Numeric arguments match their wire text.
	zr := []any{"ZRANGE", "z", 0, int64(-1)}
	store(c, "z", zr, resp.BulkString("range"), time.Hour)
	if _, ok := getBG(c, "z", []any{"zrange", "z", "0", "-1"}); !ok {
		t.Error("ZRANGE z 0 -1 as text missed the entry stored with integers")
	}
	if _, ok := getBG(c, "z", []any{"ZRANGE", "z", 0, 1.5}); ok {
		t.Error("ZRANGE z 0 1.5 hit the entry for 0 -1")
	}
}

func TestInvalidationVoidsAReadInFlight(t *testing.T) {
	c := newT(t, Options{})
	args := []any{"GET", "k"}

	tk := c.Reserve("k", nil)
	c.Invalidate("k")
	if c.Store(tk, args, resp.BulkString("old"), time.Hour) {
		t.Fatal("a reply raced by an invalidation was stored")
	}
	if _, ok := getBG(c, "k", args); ok {
		t.Fatal("hit after a voided store")
	}

	tk = c.Reserve("k", nil)
	c.Invalidate("other") // another key leaves it alone
	if !c.Store(tk, args, resp.BulkString("new"), time.Hour) {
		t.Fatal("store refused after an unrelated invalidation")
	}

	tk = c.Reserve("k", nil)
	c.Flush()
	if c.Store(tk, args, resp.BulkString("x"), time.Hour) {
		t.Fatal("a reply raced by a flush was stored")
	}
	if st := c.Stats(); st.Discarded != 2 || st.Entries != 0 || st.Flushes != 1 {
		t.Fatalf("stats: %+v", st)
	}

	// A ticket is good once.
	tk = c.Reserve("k", nil)
	if !c.Store(tk, args, resp.BulkString("1"), time.Hour) || c.Store(tk, args, resp.BulkString("2"), time.Hour) {
		t.Fatal("a ticket stored twice")
	}
	c.Cancel(c.Reserve("k", nil))
	if n := len(c.shard("k").pending); n != 0 {
		t.Fatalf("%d keys with reads in flight after every read ended", n)
	}
}

func TestInvalidateDropsEveryCommandOfTheKey(t *testing.T) {
	c := newT(t, Options{})
	store(c, "h", []any{"HGET", "h", "a"}, resp.BulkString("1"), time.Hour)
	store(c, "h", []any{"HGET", "h", "b"}, resp.BulkString("2"), time.Hour)
	store(c, "g", []any{"GET", "g"}, resp.BulkString("3"), time.Hour)
	c.Invalidate("h")
	if _, ok := getBG(c, "h", []any{"HGET", "h", "a"}); ok {
		t.Error("HGET h a survived")
	}
	if _, ok := getBG(c, "g", []any{"GET", "g"}); !ok {
		t.Error("GET g was dropped with h")
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Errorf("entries = %d, want 1", st.Entries)
	}
}

// TestExpiry runs on a synctest bubble's clock, so that the TTL passes exactly when
// the test says, however loaded the machine.
func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newT(t, Options{})
		args := []any{"GET", "k"}
		store(c, "k", args, resp.BulkString("v"), 20*time.Millisecond)
		if _, ok := getBG(c, "k", args); !ok {
			t.Fatal("miss within the TTL")
		}
		time.Sleep(30 * time.Millisecond)
		if _, ok := getBG(c, "k", args); ok {
			t.Fatal("hit after the TTL")
		}
		if store(c, "k", args, resp.BulkString("v"), 0) {
			t.Fatal("stored with a zero TTL")
		}
	})
}

func TestTTL(t *testing.T) {
	cases := []struct {
		ttl  time.Duration
		pttl int64
		want time.Duration
	}{
		{time.Minute, -1, time.Minute},               // no expiry on the key
		{time.Minute, -2, time.Minute},               // no key
		{time.Minute, 1500, 1500 * time.Millisecond}, // the key expires first
		{time.Second, 5000, time.Second},             // the caller's TTL is shorter
		{time.Second, 0, 0},                          // expiring now: not kept
	}
	for _, tc := range cases {
		if got := TTL(tc.ttl, tc.pttl); got != tc.want {
			t.Errorf("TTL(%v, %d) = %v, want %v", tc.ttl, tc.pttl, got, tc.want)
		}
	}
}

func TestBounds(t *testing.T) {
	c := newT(t, Options{MaxEntries: 160})
	for i := range 2000 {
		k := fmt.Sprint("k", i)
		store(c, k, []any{"GET", k}, resp.BulkString("v"), time.Hour)
	}
	st := c.Stats()
	if st.Entries > 160 || st.Evictions != 2000-st.Entries {
		t.Fatalf("entries %d, evictions %d, want at most 160 and the rest evicted", st.Entries, st.Evictions)
	}

	c = newT(t, Options{MaxBytes: 64 << 10})
	big := resp.BulkString(strings.Repeat("x", 1000))
	for i := range 1000 {
		k := fmt.Sprint("k", i)
		store(c, k, []any{"GET", k}, big, time.Hour)
	}
	if st := c.Stats(); st.Bytes > 64<<10 || st.Entries == 0 {
		t.Fatalf("bytes %d with a bound of %d (%d entries)", st.Bytes, 64<<10, st.Entries)
	}
}

// The least recently used of a sample goes first: an entry read all along survives a
// stream of entries read once.
func TestEvictionKeepsWhatIsUsed(t *testing.T) {
	// On a synctest bubble's clock, the milliseconds between hits pass at once.
	synctest.Test(t, func(t *testing.T) {
		c := newT(t, Options{MaxEntries: 16 * 8})
		hot := []any{"GET", "hot"}
		store(c, "hot", hot, resp.BulkString("v"), time.Hour)
		for i := range 1000 {
			k := fmt.Sprint("cold", i)
			store(c, k, []any{"GET", k}, resp.BulkString("v"), time.Hour)
			if i%8 == 0 { // 8 cold entries spread over 16 shards of 8 entries each
				time.Sleep(time.Millisecond) // hits are recorded once a millisecond
				if _, ok := getBG(c, "hot", hot); !ok {
					t.Fatalf("the hot entry was evicted after %d cold ones", i)
				}
			}
		}
	})
}

func TestOptions(t *testing.T) {
	if _, err := New(Options{MaxEntries: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative MaxEntries: %v", err)
	}
	if _, err := New(Options{MaxBytes: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative MaxBytes: %v", err)
	}
}

func TestGetDoesNotAllocate(t *testing.T) {
	c := newT(t, Options{})
	args := []any{"ZRANGE", "z", 0, -1}
	store(c, "z", args, resp.BulkString("v"), time.Hour)
	if n := testing.AllocsPerRun(100, func() { getBG(c, "z", args) }); n != 0 {
		t.Fatalf("Get allocates %.0f times", n)
	}
}

func TestParseInvalidation(t *testing.T) {
	key := func(s string) resp.Value { return resp.BulkString(s) }
	cases := []struct {
		name string
		v    resp.Value
		want Invalidation
		ok   bool
	}{
		{"keys", resp.Push(key("invalidate"), resp.Array(key("a"), key("b"))), Invalidation{Keys: []string{"a", "b"}}, true},
		{"flush", resp.Push(key("invalidate"), resp.Null()), Invalidation{All: true}, true},
		{"not a push", resp.Array(key("invalidate"), resp.Array(key("a"))), Invalidation{}, false},
		{"other push", resp.Push(key("message"), key("ch"), key("m")), Invalidation{}, false},
		{"short", resp.Push(key("invalidate")), Invalidation{}, false},
		{"key not text", resp.Push(key("invalidate"), resp.Array(resp.Array())), Invalidation{}, false},
		{"keys not array", resp.Push(key("invalidate"), key("a")), Invalidation{}, false},
	}
	for _, tc := range cases {
		got, ok := ParseInvalidation(tc.v)
		if ok != tc.ok || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Hits read the index, which writers keep beside the shards: whatever a write does
// (store, replace, evict, invalidate, flush), a key is found exactly while its shard
// keeps it. With as many buckets as entries, many buckets hold several.
func TestIndexFollowsTheShards(t *testing.T) {
	c := newT(t, Options{MaxEntries: 4 * shardCount})
	if len(c.index) != 4*shardCount {
		t.Fatalf("%d buckets for %d entries", len(c.index), 4*shardCount)
	}
	const keys = 500
	get := func(i int) []any { k := fmt.Sprint("k", i); return []any{"GET", k} }
	kept := func(i int) bool {
		k := fmt.Sprint("k", i)
		s := c.shard(k)
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.keys[k] != nil
	}
	check := func(when string) {
		t.Helper()
		hits := 0
		for i := range keys {
			_, ok := getBG(c, fmt.Sprint("k", i), get(i))
			if ok != kept(i) {
				t.Fatalf("%s: k%d: hit %v, kept by its shard %v", when, i, ok, kept(i))
			}
			if ok {
				hits++
			}
		}
		if st := c.Stats(); int64(hits) != st.Entries {
			t.Fatalf("%s: %d keys hit, %d entries", when, hits, st.Entries)
		}
	}
	for i := range keys { // evicts all along
		store(c, fmt.Sprint("k", i), get(i), resp.BulkString("v"), time.Hour)
	}
	check("after evictions")
	for i := keys - 40; i < keys; i++ { // replaces what was kept, stores what was not
		store(c, fmt.Sprint("k", i), get(i), resp.BulkString("w"), time.Hour)
	}
	check("after replacements")
	for i := 0; i < keys; i += 3 {
		c.Invalidate(fmt.Sprint("k", i))
	}
	check("after invalidations")
	c.Flush()
	check("after a flush")
	if st := c.Stats(); st.Entries != 0 {
		t.Fatalf("%d entries after a flush", st.Entries)
	}
	for i := range c.index {
		if c.index[i].Load() != nil {
			t.Fatalf("bucket %d is left after a flush", i)
		}
	}
}

// Hits are counted exactly however many goroutines count them at once: the counter's
// stripes are summed.
func TestStatsCountEveryHit(t *testing.T) {
	c := newT(t, Options{})
	args := []any{"GET", "k"}
	store(c, "k", args, resp.BulkString("v"), time.Hour)
	const goroutines, each = 16, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				if _, ok := getBG(c, "k", args); !ok {
					t.Error("miss of a stored key")
					return
				}
			}
		})
	}
	wg.Wait()
	if st := c.Stats(); st.Hits != goroutines*each || st.Misses != 0 {
		t.Fatalf("hits %d, misses %d; want %d and 0", st.Hits, st.Misses, goroutines*each)
	}
}

// BenchmarkHitParallel is the hit path of one hot key under many goroutines, without a
// source (the client's tracked connection adds its Current check).
func BenchmarkHitParallel(b *testing.B) {
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	args := []any{"GET", "bench:cached"}
	store(c, "bench:cached", args, resp.BulkString("0123456789abcdef"), time.Hour)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok, _ := c.Hit(ctx, "bench:cached", args); !ok {
				b.Error("miss")
				return
			}
		}
	})
}

// Keys are spread over the shards (and so over the index's buckets) whatever their
// length: the short ones hashed in the package, the longer ones by maphash.
func TestHashSpreadsKeys(t *testing.T) {
	c := newT(t, Options{})
	for _, format := range []string{"%d", "k%d", "key:%d", "user:%08d", "session:tok%06d", "a-much-longer-key-name:%d"} {
		var perShard [shardCount]int
		const keys = 4000
		for i := range keys {
			perShard[c.hash(fmt.Sprintf(format, i))%shardCount]++
		}
		for s, n := range perShard {
			// 250 expected; the bounds are over 7 standard deviations away.
			if n < 140 || n > 360 {
				t.Errorf("%q: shard %d has %d of %d keys", format, s, n, keys)
			}
		}
	}
	if c.hash("ab") == c.hash("ba") || c.hash("abc") == c.hash("abd") || c.hash("12345678") == c.hash("12345679") {
		t.Error("keys a byte apart hash alike")
	}
}

// A look under an argument that is not the entry's key misses, however the look's key
// is passed: the very string of the argument (its bytes compared once) or a copy.
func TestLookUnderAnotherArgument(t *testing.T) {
	c := newT(t, Options{})
	a, b := "a", "b"
	args := []any{"CMD", a, b} // a command whose key is its second argument, b
	store(c, b, args, resp.BulkString("v"), time.Hour)
	for _, key := range []string{a, strings.Clone(a)} {
		if _, ok := getBG(c, key, args); ok {
			t.Errorf("hit under %q, the entry's key is %q", key, b)
		}
	}
	for _, key := range []string{b, strings.Clone(b)} {
		if _, ok := getBG(c, key, args); !ok {
			t.Errorf("miss under the key %q", key)
		}
	}
	// With a key prefix, the entry's key is the text of no argument.
	store(c, "p:"+b, args, resp.BulkString("w"), time.Hour)
	if v, ok := getBG(c, "p:"+b, args); !ok || v.String() != resp.BulkString("w").String() {
		t.Errorf("under the prefixed key: %s, %v", v, ok)
	}
	if v, _ := getBG(c, b, args); v.String() != resp.BulkString("v").String() {
		t.Errorf("under the key without the prefix: %s", v)
	}
}

// Hits read the index without a lock while writers store, replace, evict, invalidate
// and flush: a hit that starts after a store of its command has returned never finds an
// older reply, whether the older one was replaced in place or invalidated. Keys have
// several entries each (HGET of a few fields), so buckets are appended to and
// compacted; the bounds are small, so stores evict now and then. Run it with -race: the
// lists readers hold are never written.
func TestHitsRaceWithWrites(t *testing.T) {
	c := newT(t, Options{MaxEntries: 5 * shardCount})
	const (
		keys, fields = 24, 4
		rounds       = 300
	)
	key := func(k int) string { return fmt.Sprint("k", k) }
	hget := func(k, f int) []any { return []any{"HGET", key(k), fmt.Sprint("f", f)} }
	// floor[k][f] is the version last stored: no hit that starts after it was set
	// finds an older one.
	var floor [keys][fields]atomic.Int64
	put := func(k, f int, v int64) {
		if store(c, key(k), hget(k, f), resp.Integer(v), time.Hour) {
			floor[k][f].Store(v)
		}
	}
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			for v := int64(1); v <= rounds; v++ {
				for f := range fields {
					put(k, f, 4*v)
				}
				for f := range 2 { // replaced in place: the older stays listed
					put(k, f, 4*v+1)
				}
				if v%2 == 0 {
					c.Invalidate(key(k))
				}
				if k == 0 && v%100 == 0 {
					c.Flush()
				}
			}
			for f := range fields { // left for the last check, evicting some
				put(k, f, 4*rounds+4)
			}
		})
	}
	stale := atomic.Int64{}
	for r := range 4 {
		wg.Go(func() {
			for i := 0; i < rounds*keys; i++ {
				k, f := (i*7+r)%keys, i%fields
				min := floor[k][f].Load()
				v, ok := getBG(c, key(k), hget(k, f))
				if n, _ := v.Int(); ok && n < min {
					stale.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := stale.Load(); n > 0 {
		t.Fatalf("%d hits found a reply older than one stored before they started", n)
	}
	var live int64
	for k := range keys {
		for f := range fields {
			if _, ok := getBG(c, key(k), hget(k, f)); ok {
				live++
			}
		}
	}
	if st := c.Stats(); live != st.Entries {
		t.Fatalf("%d entries found by hits, %d kept by the shards", live, st.Entries)
	}
}
