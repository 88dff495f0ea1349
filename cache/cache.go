package cache

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/mono"
	"github.com/respire/respire/resp"
)

// Options bounds a cache. The zero value gives the defaults.
type Options struct {
	// MaxEntries is the most replies kept; default 10,000. The cache is split in 16
	// shards that each keep their share, so at least 16 are kept.
	MaxEntries int
	// MaxBytes is the most memory kept, counted as the size of the arguments and
	// of the reply; default 64 MiB.
	MaxBytes int64
}

const (
	defaultMaxEntries = 10_000
	defaultMaxBytes   = 64 << 20
	shardCount        = 16 // a power of two: a key's shard is the low bits of its hash
	// evictionSample is how many entries an eviction looks at to find the least
	// recently used, as Redis does for its own LRU: close to exact, and constant time.
	evictionSample = 5
)

// ErrInvalidOptions is matched by the error of New for negative bounds.
var ErrInvalidOptions = errors.New("cache: invalid options")

// Stats are a cache's counters since it was made.
type Stats struct {
	Hits, Misses  int64
	Stored        int64 // replies stored
	Discarded     int64 // replies not stored because an invalidation or flush raced them
	Invalidations int64 // keys invalidated by the server
	Flushes       int64 // whole-cache flushes (connection loss, FLUSHALL, failover)
	Evictions     int64 // entries dropped to stay within the bounds
	Entries       int64 // entries now
	Bytes         int64 // bytes now
}

// Cache holds replies of read commands by key. It is safe for concurrent use.
type Cache struct {
	shards [shardCount]shard
	// index is what hits read, without a lock: the live entries by their key's hash,
	// in buckets that are immutable lists, replaced whole by whoever changes them. A
	// read lock would have every hit write the shard's lock word, a cache line that
	// all cores then pass around. The index has at least as many buckets as shards
	// and a power of two of them, so a bucket's keys are all of one shard, whose lock
	// its writers hold.
	index         []atomic.Pointer[bucket]
	seed          maphash.Seed
	shortSeed     [3]uint64 // hash's own, for short keys
	maxPerShard   int
	bytesPerShard int64

	_ [64]byte // keeps the fields every hit reads off the lines the stripes below write
	// hits is counted on every hit, by every goroutine: striped, so hits on one hot key
	// do not all write one cache line.
	hits                                                         stripedCounter
	misses, stored, discarded, invalidations, flushes, evictions atomic.Int64
}

// stripedCounter is a counter that many goroutines add to at once: each add goes to a
// stripe of its own cache line, and a load sums them.
type stripedCounter struct {
	stripes [counterStripes]struct {
		n atomic.Int64
		_ [56]byte // the rest of a 64-byte line
	}
}

const (
	counterStripesLog2 = 3
	counterStripes     = 1 << counterStripesLog2
)

// add counts one on the calling goroutine's stripe, picked by hashing the address of
// its stack: the same stripe for every add of a goroutine, so a goroutine's adds in a
// row find the line where its last add left it, and 64 goroutines spread over all the
// stripes. A stripe picked anew for each add (at random) had every add of every
// goroutine fetch a line another core wrote last, nearly every time.
func (s *stripedCounter) add() {
	var here byte
	at := uint64(uintptr(unsafe.Pointer(&here)))
	s.stripes[(at*0x9e3779b97f4a7c15)>>(64-counterStripesLog2)].n.Add(1)
}

func (s *stripedCounter) load() int64 {
	var n int64
	for i := range s.stripes {
		n += s.stripes[i].n.Load()
	}
	return n
}

// shard is one sixteenth of the keys, under its own lock.
type shard struct {
	mu      sync.RWMutex
	keys    map[string]*keyEntries
	pending map[string][]*Ticket // reads in flight, by key
	count   int
	bytes   int64
}

// keyEntries are the cached replies of the commands that read one key (GET k and
// HGET k f are two entries of k).
type keyEntries struct {
	entries []*entry
}

