package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeConn is a Conn whose health the test controls.
type fakeConn struct {
	id     int
	closes atomic.Int32 // calls to Close
	pings  atomic.Int32 // calls to Ping

	mu       sync.Mutex
	err      error                           // returned by Err
	pingErr  error                           // returned by Ping
	closeErr error                           // returned by Close
	pingHook func(ctx context.Context) error // if set, Ping returns its result
}

func (c *fakeConn) Close() error {
	c.closes.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

func (c *fakeConn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *fakeConn) Ping(ctx context.Context) error {
	c.pings.Add(1)
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	hook, err := c.pingHook, c.pingErr
	c.mu.Unlock()
	if hook != nil {
		return hook(ctx)
	}
	return err
}

func (c *fakeConn) setErr(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

func (c *fakeConn) setPingErr(err error) {
	c.mu.Lock()
	c.pingErr = err
	c.mu.Unlock()
}

func (c *fakeConn) setPingHook(h func(ctx context.Context) error) {
	c.mu.Lock()
	c.pingHook = h
	c.mu.Unlock()
}

func (c *fakeConn) closed() bool { return c.closes.Load() > 0 }

// fakeDialer hands out numbered fakeConns. If hook is set it runs first, with the
// dial's number (from 1), and an error from it fails the dial.
type fakeDialer struct {
	mu    sync.Mutex
	conns []*fakeConn
	hook  func(ctx context.Context, n int) error
	calls int
}

func (d *fakeDialer) Dial(ctx context.Context) (*fakeConn, error) {
	d.mu.Lock()
	d.calls++
	n, hook := d.calls, d.hook
	d.mu.Unlock()
	if hook != nil {
		if err := hook(ctx, n); err != nil {
			return nil, err
		}
	}
	c := &fakeConn{id: n}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

func (d *fakeDialer) setHook(h func(ctx context.Context, n int) error) {
	d.mu.Lock()
	d.hook = h
	d.mu.Unlock()
}

// dialed returns every connection dialled so far.
func (d *fakeDialer) dialed() []*fakeConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*fakeConn(nil), d.conns...)
}

var errDial = errors.New("dial refused")

// newTestPool returns a pool dialling through a fresh fakeDialer, closed when the test
// ends. opts.Dial is filled in.
func newTestPool(t *testing.T, opts Options[*fakeConn]) (*Pool[*fakeConn], *fakeDialer) {
	t.Helper()
	d := &fakeDialer{}
	return newTestPoolOn(t, opts, d), d
}

// newTestPoolOn is newTestPool dialling with d, whose hook a test sets first when the
// pool dials as it starts (MinIdle): set after New, it would race the first dials.
func newTestPoolOn(t *testing.T, opts Options[*fakeConn], d *fakeDialer) *Pool[*fakeConn] {
	t.Helper()
	opts.Dial = d.Dial
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		p.Close()
		checkInvariants(t, p)
	})
	return p
}

// checkInvariants checks the pool's bookkeeping. Call it only when no Get, Put or dial
// is in flight.
func checkInvariants(t *testing.T, p *Pool[*fakeConn]) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.slots != len(p.conns) {
		t.Errorf("slots = %d, open connections = %d: a slot leaked", p.slots, len(p.conns))
	}
	if p.slots > p.opts.Size {
		t.Errorf("slots = %d > Size %d", p.slots, p.opts.Size)
	}
	idle := 0
	for c, st := range p.conns {
		if st.idle {
			idle++
		}
		if c.closed() {
			t.Errorf("conn %d is tracked as open but was closed", c.id)
		}
	}
	if idle != len(p.idle) {
		t.Errorf("%d connections marked idle, idle stack holds %d", idle, len(p.idle))
	}
	for _, ic := range p.idle {
		if st, ok := p.conns[ic.c]; !ok || !st.idle {
			t.Errorf("idle conn %d not tracked as idle", ic.c.id)
		}
	}
	if p.waiters.len() > 0 && len(p.idle) > 0 {
		t.Errorf("%d waiters while %d connections idle", p.waiters.len(), len(p.idle))
	}
}

// wantStats compares the fields of got named in want, ignoring the rest.
func wantStats(t *testing.T, got Stats, want map[string]int) {
	t.Helper()
	fields := map[string]int{
		"Hits": int(got.Hits), "Misses": int(got.Misses), "Timeouts": int(got.Timeouts),
		"Dials": int(got.Dials), "DialErrors": int(got.DialErrors), "Closed": int(got.Closed),
		"Total": got.Total, "Idle": got.Idle, "InUse": got.InUse, "Dialing": got.Dialing,
		"Waiters": got.Waiters,
	}
	for name, w := range want {
		g, ok := fields[name]
		if !ok {
			t.Fatalf("wantStats: no field %q", name)
		}
		if g != w {
			t.Errorf("Stats.%s = %d, want %d (all: %+v)", name, g, w, got)
		}
	}
}

func mustGet(t *testing.T, p *Pool[*fakeConn]) *fakeConn {
	t.Helper()
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return c
}
