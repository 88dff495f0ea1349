package respire

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// KeyWatch is a one-shot watch of one key, armed by WatchKey: its Done channel is
// closed by the first change the server reports for the key. It is how waiters (a lock
// waiting for its key to be released, say) sleep without polling. A KeyWatch is safe
// for concurrent use.
type KeyWatch struct {
	key    string     // as the server names it: with the client's key prefix
	cn     *conn.Conn // the tracked connection that carries the key's invalidation
	reg    *keyWatches
	done   chan struct{}
	exists bool
	ttl    time.Duration

	fired bool // guarded by reg.mu
}

// CanWatchKeys reports whether the client was made with Options.ClientSideCache, which
// WatchKey needs. WatchKey can still fail (ErrNoTracking) when the server does not
// speak RESP3 or refuses CLIENT TRACKING.
func (c *Client) CanWatchKeys() bool { return c.tracking != nil }

// WatchKey arms a watch of key (the client's key prefix is applied): its Done channel
// is closed when the server reports the key changed (written, deleted, expired,
// evicted, FLUSHALL), when the server reports that it forgot the client's tracked keys,
// or when the tracked connection that carries the reports is lost. In the same round
// trip it reads the key's remaining TTL (TTL, Exists), so a waiter can also set a timer
// for the key's expiry in case a report is lost.
//
// A watch fires once: the server forgets a key once it has reported its change, so a
// waiter that finds the key still taken after a wake must call WatchKey again to be
// told of the next change. Done may also close for a change that made no difference
// (a rewrite, another key's flush): treat a wake as "look again", not as "it is free".
//
// It uses the client-side cache's tracked connections (RESP3, CLIENT TRACKING ON
// OPTIN; the key is tracked by a read of its TTL) and returns ErrNoCache on a client
// made without Options.ClientSideCache, and an error matching ErrNoTracking when the
// server does not track keys. Call Stop when the watch is no longer needed.
func (c *Client) WatchKey(ctx context.Context, key string) (*KeyWatch, error) {
	if c.tracking == nil {
		return nil, ErrNoCache
	}
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if key == "" {
		return nil, fmt.Errorf("%w: WatchKey of an empty key", ErrInvalidArg)
	}
	slot := c.keySlot(key)
	var prefixKeys [][]int
	if c.prefix != "" {
		prefixKeys = [][]int{nil, {1}}
	}
	for redirected := false; ; redirected = true {
		cn, err := c.tracking.conn(ctx, slot)
		if err != nil {
			return nil, err
		}
		w := &KeyWatch{key: c.prefix + key, cn: cn, reg: &c.tracking.keys, done: make(chan struct{})}
		// Registered before the read is sent, so no report that follows it can be missed.
		w.reg.add(w)
		res, err := cn.DoMultiWith(ctx, c.prefix, prefixKeys,
			[]any{"CLIENT", "CACHING", "YES"}, []any{"PTTL", key})
		if err != nil {
			w.Stop()
			return nil, err
		}
		if resp.HasCode(res[1].Err, "MOVED") || resp.HasCode(res[1].Err, "ASK") {
			w.Stop()
			if redirected {
				return nil, res[1].Err
			}
			// The slot moved: an ordinary read follows the redirection and updates the
			// slot table, so the next try tracks the key on the node serving it now.
			if _, err := c.Do(ctx, "PTTL", key); err != nil {
				return nil, err
			}
			continue
		}
		if res[0].Err != nil {
			w.Stop()
			return nil, fmt.Errorf("%w: CLIENT CACHING: %w", ErrNoTracking, res[0].Err)
		}
		ms, err := res[1].Value.Int()
		if err == nil {
			err = res[1].Err
		}
		if err != nil {
			w.Stop()
			return nil, err
		}
		w.exists = ms != -2
		if ms > 0 {
			w.ttl = time.Duration(ms) * time.Millisecond
		}
		return w, nil
	}
}

// Done returns the channel closed by the key's change (or the loss of what would
// report it). It is never closed after Stop unless the change came first.
func (w *KeyWatch) Done() <-chan struct{} { return w.done }

// Exists reports whether the key existed when the watch was armed.
func (w *KeyWatch) Exists() bool { return w.exists }

// TTL returns the key's remaining TTL when the watch was armed; 0 when it had none or
// did not exist.
func (w *KeyWatch) TTL() time.Duration { return w.ttl }

// Stop ends the watch; it is safe to call more than once and after Done closed.
func (w *KeyWatch) Stop() { w.reg.remove(w) }

// keyWatches are the armed watches of a client's tracked connections, by key as the
// server names it. The zero value is ready to use. Its methods are called on tracked
// connections' readers (fire, fireAll), so they only close channels.
type keyWatches struct {
	n  atomic.Int64 // armed watches: lets invalidations skip the lock when there are none
	mu sync.Mutex
	by map[string]map[*KeyWatch]struct{}
}

func (r *keyWatches) add(w *KeyWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]map[*KeyWatch]struct{}{}
	}
	set := r.by[w.key]
	if set == nil {
		set = map[*KeyWatch]struct{}{}
		r.by[w.key] = set
	}
	set[w] = struct{}{}
	r.n.Add(1)
}

func (r *keyWatches) remove(w *KeyWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if set, ok := r.by[w.key]; ok {
		if _, ok := set[w]; ok {
			r.dropLocked(w, set)
		}
	}
}

func (r *keyWatches) dropLocked(w *KeyWatch, set map[*KeyWatch]struct{}) {
	delete(set, w)
	if len(set) == 0 {
		delete(r.by, w.key)
	}
	r.n.Add(-1)
}

func (r *keyWatches) fireLocked(w *KeyWatch, set map[*KeyWatch]struct{}) {
	r.dropLocked(w, set)
	if !w.fired {
		w.fired = true
		close(w.done)
	}
}

// fire wakes the watches of key: the server reported it changed.
func (r *keyWatches) fire(key string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.by[key]
	for w := range set {
		r.fireLocked(w, set)
	}
}

// fireAll wakes every watch: the server flushed what the client tracked.
func (r *keyWatches) fireAll() { r.fireCarriedBy(nil) }

// connLost wakes the watches carried by cn: their reports would have come on it.
func (r *keyWatches) connLost(cn *conn.Conn) { r.fireCarriedBy(cn) }

// fireCarriedBy wakes the watches carried by cn, or every watch when cn is nil.
func (r *keyWatches) fireCarriedBy(cn *conn.Conn) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, set := range r.by {
		for w := range set {
			if cn == nil || w.cn == cn {
				r.fireLocked(w, set)
			}
		}
	}
}

// Wait blocks until the key changes (Done), its TTL as read when the watch was armed
// runs out (the fallback for a lost report: a key past its TTL is gone for every
// command, even before the server deletes it), limit passes when it is positive, or
// ctx ends, whose cause it returns. It returns at once for a key that did not exist
// when the watch was armed.
func (w *KeyWatch) Wait(ctx context.Context, limit time.Duration) error {
	if !w.exists {
		return nil
	}
	d := w.ttl
	if limit > 0 && (d == 0 || limit < d) {
		d = limit
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.done:
	case <-timeout:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}