// bucket is one of the index's lists of entries, never changed once published
// (republishLocked).
type bucket struct {
	entries []*entry
	dead    int // how many of entries are marked removed
}

type entry struct {
	key  string // as the server names it; the map key of its shard
	hash uint64 // of key (Cache.hash)
	// keyArg is the index of the argument whose text is key (a key without a prefix),
	// or -1.
	keyArg int
	args   []string // the command, name upper-cased, key included
	value  resp.Value
	src    Source // whose invalidations keep it current; nil for none
	// removed is set, under the shard's lock, when the entry leaves the cache
	// (invalidation, flush, eviction, replacement). A hit checks it after its source
	// says it is current: the invalidation that removed it was applied before the
	// source caught up, so a reader that found the entry just before is told.
	removed atomic.Bool
	expires int64 // nanotime
	size    int64
	used    atomic.Int64 // nanotime of the last hit, for eviction
}

// Ticket is a read in flight: taken before the command is sent, it is what makes a
// reply safe to store. An invalidation or flush that arrives while the read is in
// flight voids it, because the reply may be older than the change.
type Ticket struct {
	key   string
	src   Source
	valid bool // under the shard's lock
}

// Source is the stream of invalidations that keeps an entry current: the tracked
// connection that read it. Invalidations are applied as that connection's reader gets
// to them, which can be later than they arrive (conn.Conn.CatchUp says why), so a hit
// is served only while its source has caught up recently, and otherwise catches it up.
type Source interface {
	// Current reports, without I/O or waiting, whether the invalidations that reached
	// the client a short while before now have all been applied. now is the hit's
	// reading of the module's monotonic clock (nanoseconds; internal/mono), taken once
	// for the entry's expiry and for this: a clock reading is a fair share of a hit.
	// The client's tracked connections are the Sources; outside this module now is an
	// opaque instant, comparable only with the readings the cache hands on.
	Current(now int64) bool
	// CatchUp returns once every invalidation that had reached the client when it was
	// called has been applied, applying them on the caller's goroutine where it can
	// (the entries they remove are marked removed before it returns). An error other
	// than ctx's says it never will be: the connection is lost, and the entries it
	// protected are about to be flushed.
	CatchUp(ctx context.Context) error
}

// New returns an empty cache with the bounds of o.
func New(o Options) (*Cache, error) {
	switch {
	case o.MaxEntries < 0:
		return nil, fmt.Errorf("%w: MaxEntries %d is negative", ErrInvalidOptions, o.MaxEntries)
	case o.MaxBytes < 0:
		return nil, fmt.Errorf("%w: MaxBytes %d is negative", ErrInvalidOptions, o.MaxBytes)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = defaultMaxEntries
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = defaultMaxBytes
	}
	c := &Cache{
		seed:          maphash.MakeSeed(),
		shortSeed:     [3]uint64{rand.Uint64(), rand.Uint64(), rand.Uint64()},
		maxPerShard:   max(1, o.MaxEntries/shardCount),
		bytesPerShard: max(1, o.MaxBytes/shardCount),
	}
	for i := range c.shards {
		c.shards[i].keys = map[string]*keyEntries{}
		c.shards[i].pending = map[string][]*Ticket{}
	}
	// At least one bucket per entry, up to a million buckets (8 MiB of index): past
	// that, buckets hold a few entries each.
	buckets := 1 << min(maxIndexLog2, max(bits.Len(uint(o.MaxEntries-1)), bits.Len(shardCount-1)))
	c.index = make([]atomic.Pointer[bucket], buckets)
	return c, nil
}

// maxIndexLog2 bounds the index at 2^20 buckets.
const maxIndexLog2 = 20

// A key's shard is the low bits of its hash, which its index bucket's number keeps
// only while shardCount is a power of two: otherwise this fails to compile.
var _ [0]struct{} = [shardCount & (shardCount - 1)]struct{}{}

