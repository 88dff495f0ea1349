package route

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
)

// Router carries a Client's commands to the servers of one deployment: one server
// ([NewStandalone]), the master Sentinel names ([NewSentinel]) or the nodes of a
// Cluster ([NewCluster]). Everything that depends on the kind of deployment is behind
// it: where a command goes, redirections (a caller never sees MOVED or ASK), retries,
// re-resolution of the topology, and the mapping of errors (only the errors of this
// package and of conn come out: never pool.ErrClosed).
//
// The constructor chooses the implementation, once: a deployment. The calls that carry
// the caller's arguments (Do, AddrOf, DoMulti, SlotOf, KeySlot) reach it by a type
// switch (dispatch.go), every other call through the interface.
type Router struct {
	d deployment
}

// deployment is what each kind of router implements, one server at a time (one, over
// a backend) or a Cluster; see the methods of Router of the same names.
type deployment interface {
	backend
	do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error)
	addrOf(cmd *Cmd) string
	doMulti(ctx context.Context, b *Batch) ([]conn.Result, *conn.Conn, error)
	slotOf(info *command.Info, args []any, prefix string, prefixed []int) (int, error)
	keySlot(prefix, key string) int
	newPlan() *Plan
	sendPlan(ctx context.Context, p *Plan) ([]conn.Result, *conn.Conn, error)
	watch(ctx context.Context, t Target, args []any) (*conn.Conn, error)
	routesByKey() bool
	standalone() bool
	resolve(ctx context.Context) error
	inspect() Inspection
}

// backend is where the commands of one server at a time go (a standalone server, the
// master Sentinel names), and what a Cluster does too for the calls that name a
// target; see the methods of Router of the same names.
type backend interface {
	shared(ctx context.Context, t Target) (*conn.Conn, error)
	peer(ctx context.Context, t Target) (*SharedConn, error)
	dedicated(ctx context.Context, t Target) (*conn.Conn, error)
	release(cn *conn.Conn, reusable bool)
	dial(ctx context.Context, t Target, adjust func(*conn.Options)) (*conn.Conn, error)
	masterTargets(ctx context.Context) ([]Target, error)
	// addr is the address of the server t goes to now, without I/O ("" when the
	// router cannot tell); see Router.AddrOf.
	addr(t Target) string
	// observe learns from a command's failure (under Sentinel, READONLY or a broken
	// connection makes it look for the master again); one server's Do calls it.
	observe(ctx context.Context, err error)
	stats() pool.Stats
	close() error
}

// Cmd is one command for [Router.Do]: its arguments, how to send them, and its entry
// in the key table (nil: none, or no keys), from which the router works out its slot
// and whether a replica may serve it. Nothing of it is retained; it is apart from
// Call so that the caller's arguments and scratch space can stay on its stack.
type Cmd struct {
	Options conn.CallOptions
	Args    []any
	Info    *command.Info
}

// Call says how [Router.Do] makes a call; the zero value routes the command by its
// keys.
type Call struct {
	// Addr, when set, sends the command once to that server (a target Masters
	// returned), without routing by slot or following redirections: a SCAN cursor
	// belongs to one node. A node that has left the cluster since fails as not sent
	// (ErrClosed) and is not dialled again. One server ignores it.
	Addr string
	// Fanout lets a keyless command go on a Cluster where its command tips send it
	// (every master for KEYS, FLUSHALL, DBSIZE; every node for CONFIG SET), with the
	// replies combined as they say, and refuses one answered per node (ErrPerNode).
	Fanout bool
	// hold: each attempt goes on a dedicated connection that the last one keeps
	// checked out for the caller ([Router.Watch]).
	hold bool
	// lane is the connection of each server the attempts go on ([Router.DoOn]).
	lane Lane
}

// NewPlan returns an empty plan of a pipeline for this router, from a pool: Add
// commands to it, then send it with DoPlan, or give it back with Release.
func (r *Router) NewPlan() *Plan { return r.d.newPlan() }

