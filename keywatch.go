package respire

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// KeyWatch is a one-shot watch of one key, armed by WatchKey or WatchKeyInTurn: its
// Done channel is closed by the first change the server reports for the key. It is how
// waiters (a lock waiting for its key to be released, say) sleep without polling. A
// KeyWatch is safe for concurrent use.
type KeyWatch struct {
	key    string     // as the server names it: with the client's key prefix
	cn     *conn.Conn // the tracked connection that carries the key's invalidation
	reg    *keyWatches
	done   chan struct{}
	inTurn bool // armed by WatchKeyInTurn: queued behind the key's other waiters
	exists bool
	ttl    time.Duration

	// Guarded by reg.mu.
	armed bool // registered: a report of the key can still fire it
	fired bool
	turn  bool // fired as the head of its key's queue, and the turn is not passed on yet
}

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
	return c.watchKey(ctx, key, false, nil)
}

// WatchKeyInTurn is WatchKey for goroutines of this client that wait for the same key
// and would all do the same thing when it changes (try to take a lock): the watches
// armed in turn for a key form a queue, and a report of the key wakes only the first,
// so one change costs one waiter's round trip rather than every waiter's. A woken
// watch owes the others a look: its goroutine either arms its next watch with
// WatchKeyInTurn, passing the woken one as prev (the read tracks the key again, for
// everyone, and prev is retired without waking anyone), or stops it, which wakes the
// next in the queue. A new watch takes prev's place in the queue when prev was still
// waiting there, so a goroutine that looks again keeps its turn. Watches armed by
// WatchKey are not queued: every report wakes them all. A lost connection or a
// flush wakes every watch.
//
// prev may be nil, and should be a watch of the same key (one of another key is
// stopped). prev is retired only when the new watch was armed; after an error the
// caller still holds prev and must Stop it.
func (c *Client) WatchKeyInTurn(ctx context.Context, key string, prev *KeyWatch) (*KeyWatch, error) {
	return c.watchKey(ctx, key, true, prev)
}

func (c *Client) watchKey(ctx context.Context, key string, inTurn bool, prev *KeyWatch) (*KeyWatch, error) {
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
	// Whether prev's turn came before this read was sent: only then does the read
	// answer for the change that woke it. A turn that comes while the read is on its
	// way may be for a later change, which the others must hear of.
	turnBefore := prev != nil && c.tracking.keys.hasTurn(prev)
	var prefixKeys [][]int
	if c.prefix != "" {
		prefixKeys = [][]int{nil, {1}}
	}
	for redirected := false; ; redirected = true {
		cn, err := c.tracking.conn(ctx, slot)
		if err != nil {
			return nil, err
		}
		w := &KeyWatch{key: c.prefix + key, cn: cn, reg: &c.tracking.keys, done: make(chan struct{}), inTurn: inTurn}
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
		if ms >= 0 {
			// Under a millisecond left reads as 0: the key still ends, and the
			// fallback timer must still be armed for a push that is lost.
			w.ttl = max(time.Duration(ms)*time.Millisecond, time.Millisecond)
		}
		if prev != nil {
			w.reg.succeed(prev, w, turnBefore)
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

// Stop ends the watch; it is safe to call more than once and after Done closed. A
// watch armed in turn that was woken as the first of its queue passes the wake to the
// next (see WatchKeyInTurn).
func (w *KeyWatch) Stop() { w.reg.stop(w) }

// keyWatches are the armed watches of a client's tracked connections, by key as the
// server names it. The zero value is ready to use. Its methods are called on tracked
// connections' readers (fire, fireAll, connLost), so they only close channels.
type keyWatches struct {
	n  atomic.Int64 // armed watches: lets invalidations skip the lock when there are none
	mu sync.Mutex
	by map[string]*keyWaiters
}

// keyWaiters are the armed watches of one key.
type keyWaiters struct {
	all   map[*KeyWatch]struct{} // armed by WatchKey: every report wakes them
	queue []*KeyWatch            // armed in turn, first in first: a report wakes the head
}

func (r *keyWatches) add(w *KeyWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string]*keyWaiters{}
	}
	kw := r.by[w.key]
	if kw == nil {
		kw = &keyWaiters{all: map[*KeyWatch]struct{}{}}
		r.by[w.key] = kw
	}
	if w.inTurn {
		kw.queue = append(kw.queue, w)
	} else {
		kw.all[w] = struct{}{}
	}
	w.armed = true
	r.n.Add(1)
}

// unlinkLocked takes w out of the registry.
func (r *keyWatches) unlinkLocked(w *KeyWatch) {
	if !w.armed {
		return
	}
	w.armed = false
	r.n.Add(-1)
	kw := r.by[w.key]
	if w.inTurn {
		if i := slices.Index(kw.queue, w); i >= 0 {
			kw.queue = slices.Delete(kw.queue, i, i+1)
		}
	} else {
		delete(kw.all, w)
	}
	if len(kw.all) == 0 && len(kw.queue) == 0 {
		delete(r.by, w.key)
	}
}

func (r *keyWatches) fireLocked(w *KeyWatch) {
	r.unlinkLocked(w)
	if !w.fired {
		w.fired = true
		close(w.done)
	}
}

// wakeHeadLocked fires the first watch queued for key, which then owes the others a
// look (its turn).
func (r *keyWatches) wakeHeadLocked(key string) {
	if kw := r.by[key]; kw != nil && len(kw.queue) > 0 {
		head := kw.queue[0]
		head.turn = true
		r.fireLocked(head)
	}
}

func (r *keyWatches) stop(w *KeyWatch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unlinkLocked(w)
	if w.turn {
		// Woken and gone without reading the key again: the server no longer tracks it
		// for this client, so the next waiter must look.
		w.turn = false
		r.wakeHeadLocked(w.key)
	}
}

func (r *keyWatches) hasTurn(w *KeyWatch) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return w.turn
}