// hash is key's hash under the cache's seeds, random per cache so that keys chosen to
// collide (the keys of a cache are often an application's users' input) cannot be
// computed ahead of time. A key of up to 16 bytes, the usual, is
// hashed here, with wyhash's mixing of two words read off it (overlapping when it is
// shorter than 16 bytes): a hit computes one hash, and maphash's call into the
// runtime's costs a fair share of it. Longer keys go through maphash.
func (c *Cache) hash(key string) uint64 {
	n := len(key)
	if n == 0 || n > 16 {
		return maphash.String(c.seed, key)
	}
	b := unsafe.Slice(unsafe.StringData(key), n) // read only
	var lo, hi uint64
	switch {
	case n >= 8:
		lo, hi = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	case n >= 4:
		lo, hi = uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[n-4:]))
	default:
		lo = uint64(b[0])<<16 | uint64(b[n>>1])<<8 | uint64(b[n-1])
	}
	return mix(mix(lo^c.shortSeed[0], hi^c.shortSeed[1])^uint64(n), c.shortSeed[2])
}

// mix folds the 128-bit product of a and b into 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// shardOf is the shard of the keys of hash h, whose lock the writers of their bucket
// of the index hold.
func (c *Cache) shardOf(h uint64) *shard { return &c.shards[h%shardCount] }

func (c *Cache) shard(key string) *shard { return c.shardOf(c.hash(key)) }

// republishLocked publishes the index's bucket of hash h after a change of its
// entries: with add at its end if not nil, and, once entries marked removed are half
// of it or more, without them. gone is how many of its entries the caller has marked
// removed since the last publish; the caller holds the bucket's shard's lock. Adding is
// amortized constant time: an entry is appended to the published list's array, past
// its end, where no reader of a published bucket reads (every bucket that shares the
// array is at most as long as the latest), and a list is copied only to leave out
// removed entries, which are then as many as the live ones. Copying the whole list on
// every change made filling one key's many entries (HGET of each field) quadratic.
func (c *Cache) republishLocked(h uint64, add *entry, gone int) {
	slot := &c.index[h&uint64(len(c.index)-1)]
	var entries []*entry
	dead := gone
	if old := slot.Load(); old != nil {
		entries, dead = old.entries, old.dead+gone
	}
	if dead > 0 && 2*dead >= len(entries) {
		live := make([]*entry, 0, max(len(entries)-dead, 0)+1)
		for _, e := range entries {
			if !e.removed.Load() {
				live = append(live, e)
			}
		}
		entries, dead = live, 0
	}
	if add != nil {
		entries = append(entries, add)
	}
	if len(entries) == 0 {
		slot.Store(nil)
		return
	}
	slot.Store(&bucket{entries: entries, dead: dead})
}

// nanotime is the module's monotonic clock in nanoseconds, whose readings a Source
// compares with its own.
func nanotime() int64 { return mono.Now() }

// Get returns the cached reply of the command args, whose key is key (as the server
// names it: with any key prefix), once the entry's source has caught up: an
// invalidation that has reached the client is never answered with the reply it
// removes. When the source is behind, Get waits for it; the error is then ctx's,
// when ctx ends first. It does not allocate.
func (c *Cache) Get(ctx context.Context, key string, args []any) (resp.Value, bool, error) {
	v, ok, err := c.Hit(ctx, key, args)
	if !ok && err == nil {
		c.misses.Add(1)
	}
	return v, ok, err
}

// CountMiss counts a miss that Hit found without Get: a caller that looked with Hit
// first, under what turned out to be the command's key, counts its miss with this.
func (c *Cache) CountMiss() { c.misses.Add(1) }