// DoPlan sends the pipeline p, split by server where the deployment has several,
// returns the results in p's order, and releases p. The error is for the batch as a
// whole; each command's own error reply is in its Result. A command that was
// redirected or told to try again is retried alone. The connection it returns is the
// one the batch went on, as for DoMulti: nil when it went to several servers or none.
func (r *Router) DoPlan(ctx context.Context, p *Plan) ([]conn.Result, *conn.Conn, error) {
	defer p.Release()
	return r.SendPlan(ctx, p)
}

// SendPlan sends p as DoPlan does but leaves it with the caller, to Release or
// Recycle.
func (r *Router) SendPlan(ctx context.Context, p *Plan) ([]conn.Result, *conn.Conn, error) {
	return r.d.sendPlan(ctx, p)
}

// Shared returns the auto-pipelined connection that serves t. On a Cluster, for
// [Any] (as for Dedicated and Dial), a master that cannot be reached gives way to the
// next, each tried once while ctx allows.
func (r *Router) Shared(ctx context.Context, t Target) (*conn.Conn, error) {
	return r.d.shared(ctx, t)
}

// Dedicated checks out a connection of the caller's own for t; Release gives it back.
func (r *Router) Dedicated(ctx context.Context, t Target) (*conn.Conn, error) {
	return r.d.dedicated(ctx, t)
}

// Watch checks out a dedicated connection for t and runs args (a WATCH) on it. On a
// Cluster the replies that mean WATCH did nothing are handled as for Do, with the same
// budget: MOVED updates the slot table and starts again on the new owner, TRYAGAIN and
// CLUSTERDOWN wait and start again (CLUSTERDOWN with a topology refresh); ASK, a
// migration under way, waits as TRYAGAIN does, since the transaction that follows
// could not run on the importing node. The connection it returns is the one args ran
// on (nil when none was had), also when err is the command's own failure; the caller
// releases it.
func (r *Router) Watch(ctx context.Context, t Target, args []any) (*conn.Conn, error) {
	return r.d.watch(ctx, t, args)
}

// Release gives back a connection Dedicated or Watch returned, or discards it when it
// may be out of sync (reusable false).
func (r *Router) Release(cn *conn.Conn, reusable bool) { r.d.release(cn, reusable) }

// Dial opens a new connection for t that the caller owns and closes (subscriptions,
// tracked connections); adjust changes its options. Under Sentinel the router closes
// it too when its server stops being the master, so that the caller dials the new
// one: a caller keeping connections by server learns of a failover that way.
func (r *Router) Dial(ctx context.Context, t Target, adjust func(*conn.Options)) (*conn.Conn, error) {
	return r.d.dial(ctx, t, adjust)
}

// Masters returns a target for each master that serves slots, in address order, for
// commands that walk all of them (SCAN); one server has one.
func (r *Router) Masters(ctx context.Context) ([]Target, error) { return r.d.masterTargets(ctx) }

// RoutesByKey reports whether commands go to different servers by their keys (a
// Cluster's slots): calls then need every command's key positions before anything is
// sent, which the caller works out (COMMAND INFO for a command its table lacks).
func (r *Router) RoutesByKey() bool { return r.d.routesByKey() }

// Standalone reports whether the router serves the one server it was given: neither
// the nodes of a Cluster nor a master that Sentinel elects.
func (r *Router) Standalone() bool { return r.d.standalone() }

// Resolve reads the topology again now (a Cluster's slot table), bounded by ctx; a
// no-op where there is none to read.
func (r *Router) Resolve(ctx context.Context) error { return r.d.resolve(ctx) }

// Stats reports the dedicated-connection pools' counters, summed over servers.
func (r *Router) Stats() pool.Stats { return r.d.stats() }

// Close closes every connection of the router; calls fail with ErrClosed after.
func (r *Router) Close() error { return r.d.close() }
