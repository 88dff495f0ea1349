package route

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/pool"
)

// dialFunc opens a connection to one server.
type dialFunc = func(ctx context.Context) (*conn.Conn, error)

// endpoint is the way to one server: one auto-pipelined connection shared by every
// caller, and one pool of dedicated connections. Every router serves its servers
// through endpoints; nothing is dialled before it is needed.
type endpoint struct {
	addr   string
	shared *SharedConn
	pool   *pool.Pool[*conn.Conn]
}

// newEndpoint makes the endpoint of addr: dial opens its connections, and sharedDial,
// when not nil, its shared connection (which may need more than a dedicated one).
func newEndpoint(o *Options, addr string, dial, sharedDial dialFunc) (*endpoint, error) {
	p, err := o.newPool(addr, dial)
	if err != nil {
		return nil, err
	}
	if sharedDial == nil {
		sharedDial = dial
	}
	return &endpoint{addr: addr, shared: NewSharedConn(sharedDial), pool: p}, nil
}

// get checks out a dedicated connection; a closed pool is a closed router. Any other
// failure (a dial, a wait for a free slot) sent nothing, and its error says so
// (conn.ErrNotSent), as every error that crosses the network must say what became of
// the command.
func (e *endpoint) get(ctx context.Context) (*conn.Conn, error) {
	cn, err := e.pool.Get(ctx)
	if err != nil {
		return nil, checkoutError(err)
	}
	return cn, nil
}

// checkoutError is the error of a failed checkout from a pool, as the router returns
// it.
func checkoutError(err error) error {
	if errors.Is(err, pool.ErrClosed) {
		return ErrClosed
	}
	return asNotSent(err)
}

// release gives a dedicated connection back, or discards it.
func (e *endpoint) release(cn *conn.Conn, reusable bool) {
	if reusable {
		e.pool.Put(cn) // closes cn if the pool was closed meanwhile
	} else {
		e.pool.Discard(cn)
	}
}

func (e *endpoint) close() error {
	e.shared.Close()
	return e.pool.Close()
}

// SharedConn is one auto-pipelined connection that is redialled, once, however many
// callers find it broken at the same moment.
type SharedConn struct {
	dialFn dialFunc
	cur    atomic.Pointer[conn.Conn]
	ctx    context.Context // ends when the owner closes: stops a dial in progress
	cancel context.CancelFunc
	dials  sync.WaitGroup

	mu      sync.Mutex
	pending *Dialing
	closed  bool
	lock    *SharedConn // the lock lane beside it, made on first use (lane.go)
}

// NewSharedConn returns the shared connection that dial opens, not dialled yet.
func NewSharedConn(dial func(ctx context.Context) (*conn.Conn, error)) *SharedConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &SharedConn{dialFn: dial, ctx: ctx, cancel: cancel}
}

// Sibling returns a new shared connection to the same server, dialled the same way,
// that its caller owns and closes.
func (s *SharedConn) Sibling() *SharedConn { return NewSharedConn(s.dialFn) }

// Context ends when s is closed: its server no longer serves the router.
func (s *SharedConn) Context() context.Context { return s.ctx }

// Alive reports whether c has not failed or been closed.
func Alive(c *conn.Conn) bool {
	select {
	case <-c.Done():
		return false
	default:
		return true
	}
}

// Get returns the live connection, dialling a new one when there is none. Waiting for
// the dial ends with ctx, without stopping the dial others may wait for. A dial that
// fails sent nothing: its error matches conn.ErrNotSent, so that a router may try
// again and a caller knows the command did not run.
func (s *SharedConn) Get(ctx context.Context) (*conn.Conn, error) {
	if c := s.cur.Load(); c != nil && Alive(c) {
		return c, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if c := s.cur.Load(); c != nil && Alive(c) {
		s.mu.Unlock()
		return c, nil
	}
	d := s.pending
	if d == nil {
		d = NewDialing()
		s.pending = d
		s.dials.Add(1)
		go s.redial(d)
	}
	s.mu.Unlock()
	return d.Wait(ctx)
}

// atHand is the live connection when there is one, nil when Get would dial or wait
// for a dial.
func (s *SharedConn) atHand() *conn.Conn {
	if c := s.cur.Load(); c != nil && Alive(c) {
		return c
	}
	return nil
}

func (s *SharedConn) redial(d *Dialing) {
	defer s.dials.Done()
	c, err := s.dialFn(s.ctx)
	s.mu.Lock()
	old := s.cur.Load()
	if err == nil && s.closed {
		c.Close()
		c, err = nil, ErrClosed
	}
	switch {
	case err == nil:
		s.cur.Store(c)
	case !errors.Is(err, ErrClosed):
		err = asNotSent(err)
	}
	s.pending = nil
	d.Finish(c, err)
	s.mu.Unlock()
	if old != nil && err == nil {
		old.Close() // broken already; this waits for its goroutines
	}
}

// Close closes the connection and stops a dial in progress; later calls of Get fail
// with ErrClosed.
func (s *SharedConn) Close() {
	s.mu.Lock()
	s.closed = true
	lock := s.lock
	s.mu.Unlock()
	s.cancel()
	s.dials.Wait()
	if c := s.cur.Load(); c != nil {
		c.Close()
	}
	if lock != nil {
		lock.Close()
	}
}