// Hit is Get without counting a miss: for a look under what may not be the command's
// key, which a caller makes before it knows the key's position.
func (c *Cache) Hit(ctx context.Context, key string, args []any) (resp.Value, bool, error) {
	// Two looks at most: one that may find the source behind and catch it up, and one
	// after that, which finds what the catch-up left (possibly another entry, from
	// another source, which is checked in turn).
	// A source that has just caught up for this call is current as of the catch-up's
	// start, which came after the call began: its entry is served if the catch-up left
	// it, however long the catch-up took (asking Current again would send a caller
	// that waited longer than the lag bound to the server).
	var caughtUp Source
	for range 2 {
		e, now := c.lookup(key, args)
		if e == nil {
			break
		}
		if e.src != nil && e.src != caughtUp && !e.src.Current(now) {
			if err := e.src.CatchUp(ctx); err != nil {
				if ctx.Err() != nil {
					return resp.Value{}, false, err
				}
				break // the source is lost, its invalidations with it
			}
			caughtUp = e.src
			continue
		}
		if e.removed.Load() {
			continue // invalidated between the lookup and the check of its source
		}
		c.hits.add()
		return e.value, true, nil
	}
	return resp.Value{}, false, nil
}

// lookup finds the live entry of args and marks it used; its value never changes. It
// returns the clock reading it was found live at, for the check of its source.
//
// It reads the index without a lock, so the entry it finds may be removed a moment
// later, or may have been as it looked: Hit checks removed after its source says it is
// current, which is what keeps a hit coherent, lock or not.
func (c *Cache) lookup(key string, args []any) (*entry, int64) {
	h := c.hash(key)
	now := nanotime()
	if b := c.index[h&uint64(len(c.index)-1)].Load(); b != nil {
		for _, e := range b.entries {
			if e.hash == h && now < e.expires && !e.removed.Load() && e.matchesKey(args, key) {
				if e.used.Load() < now-int64(time.Millisecond) {
					e.used.Store(now) // at most once a millisecond: hot entries stay cheap
				}
				return e, now
			}
		}
	}
	return nil, now
}

// Reserve starts a read of key on src, the connection whose invalidations will keep the
// reply current (nil for none). The reply may be stored with the ticket unless the key
// is invalidated, or the cache flushed, before Store.
//
// Reserve, Store and Get copy what they keep: a caller's arguments do not escape, so
// the caller's interface conversions of them need not allocate.
func (c *Cache) Reserve(key string, src Source) *Ticket {
	t := &Ticket{key: strings.Clone(key), src: src, valid: true}
	s := c.shard(key)
	s.mu.Lock()
	s.pending[t.key] = append(s.pending[t.key], t)
	s.mu.Unlock()
	return t
}

// Store ends the read of t: it keeps v as the reply of args for ttl if the ticket is
// still valid, and reports whether it did. A ticket is used once; Store with ttl <= 0
// (or Cancel) only ends the read.
func (c *Cache) Store(t *Ticket, args []any, v resp.Value, ttl time.Duration) bool {
	s := c.shard(t.key)
	s.mu.Lock()
	valid := s.endReadLocked(t)
	if !valid || ttl <= 0 {
		s.mu.Unlock()
		if !valid {
			c.discarded.Add(1)
		}
		return false
	}
	e := newEntry(args, v, nanotime()+int64(ttl))
	e.key, e.hash, e.src, e.keyArg = t.key, c.hash(t.key), t.src, -1
	for i := 1; i < len(e.args); i++ {
		if e.args[i] == e.key {
			e.keyArg = i
			break
		}
	}
	ke := s.keys[t.key]
	if ke == nil {
		ke = &keyEntries{}
		s.keys[t.key] = ke
	}
	replaced := 0
	for i, old := range ke.entries {
		if old.sameArgs(e.args) {
			s.bytes += e.size - old.size
			old.removed.Store(true)
			ke.entries[i] = e
			replaced = 1
			break
		}
	}
	if replaced == 0 {
		ke.entries = append(ke.entries, e)
		s.count++
		s.bytes += e.size
	}
	c.republishLocked(e.hash, e, replaced)
	n := c.evictLocked(s, e)
	s.mu.Unlock()
	c.stored.Add(1)
	c.evictions.Add(int64(n))
	return true
}

