package pool

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Conn is what the pool needs of a connection; *conn.Conn satisfies it. It is a type
// constraint, and includes comparable because the pool tracks each connection it has
// handed out by identity (pointer types, such as *conn.Conn, are comparable).
type Conn interface {
	comparable

	// Close closes the connection. The pool calls it once, without holding a lock.
	Close() error
	// Err returns nil while the connection is usable and the error that broke it once
	// it is not. A connection with a non-nil Err is never handed out again.
	Err() error
	// Ping checks the connection with a round trip, for Options.HealthCheckAfter.
	Ping(ctx context.Context) error
}

// Pool is a bounded pool of connections of type C. Create one with New; the zero value
// is not usable. All methods are safe for concurrent use.
type Pool[C Conn] struct {
	opts Options[C]

	mu      sync.Mutex
	closed  bool
	conns   map[C]connState // every open connection, idle or checked out
	idle    []idleConn[C]   // a stack: the most recently returned connection is last
	slots   int             // open connections plus dials in progress; at most opts.Size
	waiters waitQueue[C]
	stats   counters

	// The background goroutine, if New started one.
	wake         chan struct{}      // nudges it when idle connections fall below MinIdle; nil if MinIdle is 0
	stopMaintain context.CancelFunc // stops it and cancels its dials
	maintainDone chan struct{}      // closed when it has exited
}

// connState is what the pool knows of an open connection.
type connState struct {
	created time.Time
	idle    bool // in Pool.idle rather than checked out
}

// idleConn is a connection waiting in the pool.
type idleConn[C Conn] struct {
	c       C
	created time.Time
	since   time.Time // when it was returned or dialled
}

// New validates opts and returns a Pool. It dials nothing itself; if opts.MinIdle or
// opts.MaxIdleTime is set it starts the pool's one background goroutine, which fills
// MinIdle and reaps idle connections until Close. Errors match ErrInvalidOptions.
func New[C Conn](opts Options[C]) (*Pool[C], error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	p := &Pool[C]{
		opts:  opts,
		conns: make(map[C]connState, opts.Size),
		idle:  make([]idleConn[C], 0, opts.Size),
	}
	if opts.MinIdle > 0 || opts.MaxIdleTime > 0 {
		if opts.MinIdle > 0 {
			p.wake = make(chan struct{}, 1)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p.stopMaintain = cancel
		p.maintainDone = make(chan struct{})
		go p.maintain(ctx, opts.maintainInterval())
	}
	return p, nil
}

// Get checks out a connection: the most recently returned idle connection, or a new
// one dialled with ctx while fewer than Options.Size are open. Otherwise it waits, first
// come first served, until a connection or slot frees up. If ctx ends while it waits,
// Get returns an *ExhaustedError matching both ErrExhausted and ctx.Err(); if ctx has
// already ended when Get is called, it returns ctx.Err() as it is. After Close, Get
// returns ErrClosed. A failed dial returns Options.Dial's error as it is: it says what
// was dialled.
//
// The caller owns the connection until it passes it to Put or Discard, exactly once.
func (p *Pool[C]) Get(ctx context.Context) (C, error) {
	var zero C
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return zero, ErrClosed
		}

		if len(p.idle) > 0 {
			c, ok, err := p.takeIdleLocked(ctx)
			if ok || err != nil {
				return c, err
			}
			continue // the connection was discarded; p.mu is still held
		}

		if p.slots < p.opts.Size {
			p.slots++
			p.stats.misses++
			p.stats.dials++
			p.mu.Unlock()
			return p.dialSlot(ctx)
		}

		return p.waitObserved(ctx) // unlocks p.mu
	}
}

// waitObserved is wait, reported to Options.OnWait when set. The wait ends when the
// caller is granted a connection or a slot, so the dial a slot needs is not counted.
// It is called with p.mu held and returns with it released.
func (p *Pool[C]) waitObserved(ctx context.Context) (C, error) {
	var start time.Time
	if p.opts.OnWait != nil {
		start = time.Now()
	}
	c, dial, err := p.wait(ctx)
	if p.opts.OnWait != nil {
		p.opts.OnWait(time.Since(start), err)
	}
	if dial {
		return p.dialSlot(ctx)
	}
	return c, err
}