// succeed retires prev now that next, of the same goroutine, has read the key again
// (which tracks it again for every waiter): prev wakes no one if its turn came before
// the read was sent (turnBefore), and next takes its place in the queue if it was
// still waiting there. A turn that came since may be for a change after the read: it
// goes on to the next waiter.
func (r *keyWatches) succeed(prev, next *KeyWatch, turnBefore bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev.turn && (!turnBefore || prev.key != next.key) {
		// Nothing answers for prev's change: it goes on to prev's next waiter.
		prev.turn = false
		r.unlinkLocked(prev)
		r.wakeHeadLocked(prev.key)
		return
	}
	prev.turn = false
	if prev.armed && prev.inTurn && next.armed && next.inTurn && prev.key == next.key {
		q := r.by[prev.key].queue
		i, j := slices.Index(q, prev), slices.Index(q, next)
		if i >= 0 && j > i {
			// next moves up to prev's place, the ones between move down one, and prev,
			// now right after next, is unlinked below.
			copy(q[i+1:j+1], q[i:j])
			q[i] = next
		}
	}
	r.unlinkLocked(prev)
}

// fire wakes the watches of key: the server reported it changed.
func (r *keyWatches) fire(key string) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kw := r.by[key]
	if kw == nil {
		return
	}
	for w := range kw.all {
		r.fireLocked(w)
	}
	r.wakeHeadLocked(key)
}

// fireAll wakes every watch: the server flushed what the client tracked.
func (r *keyWatches) fireAll() { r.fireCarriedBy(nil) }

// connLost wakes the watches carried by cn: their reports would have come on it.
func (r *keyWatches) connLost(cn *conn.Conn) { r.fireCarriedBy(cn) }

// fireCarriedBy wakes the watches carried by cn, or every watch when cn is nil. Queued
// watches wake too, all of them: each looks again for itself.
func (r *keyWatches) fireCarriedBy(cn *conn.Conn) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kw := range r.by {
		for w := range kw.all {
			if cn == nil || w.cn == cn {
				r.fireLocked(w)
			}
		}
		for _, w := range slices.Clone(kw.queue) {
			if cn == nil || w.cn == cn {
				r.fireLocked(w)
			}
		}
	}
}