// Cancel ends the read of t without storing anything (the read failed).
func (c *Cache) Cancel(t *Ticket) {
	s := c.shard(t.key)
	s.mu.Lock()
	s.endReadLocked(t)
	s.mu.Unlock()
}

// endReadLocked removes t from the reads in flight and returns whether it was valid.
func (s *shard) endReadLocked(t *Ticket) bool {
	list := s.pending[t.key]
	for i, p := range list {
		if p == t {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.pending, t.key)
	} else {
		s.pending[t.key] = list
	}
	valid := t.valid
	t.valid = false
	return valid
}

// Invalidate drops every reply of key and voids the reads of key in flight.
func (c *Cache) Invalidate(key string) {
	h := c.hash(key)
	s := c.shardOf(h)
	s.mu.Lock()
	for _, t := range s.pending[key] {
		t.valid = false
	}
	if ke := s.keys[key]; ke != nil {
		for _, e := range ke.entries {
			e.removed.Store(true)
			s.count--
			s.bytes -= e.size
		}
		delete(s.keys, key)
		c.republishLocked(h, nil, len(ke.entries))
	}
	s.mu.Unlock()
	c.invalidations.Add(1)
}

// Flush drops everything and voids every read in flight.
func (c *Cache) Flush() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, list := range s.pending {
			for _, t := range list {
				t.valid = false
			}
		}
		for _, ke := range s.keys {
			for _, e := range ke.entries {
				e.removed.Store(true)
			}
			// Every entry of the bucket is of this shard, and removed.
			c.index[ke.entries[0].hash&uint64(len(c.index)-1)].Store(nil)
		}
		clear(s.keys)
		s.count, s.bytes = 0, 0
		s.mu.Unlock()
	}
	c.flushes.Add(1)
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	st := Stats{
		Hits: c.hits.load(), Misses: c.misses.Load(), Stored: c.stored.Load(),
		Discarded: c.discarded.Load(), Invalidations: c.invalidations.Load(),
		Flushes: c.flushes.Load(), Evictions: c.evictions.Load(),
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		st.Entries += int64(s.count)
		st.Bytes += s.bytes
		s.mu.RUnlock()
	}
	return st
}

// evictLocked drops least recently used entries of s, never keep, until s is within
// its share of the bounds. It returns how many it dropped.
func (c *Cache) evictLocked(s *shard, keep *entry) int {
	n := 0
	for s.count > c.maxPerShard || s.bytes > c.bytesPerShard {
		var (
			victimKey string
			victim    *entry
			seen      int
		)
		// Map iteration starts at a random place: the first entries are a sample.
	sample:
		for k, ke := range s.keys {
			for _, e := range ke.entries {
				if e == keep {
					continue
				}
				if victim == nil || e.used.Load() < victim.used.Load() {
					victimKey, victim = k, e
				}
				if seen++; seen == evictionSample {
					break sample
				}
			}
		}
		if victim == nil {
			return n // keep alone is over the bounds: it stays until it expires or is replaced
		}
		s.removeLocked(victimKey, victim)
		c.republishLocked(victim.hash, nil, 1)
		n++
	}
	return n
}

func (s *shard) removeLocked(key string, victim *entry) {
	ke := s.keys[key]
	for i, e := range ke.entries {
		if e == victim {
			ke.entries = append(ke.entries[:i], ke.entries[i+1:]...)
			break
		}
	}
	if len(ke.entries) == 0 {
		delete(s.keys, key)
	}
	victim.removed.Store(true)
	s.count--
	s.bytes -= victim.size
}

// entryOverhead approximates what an entry costs beyond its arguments and reply.
const entryOverhead = 96

func newEntry(args []any, v resp.Value, expires int64) *entry {
	e := &entry{args: make([]string, len(args)), value: v, expires: expires}
	e.size = entryOverhead + valueSize(v)
	for i, a := range args {
		s := strings.Clone(argText(a))
		if i == 0 {
			s = strings.ToUpper(s)
		}
		e.args[i] = s
		e.size += int64(len(s))
	}
	e.used.Store(nanotime())
	return e
}

