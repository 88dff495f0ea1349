package respire

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/sentinel"
)

// sentinelRouter routes everything to the master a sentinel.Monitor names. The
// current master is served by a masterRoute (a shared connection and a pool, as for a
// standalone server), swapped atomically when the Monitor reports another master; the
// old master's connections are closed then, so nothing keeps talking to it, and every
// connection to the new one is new: its CLIENT ID and capabilities are learned there.
type sentinelRouter struct {
	o     *Options
	copts conn.Options
	mon   atomic.Pointer[sentinel.Monitor]
	cur   atomic.Pointer[masterRoute]
	// replica serves read-only commands with Options.ReplicaReads; nil without
	// replicas (reads then go to the master).
	replica atomic.Pointer[replicaRoute]

	mu      sync.Mutex
	closed  bool
	initErr error                       // a route that could not be built, reported by newSentinelRouter
	lent    map[*conn.Conn]*masterRoute // dedicated connections checked out, by the route they came from
	dialled map[*conn.Conn]*masterRoute // connections dialled for their caller (subscriptions)
}

// masterRoute is the way to one master: connections to it are checked with ROLE
// before use.
type masterRoute struct {
	addr string
	conn *sharedConn
	pool *pool.Pool[*conn.Conn]
}

// replicaRoute is the shared connection to the replica that serves reads.
type replicaRoute struct {
	addr string
	conn *sharedConn
}

// replicaSlot is the slot of a read-only command when Options.ReplicaReads routes it
// to a replica (outside a Cluster, where slots are not used otherwise).
const replicaSlot = -2

