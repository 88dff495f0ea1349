package route

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/sentinel"
)

// SentinelOptions say which master to follow and how to reach the Sentinels.
type SentinelOptions struct {
	Sentinels []string // "host:port" of each Sentinel
	Master    string   // the name the Sentinels know the master by
	Username  string   // for the Sentinels, which have ACLs of their own
	Password  string
}

// sentinelRouter routes everything to the master a sentinel.Monitor names. The
// current master is served by an endpoint (a shared connection and a pool, as for a
// standalone server), swapped atomically when the Monitor reports another master; the
// old master's connections are closed then, so nothing keeps talking to it, and every
// connection to the new one is new: its CLIENT ID and capabilities are learned there.
type sentinelRouter struct {
	o      Options
	master string
	mon    atomic.Pointer[sentinel.Monitor]
	cur    atomic.Pointer[endpoint] // dialled connections are checked with ROLE
	// replica serves read-only commands with Options.ReplicaReads; nil without
	// replicas (reads then go to the master).
	replica atomic.Pointer[replicaEndpoint]

	mu      sync.Mutex
	closed  bool
	initErr error                    // an endpoint that could not be built, reported by NewSentinel
	lent    map[*conn.Conn]*endpoint // dedicated connections checked out, by the endpoint they came from
	dialled map[*conn.Conn]*endpoint // connections dialled for their caller (subscriptions)
}

// replicaEndpoint is the shared connection to the replica that serves reads.
type replicaEndpoint struct {
	addr   string
	shared *SharedConn
}

// NewSentinel starts following the master s names and returns its router. It fails
// when no Sentinel names a master that answers as one.
func NewSentinel(ctx context.Context, s SentinelOptions, o Options) (*Router, error) {
	r := &sentinelRouter{
		o:       o,
		master:  s.Master,
		lent:    map[*conn.Conn]*endpoint{},
		dialled: map[*conn.Conn]*endpoint{},
	}
	sopts := o.Conn
	sopts.Username, sopts.Password = s.Username, s.Password
	// Sentinels have their own ACL: the data nodes' provider and hook are not theirs.
	sopts.Credentials, sopts.OnConnect = nil, nil
	cfg := sentinel.Config{
		Sentinels:    s.Sentinels,
		MasterName:   s.Master,
		SentinelConn: sopts,
		NodeConn:     o.Conn,
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
	return &Router{d: &one{backend: r, replicaReads: o.ReplicaReads}}, nil
}

// newMaster builds the endpoint of the master at addr; it dials nothing yet.
func (r *sentinelRouter) newMaster(addr string) (*endpoint, error) {
	dial := func(ctx context.Context) (*conn.Conn, error) { return r.dialMaster(ctx, addr, r.o.Conn) }
	return newEndpoint(&r.o, addr, dial, nil)
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
		// The dial's and the role check's errors name the address.
		return nil, &conn.CallError{Err: fmt.Errorf("respire: master %q: %w", r.master, err)}
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
	ne, err := r.newMaster(addr)
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
		ne.close()
		return
	}
	old := r.cur.Swap(ne)
	var doomed []*conn.Conn
	for c, e := range r.lent {
		if e == old {
			doomed = append(doomed, c) // its borrower releases it into the closed pool
		}
	}
	for c, e := range r.dialled {
		if e == old {
			doomed = append(doomed, c)
			delete(r.dialled, c)
		}
	}
	r.mu.Unlock()
	if obs := r.o.Conn.Observer; obs != nil {
		e := observe.Failover{Master: r.master, To: addr}
		if old != nil {
			e.From = old.addr
		}
		obs.Failover(e)
	}
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
	var nr *replicaEndpoint
	if len(addrs) > 0 {
		addr := addrs[rand.IntN(len(addrs))]
		nr = &replicaEndpoint{addr: addr, shared: NewSharedConn(func(ctx context.Context) (*conn.Conn, error) {
			return r.dialReplica(ctx, addr)
		})}
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		if nr != nil {
			nr.shared.Close()
		}
		return
	}
	old := r.replica.Swap(nr)
	r.mu.Unlock()
	if old != nil {
		old.shared.Close()
	}
}