// takeIdleLocked takes the most recently returned idle connection for Get, unless it
// has expired or broken, or fails the health check it is due: those are closed. It
// reports ok with the connection, or an error, with p.mu unlocked; or neither, with
// p.mu still held, when the connection was discarded and Get should look again.
func (p *Pool[C]) takeIdleLocked(ctx context.Context) (c C, ok bool, err error) {
	ic := p.popIdleLocked()
	now := time.Now()
	if p.expired(ic.created, ic.since, now) || ic.c.Err() != nil {
		p.discardLocked(ic.c)
		return c, false, nil
	}
	if hc := p.opts.HealthCheckAfter; hc > 0 && now.Sub(ic.since) >= hc {
		err := p.pingLocked(ctx, ic.c)
		switch {
		case err != nil:
			// A ping abandoned by ctx leaves the connection in an unknown state, so
			// it is discarded whatever the cause.
			p.discardLocked(ic.c)
			if err := ctx.Err(); err != nil {
				p.mu.Unlock()
				return c, false, err
			}
			return c, false, nil
		case p.closed:
			// Closed during the ping: treat it as returned after Close.
			p.forgetLocked(ic.c)
			p.mu.Unlock()
			ic.c.Close()
			return c, false, ErrClosed
		}
	}
	p.stats.hits++
	p.mu.Unlock()
	return ic.c, true, nil
}

// pingLocked checks c with a PING made outside the lock; p.mu is held again on return.
func (p *Pool[C]) pingLocked(ctx context.Context, c C) error {
	p.mu.Unlock()
	defer p.mu.Lock()
	if err := c.Ping(ctx); err != nil {
		return err
	}
	return c.Err()
}

// discardLocked forgets c and closes it outside the lock; p.mu is held again on return.
func (p *Pool[C]) discardLocked(c C) {
	p.forgetLocked(c)
	p.mu.Unlock()
	c.Close()
	p.mu.Lock()
}

// wait queues the caller until it is granted a connection or a slot (true: the caller
// dials into it), the pool closes, or ctx ends. It is called with p.mu held and
// returns with it released.
func (p *Pool[C]) wait(ctx context.Context) (C, bool, error) {
	var zero C
	w := newWaiter[C]()
	p.waiters.pushBack(w)
	p.mu.Unlock()

	select {
	case g := <-w.ready:
		switch g.kind {
		case grantConn:
			p.mu.Lock()
			p.stats.hits++
			p.mu.Unlock()
			return g.conn, false, nil
		case grantDial:
			p.mu.Lock()
			if p.closed {
				p.releaseSlotLocked()
				p.mu.Unlock()
				return zero, false, ErrClosed
			}
			p.stats.misses++
			p.stats.dials++
			p.mu.Unlock()
			return zero, true, nil
		default:
			return zero, false, ErrClosed
		}

	case <-ctx.Done():
		p.mu.Lock()
		p.stats.timeouts++
		if w.queued {
			err := p.exhaustedLocked(ctx, p.waiters.len())
			p.waiters.remove(w)
			p.mu.Unlock()
			return zero, false, err
		}
		// Granted at the same moment ctx ended. The grant is already in the channel;
		// pass it on so the connection or slot is not lost.
		err := p.exhaustedLocked(ctx, p.waiters.len()+1)
		g := <-w.ready
		switch g.kind {
		case grantConn:
			p.mu.Unlock()
			p.Put(g.conn) // rechecks: the pool may have closed since
			return zero, false, err
		case grantDial:
			p.releaseSlotLocked()
			p.mu.Unlock()
			return zero, false, err
		default:
			p.mu.Unlock()
			return zero, false, ErrClosed
		}
	}
}

func (p *Pool[C]) exhaustedLocked(ctx context.Context, waiters int) *ExhaustedError {
	return &ExhaustedError{
		Size:    p.opts.Size,
		InUse:   p.slots - len(p.idle),
		Waiters: waiters,
		Err:     ctx.Err(),
	}
}

// dialSlot dials a connection into a slot the caller has already reserved, and frees
// the slot again if the dial fails.
func (p *Pool[C]) dialSlot(ctx context.Context) (C, error) {
	var zero C
	c, err := p.opts.Dial(ctx)
	p.mu.Lock()
	if err != nil {
		p.stats.dialErrors++
		p.releaseSlotLocked()
		p.mu.Unlock()
		return zero, err
	}
	if p.closed {
		p.stats.closed++
		p.releaseSlotLocked()
		p.mu.Unlock()
		c.Close()
		return zero, ErrClosed
	}
	p.conns[c] = connState{created: time.Now()}
	p.mu.Unlock()
	return c, nil
}

// Put returns a connection checked out by Get. A broken connection (Err() != nil), one
// past Options.MaxLifetime, or any connection returned after Close is closed and its
// slot freed; otherwise it goes to the longest waiting Get, or back to the pool.
//
// Put panics if c is not checked out from p, as a second Put of the same connection
// would let two callers share it.
func (p *Pool[C]) Put(c C) {
	broken := c.Err() != nil
	now := time.Now()
	p.mu.Lock()
	st := p.checkedOutLocked(c, "Put")
	if broken || p.closed || p.expired(st.created, time.Time{}, now) {
		p.forgetLocked(c)
		p.mu.Unlock()
		c.Close()
		return
	}
	p.returnLocked(c, now)
	p.mu.Unlock()
}