func newSentinelRouter(ctx context.Context, o *Options, copts conn.Options) (router, error) {
	r := &sentinelRouter{
		o:       o,
		copts:   copts,
		lent:    map[*conn.Conn]*masterRoute{},
		dialled: map[*conn.Conn]*masterRoute{},
	}
	sopts := copts
	sopts.Username, sopts.Password = o.SentinelUsername, o.SentinelPassword
	cfg := sentinel.Config{
		Sentinels:    o.Addrs,
		MasterName:   o.SentinelMaster,
		SentinelConn: sopts,
		NodeConn:     copts,
		OnMaster:     r.switchTo,
	}
	if o.ReplicaReads {
		cfg.OnReplicas = r.setReplicas
	}
	mon, err := sentinel.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	r.mon.Store(mon)
	r.mu.Lock()
	err = r.initErr
	r.mu.Unlock()
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// newMasterRoute builds the route to the master at addr; it dials nothing yet.
func (r *sentinelRouter) newMasterRoute(addr string) (*masterRoute, error) {
	dial := func(ctx context.Context) (*conn.Conn, error) { return r.dialMaster(ctx, addr, r.copts) }
	p, err := pool.New(pool.Options[*conn.Conn]{
		Dial:             dial,
		Size:             r.o.PoolSize,
		MinIdle:          r.o.MinIdle,
		MaxLifetime:      r.o.ConnMaxLifetime,
		MaxIdleTime:      r.o.ConnMaxIdleTime,
		HealthCheckAfter: dedicatedHealthCheckAfter,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	return &masterRoute{addr: addr, conn: newSharedConn(dial), pool: p}, nil
}

func (rt *masterRoute) close() error {
	rt.conn.close()
	return rt.pool.Close()
}

// dialMaster opens a connection to the master at addr and checks that it still is
// one. A failure asks the Monitor to look for the master again, and says that the
// command waiting for the connection was not sent (so that a lock's keep-alive, say,
// tries again while its lease lasts, and may reach the new master in time).
func (r *sentinelRouter) dialMaster(ctx context.Context, addr string, opts conn.Options) (*conn.Conn, error) {
	cn, err := conn.Dial(ctx, addr, opts)
	if err == nil {
		if err = sentinel.CheckMaster(ctx, cn); err != nil {
			cn.Close()
		}
	}
	if err != nil {
		r.recheck()
		return nil, &conn.CallError{Err: fmt.Errorf("respire: master %q at %s: %w", r.o.SentinelMaster, addr, err)}
	}
	return cn, nil
}

func (r *sentinelRouter) recheck() {
	if m := r.mon.Load(); m != nil {
		m.Recheck()
	}
}

// switchTo makes addr the master: called by the Monitor, once from its Start and then
// on its goroutine, never concurrently.
func (r *sentinelRouter) switchTo(addr string) {
	nr, err := r.newMasterRoute(addr)
	r.mu.Lock()
	if err != nil {
		if r.cur.Load() == nil {
			r.initErr = err
		}
		r.mu.Unlock()
		return
	}
	if r.closed {
		r.mu.Unlock()
		nr.close()
		return
	}
	old := r.cur.Swap(nr)
	var doomed []*conn.Conn
	for c, rt := range r.lent {
		if rt == old {
			doomed = append(doomed, c) // its borrower releases it into the closed pool
		}
	}
	for c, rt := range r.dialled {
		if rt == old {
			doomed = append(doomed, c)
			delete(r.dialled, c)
		}
	}
	r.mu.Unlock()
	if old == nil {
		return
	}
	// In-flight commands on the old master fail (as not sent or outcome unknown);
	// subscriptions reconnect, to the new master.
	old.close()
	for _, c := range doomed {
		c.Close()
	}
}

// setReplicas picks the replica that serves reads: the current one while it is
// listed, else one at random. Called by the Monitor like switchTo.
func (r *sentinelRouter) setReplicas(addrs []string) {
	cur := r.replica.Load()
	if cur != nil && slices.Contains(addrs, cur.addr) {
		return
	}
	var nr *replicaRoute
	if len(addrs) > 0 {
		addr := addrs[rand.IntN(len(addrs))]
		nr = &replicaRoute{addr: addr, conn: newSharedConn(func(ctx context.Context) (*conn.Conn, error) {
			return r.dialReplica(ctx, addr)
		})}
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		if nr != nil {
			nr.conn.close()
		}
		return
	}
	old := r.replica.Swap(nr)
	r.mu.Unlock()
	if old != nil {
		old.conn.close()
	}
}

// dialReplica opens a connection to the replica at addr and checks that it is one.
func (r *sentinelRouter) dialReplica(ctx context.Context, addr string) (*conn.Conn, error) {
	cn, err := conn.Dial(ctx, addr, r.copts)
	if err == nil {
		if err = sentinel.CheckReplica(ctx, cn); err != nil {
			cn.Close()
		}
	}
	if err != nil {
		r.recheck()
		return nil, err
	}
	return cn, nil
}

func (r *sentinelRouter) shared(ctx context.Context, slot int) (*conn.Conn, error) {
	if slot == replicaSlot {
		if rr := r.replica.Load(); rr != nil {
			if c, err := rr.conn.get(ctx); err == nil {
				return c, nil
			}
			// The master serves the read instead; the Monitor looks for replicas.
			r.recheck()
		}
	}
	for {
		rt := r.cur.Load()
		c, err := rt.conn.get(ctx)
		if err == ErrClosed && r.cur.Load() != rt {
			continue // retired by a failover while we asked: use the new master
		}
		return c, err
	}
}

func (r *sentinelRouter) dedicated(ctx context.Context, _ int) (*conn.Conn, error) {
	for {
		rt := r.cur.Load()
		c, err := rt.pool.Get(ctx)
		if errors.Is(err, pool.ErrClosed) {
			if r.cur.Load() != rt {
				continue
			}
			return nil, ErrClosed
		}
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		if r.cur.Load() != rt {
			// Retired while we dialled: switchTo did not see this connection.
			r.mu.Unlock()
			rt.pool.Discard(c)
			continue
		}
		r.lent[c] = rt
		r.mu.Unlock()
		return c, nil
	}
}

func (r *sentinelRouter) release(c *conn.Conn, reusable bool) {
	r.mu.Lock()
	rt := r.lent[c]
	delete(r.lent, c)
	r.mu.Unlock()
	switch {
	case rt == nil:
		c.Close()
	case reusable:
		rt.pool.Put(c) // closes c if its pool was retired
	default:
		rt.pool.Discard(c)
	}
}

func (r *sentinelRouter) dial(ctx context.Context, _ int, adjust func(*conn.Options)) (*conn.Conn, error) {
	opts := r.copts
	if adjust != nil {
		adjust(&opts)
	}
	for {
		rt := r.cur.Load()
		c, err := r.dialMaster(ctx, rt.addr, opts)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return nil, ErrClosed
		}
		if r.cur.Load() != rt {
			r.mu.Unlock()
			c.Close()
			continue
		}
		// Forget the connections their owners have closed since.
		for d := range r.dialled {
			if !alive(d) {
				delete(r.dialled, d)
			}
		}
		r.dialled[c] = rt
		r.mu.Unlock()
		return c, nil
	}
}

func (r *sentinelRouter) stats() pool.Stats { return r.cur.Load().pool.Stats() }

func (r *sentinelRouter) close() error {
	// First the Monitor, so that no switch runs after this.
	if m := r.mon.Load(); m != nil {
		m.Close()
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	rt, rr := r.cur.Load(), r.replica.Load()
	r.mu.Unlock()
	if rr != nil {
		rr.conn.close()
	}
	if rt == nil {
		return nil
	}
	return rt.close()
}

// observe learns from a failed command: READONLY or LOADING from the master, or a
// broken connection, suggests that it moved; MASTERDOWN from a replica that it lost
// its master. Either way the Monitor looks again.
func (r *sentinelRouter) observe(ctx context.Context, err error) {
	var se *resp.ServerError
	var ce *conn.CallError
	switch {
	case errors.As(err, &se):
		switch se.Code {
		case "READONLY", "LOADING", "MASTERDOWN":
			r.recheck()
		}
	case errors.As(err, &ce) && ctx.Err() == nil:
		r.recheck()
	}
}

// routeSlot is the slot doShared routes a command by outside a Cluster: replicaSlot
// for a read-only command when replica reads are on (Sentinel), anySlot otherwise.
func (c *Client) routeSlot(args []any) int {
	if !c.opts.ReplicaReads || c.opts.SentinelMaster == "" {
		return anySlot
	}
	if info, ok := command.LookupArgs(args); ok && info.Flags&command.FlagReadonly != 0 {
		return replicaSlot
	}
	return anySlot
}

// failureObserver is implemented by routers that learn from failed commands.
type failureObserver interface {
	observe(ctx context.Context, err error)
}

// observeFailure hands a failed command's error to a router that learns from it.
func (c *Client) observeFailure(ctx context.Context, err error) {
	if o, ok := c.route.(failureObserver); ok {
		o.observe(ctx, err)
	}
}