// dialReplica opens a connection to the replica at addr and checks that it is one.
func (r *sentinelRouter) dialReplica(ctx context.Context, addr string) (*conn.Conn, error) {
	cn, err := conn.Dial(ctx, addr, r.o.Conn)
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

func (r *sentinelRouter) shared(ctx context.Context, t Target) (*conn.Conn, error) {
	if t.Replica {
		if rr := r.replica.Load(); rr != nil {
			if c, err := rr.shared.Get(ctx); err == nil {
				return c, nil
			}
			// The master serves the read instead; the Monitor looks for replicas.
			r.recheck()
		}
	}
	for {
		e := r.cur.Load()
		c, err := e.shared.Get(ctx)
		if errors.Is(err, ErrClosed) && r.cur.Load() != e {
			continue // retired by a failover while we asked: use the new master
		}
		return c, err
	}
}

func (r *sentinelRouter) peer(context.Context, Target) (*SharedConn, error) {
	return r.cur.Load().shared, nil
}

func (r *sentinelRouter) dedicated(ctx context.Context, _ Target) (*conn.Conn, error) {
	for {
		e := r.cur.Load()
		c, err := e.get(ctx)
		if errors.Is(err, ErrClosed) {
			if r.cur.Load() != e {
				continue
			}
			return nil, ErrClosed
		}
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		if r.cur.Load() != e {
			// Retired while we dialled: switchTo did not see this connection.
			r.mu.Unlock()
			e.pool.Discard(c)
			continue
		}
		r.lent[c] = e
		r.mu.Unlock()
		return c, nil
	}
}

func (r *sentinelRouter) release(c *conn.Conn, reusable bool) {
	r.mu.Lock()
	e := r.lent[c]
	delete(r.lent, c)
	r.mu.Unlock()
	if e == nil {
		c.Close()
		return
	}
	e.release(c, reusable) // closes c if its pool was retired
}

func (r *sentinelRouter) dial(ctx context.Context, _ Target, adjust func(*conn.Options)) (*conn.Conn, error) {
	opts := r.o.Conn
	if adjust != nil {
		adjust(&opts)
	}
	for {
		e := r.cur.Load()
		c, err := r.dialMaster(ctx, e.addr, opts)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			c.Close()
			return nil, ErrClosed
		}
		if r.cur.Load() != e {
			r.mu.Unlock()
			c.Close()
			continue
		}
		// Forget the connections their owners have closed since.
		for d := range r.dialled {
			if !Alive(d) {
				delete(r.dialled, d)
			}
		}
		r.dialled[c] = e
		r.mu.Unlock()
		return c, nil
	}
}

func (r *sentinelRouter) masterTargets(context.Context) ([]Target, error) { return oneServer(), nil }

// addr is the replica's address for a read it serves, else the current master's.
func (r *sentinelRouter) addr(t Target) string {
	if t.Replica {
		if rr := r.replica.Load(); rr != nil {
			return rr.addr
		}
	}
	if e := r.cur.Load(); e != nil {
		return e.addr
	}
	return ""
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
	e, rr := r.cur.Load(), r.replica.Load()
	r.mu.Unlock()
	if rr != nil {
		rr.shared.Close()
	}
	if e == nil {
		return nil
	}
	return e.close()
}

// observe learns from a failed command: READONLY or LOADING from the master, or a
// broken connection, suggests that it moved; MASTERDOWN from a replica that it lost
// its master. Either way the Monitor looks again.
func (r *sentinelRouter) observe(ctx context.Context, err error) {
	se, reply := resp.AsServerError(err)
	var ce *conn.CallError
	switch {
	case reply:
		switch se.Code {
		case "READONLY", "LOADING", "MASTERDOWN":
			r.recheck()
		}
	case errors.As(err, &ce) && ctx.Err() == nil:
		r.recheck()
	}
}