// Discard closes a connection checked out by Get and frees its slot, for a caller that
// knows the connection is unusable (for example, left mid-transaction or subscribed).
// Like Put, it panics if c is not checked out from p.
func (p *Pool[C]) Discard(c C) {
	p.mu.Lock()
	p.checkedOutLocked(c, "Discard")
	p.forgetLocked(c)
	p.mu.Unlock()
	c.Close()
}

// Stats returns a snapshot of the pool's counters and gauges.
func (p *Pool[C]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{
		Hits:       p.stats.hits,
		Misses:     p.stats.misses,
		Timeouts:   p.stats.timeouts,
		Dials:      p.stats.dials,
		DialErrors: p.stats.dialErrors,
		Closed:     p.stats.closed,
		Total:      len(p.conns),
		Idle:       len(p.idle),
		InUse:      len(p.conns) - len(p.idle),
		Dialing:    p.slots - len(p.conns),
		Waiters:    p.waiters.len(),
	}
}

// Close closes the idle connections, fails waiting and later Gets with ErrClosed, and
// stops the background goroutine, waiting for it to exit. Connections checked out are
// closed when they are returned. Close returns the errors from closing idle
// connections, joined; calling it again returns nil.
func (p *Pool[C]) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.waitMaintainer()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, ic := range idle {
		delete(p.conns, ic.c)
		p.slots--
		p.stats.closed++
	}
	for w := p.waiters.popFront(); w != nil; w = p.waiters.popFront() {
		w.ready <- grant[C]{kind: grantClosed}
	}
	p.mu.Unlock()

	if p.stopMaintain != nil {
		p.stopMaintain()
	}
	var errs []error
	for _, ic := range idle {
		if err := ic.c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	p.waitMaintainer()
	return errors.Join(errs...)
}

func (p *Pool[C]) waitMaintainer() {
	if p.maintainDone != nil {
		<-p.maintainDone
	}
}

// popIdleLocked takes the most recently returned idle connection and marks it checked
// out. If that leaves fewer than MinIdle idle, it nudges the background goroutine.
func (p *Pool[C]) popIdleLocked() idleConn[C] {
	n := len(p.idle) - 1
	ic := p.idle[n]
	p.idle[n] = idleConn[C]{} // drop the reference
	p.idle = p.idle[:n]
	p.conns[ic.c] = connState{created: ic.created}
	if n < p.opts.MinIdle {
		select {
		case p.wake <- struct{}{}:
		default: // already nudged
		}
	}
	return ic
}

// returnLocked gives a healthy connection, which must be checked out, to the longest
// waiting Get, or else pushes it onto the idle stack.
func (p *Pool[C]) returnLocked(c C, now time.Time) {
	if w := p.waiters.popFront(); w != nil {
		w.ready <- grant[C]{kind: grantConn, conn: c}
		return
	}
	st := p.conns[c]
	st.idle = true
	p.conns[c] = st
	p.idle = append(p.idle, idleConn[C]{c: c, created: st.created, since: now})
}

// forgetLocked drops a checked-out connection the caller is about to close, and frees
// its slot.
func (p *Pool[C]) forgetLocked(c C) {
	delete(p.conns, c)
	p.stats.closed++
	p.releaseSlotLocked()
}

// releaseSlotLocked frees a slot. If a Get is waiting, the slot passes straight to it
// and it dials; the slot count is unchanged.
func (p *Pool[C]) releaseSlotLocked() {
	if w := p.waiters.popFront(); w != nil {
		w.ready <- grant[C]{kind: grantDial}
		return
	}
	p.slots--
}

// checkedOutLocked returns c's state, panicking if c is not checked out from p.
func (p *Pool[C]) checkedOutLocked(c C, op string) connState {
	st, ok := p.conns[c]
	if !ok || st.idle {
		p.mu.Unlock()
		panic("pool: " + op + " of a connection that is not checked out from this pool")
	}
	return st
}

// expired reports whether a connection created at created, and idle since since (zero
// if checked out), is past MaxLifetime or MaxIdleTime at now.
func (p *Pool[C]) expired(created, since, now time.Time) bool {
	if d := p.opts.MaxLifetime; d > 0 && now.Sub(created) >= d {
		return true
	}
	if d := p.opts.MaxIdleTime; d > 0 && !since.IsZero() && now.Sub(since) >= d {
		return true
	}
	return false
}