// valueSize approximates the memory of a reply.
func valueSize(v resp.Value) int64 {
	n := int64(32)
	if s, err := v.Text(); err == nil {
		n += int64(len(s))
	}
	if elems, err := v.Array(); err == nil {
		for _, e := range elems {
			n += valueSize(e)
		}
	}
	return n
}

func (e *entry) sameArgs(args []string) bool {
	if len(args) != len(e.args) {
		return false
	}
	for i := range args {
		if args[i] != e.args[i] {
			return false
		}
	}
	return true
}

// matchesKey is matches(args) && key == e.key. When key is the very text of the
// argument the entry's key is (the look under args[1], without a prefix), the bytes
// are compared once: matching that argument proves key equal too.
func (e *entry) matchesKey(args []any, key string) bool {
	if e.keyArg > 0 && e.keyArg < len(args) {
		if s, ok := argkind.Text(args[e.keyArg]); ok && len(s) == len(key) && unsafe.StringData(s) == unsafe.StringData(key) {
			return e.matches(args)
		}
	}
	return e.key == key && e.matches(args)
}

// matches compares args with the entry's command without allocating: the name without
// regard to case, the rest byte for byte.
func (e *entry) matches(args []any) bool {
	if len(args) != len(e.args) {
		return false
	}
	for i, a := range args {
		var ok bool
		if s, text := argkind.Text(a); text {
			ok = s == e.args[i] || i == 0 && strings.EqualFold(s, e.args[i])
		} else {
			var buf [64]byte
			ok = string(appendArgText(buf[:0], a)) == e.args[i]
		}
		if !ok {
			return false
		}
	}
	return true
}

// argText is the text of an argument as the server receives it; an argument the client
// would refuse gives a text no command can carry, which matches nothing.
func argText(a any) string {
	if s, ok := argkind.Text(a); ok {
		// A view for a []byte kind (newEntry copies it); the text for the name a typed
		// command sends (*argkind.Name), as matches reads it.
		return s
	}
	return string(appendArgText(nil, a))
}

func appendArgText(dst []byte, a any) []byte {
	b, err := resp.AppendArgText(dst, 0, a)
	if err != nil {
		return append(dst, "\x00invalid"...)
	}
	return b
}

// Invalidation is what an invalidation push says.
type Invalidation struct {
	Keys []string // the keys to drop
	All  bool     // drop everything (FLUSHALL, FLUSHDB, or a server that lost its tracking table)
}

// ParseInvalidation reads a RESP3 push frame. ok is false for a push that is not an
// invalidation: ["invalidate", [key, ...]] or ["invalidate", null].
func ParseInvalidation(v resp.Value) (inv Invalidation, ok bool) {
	if v.Kind() != resp.KindPush {
		return Invalidation{}, false
	}
	elems, err := v.Array()
	if err != nil || len(elems) != 2 {
		return Invalidation{}, false
	}
	if kind, err := elems[0].Text(); err != nil || kind != "invalidate" {
		return Invalidation{}, false
	}
	if elems[1].IsNull() {
		return Invalidation{All: true}, true
	}
	keys, err := elems[1].Array()
	if err != nil {
		return Invalidation{}, false
	}
	inv.Keys = make([]string, 0, len(keys))
	for _, k := range keys {
		s, err := k.Text()
		if err != nil {
			return Invalidation{}, false
		}
		inv.Keys = append(inv.Keys, s)
	}
	return inv, true
}

// TTL returns how long a reply read with PTTL result pttl may be kept for the caller's
// ttl: the shorter of the two (a key without expiry, or a missing key, keeps ttl).
func TTL(ttl time.Duration, pttl int64) time.Duration {
	if pttl >= 0 {
		return min(ttl, time.Duration(pttl)*time.Millisecond)
	}
	return ttl
}
