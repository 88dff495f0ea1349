package respire

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/pool"
)

// router is how commands reach physical connections. Every path of the Client goes
// through it, so Cluster and Sentinel routing plug in here without changing callers.
// A command is routed by its hash slot (anySlot when it has no key); the client works
// the slot out from the command key table, so arguments never pass through this
// interface (which would make every command's arguments escape to the heap).
type router interface {
	// shared returns the auto-pipelined connection that serves slot.
	shared(ctx context.Context, slot int) (*conn.Conn, error)
	// dedicated checks out a connection of the caller's own (blocking commands,
	// transactions); release gives it back, or discards it when it may be out of sync.
	dedicated(ctx context.Context, slot int) (*conn.Conn, error)
	release(c *conn.Conn, reusable bool)
	// dial opens a new connection that the caller owns and closes (subscriptions).
	dial(ctx context.Context, slot int, opts func(*conn.Options)) (*conn.Conn, error)
	stats() pool.Stats
	close() error
}

// anySlot routes a command that has no key.
const anySlot = -1

const dedicatedHealthCheckAfter = 30 * time.Second

// standalone routes everything to one server.
type standalone struct {
	addr string
	opts conn.Options
	conn *sharedConn
	pool *pool.Pool[*conn.Conn]
}

func newStandalone(addr string, copts conn.Options, o *Options) (*standalone, error) {
	s := &standalone{addr: addr, opts: copts}
	dial := func(ctx context.Context) (*conn.Conn, error) { return conn.Dial(ctx, addr, copts) }
	p, err := pool.New(pool.Options[*conn.Conn]{
		Dial:        dial,
		Size:        o.PoolSize,
		MinIdle:     o.MinIdle,
		MaxLifetime: o.ConnMaxLifetime,
		MaxIdleTime: o.ConnMaxIdleTime,
		// A connection idle this long may have been dropped by a server timeout or a
		// middlebox; one PING at checkout is cheaper than a failed blocking command.
		HealthCheckAfter: dedicatedHealthCheckAfter,
	})
	if err != nil {
		return nil, err
	}
	s.pool = p
	s.conn = newSharedConn(dial)
	return s, nil
}

func (s *standalone) shared(ctx context.Context, _ int) (*conn.Conn, error) {
	return s.conn.get(ctx)
}

func (s *standalone) dedicated(ctx context.Context, _ int) (*conn.Conn, error) {
	return s.pool.Get(ctx)
}

func (s *standalone) release(c *conn.Conn, reusable bool) {
	if reusable {
		s.pool.Put(c)
	} else {
		s.pool.Discard(c)
	}
}

func (s *standalone) dial(ctx context.Context, _ int, adjust func(*conn.Options)) (*conn.Conn, error) {
	opts := s.opts
	if adjust != nil {
		adjust(&opts)
	}
	return conn.Dial(ctx, s.addr, opts)
}

func (s *standalone) stats() pool.Stats { return s.pool.Stats() }

func (s *standalone) close() error {
	s.conn.close()
	return s.pool.Close()
}

// sharedConn is one auto-pipelined connection that is redialled, once, however many
// callers find it broken at the same moment.
type sharedConn struct {
	dialFn func(ctx context.Context) (*conn.Conn, error)
	cur    atomic.Pointer[conn.Conn]
	ctx    context.Context // ends when the owner closes: stops a dial in progress
	cancel context.CancelFunc
	dials  sync.WaitGroup

	mu      sync.Mutex
	pending *redial
	closed  bool
}

// redial is a dial in progress that any number of callers wait for.
type redial struct {
	done chan struct{}
	c    *conn.Conn
	err  error
}

func newSharedConn(dial func(ctx context.Context) (*conn.Conn, error)) *sharedConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &sharedConn{dialFn: dial, ctx: ctx, cancel: cancel}
}

func alive(c *conn.Conn) bool {
	select {
	case <-c.Done():
		return false
	default:
		return true
	}
}

// get returns the live connection, dialling a new one when there is none. Waiting for
// the dial ends with ctx, without stopping the dial others may wait for.
func (s *sharedConn) get(ctx context.Context) (*conn.Conn, error) {
	if c := s.cur.Load(); c != nil && alive(c) {
		return c, nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if c := s.cur.Load(); c != nil && alive(c) {
		s.mu.Unlock()
		return c, nil
	}
	r := s.pending
	if r == nil {
		r = &redial{done: make(chan struct{})}
		s.pending = r
		s.dials.Add(1)
		go s.redial(r)
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.c, r.err
	case <-ctx.Done():
		return nil, &conn.CallError{Err: context.Cause(ctx)}
	}
}

func (s *sharedConn) redial(r *redial) {
	defer s.dials.Done()
	c, err := s.dialFn(s.ctx)
	s.mu.Lock()
	old := s.cur.Load()
	if err == nil && s.closed {
		c.Close()
		c, err = nil, ErrClosed
	}
	if err == nil {
		s.cur.Store(c)
	}
	r.c, r.err = c, err
	s.pending = nil
	close(r.done)
	s.mu.Unlock()
	if old != nil && err == nil {
		old.Close() // broken already; this waits for its goroutines
	}
}

func (s *sharedConn) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.dials.Wait()
	if c := s.cur.Load(); c != nil {
		c.Close()
	}
}
