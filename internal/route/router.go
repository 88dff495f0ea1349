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
// Router is a struct, not an interface, because its calls carry the caller's
// arguments: passed through an interface method they would escape to the heap on
// every command. What carries no arguments goes through the backend interface.
type Router struct {
	b backend
	// cluster is b on a Cluster, and one is b on one server at a time: the calls
	// that carry arguments use them directly.
	cluster *Cluster
	one     *one
}

// backend is what each kind of router implements; see the methods of Router of the
// same names.
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

// Do sends one command and returns its reply and the connection that carried the
// last attempt (nil when none did), for callers that learn per connection. A server
// that redirects or asks to try again is followed; a command that was not sent, or is
// read-only, is sent again once on a new connection.
func (r *Router) Do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error) {
	if r.cluster != nil {
		return r.cluster.do(ctx, cmd, c)
	}
	return r.one.do(ctx, cmd, c)
}

// AddrOf returns the address of the server cmd would be sent to now, as far as the
// router knows without I/O or waiting: the one server, or the current master (a
// replica for a read that replica reads send there), or a Cluster slot's master. It
// returns "" when it cannot tell: a Cluster command of no slot (it goes to any master,
// or to every one), a replica read on a Cluster (the replica is picked when it is
// sent), a slot no node serves as far as the router knows. An observer's CommandStart
// and BatchStart carry it (samplers decide by it); the server that answers can differ
// after a redirection or a failover, and the end event says which one did. A batch's
// is AddrOf(&Cmd{}): "" on a Cluster, where it is split by node when it is sent.
func (r *Router) AddrOf(cmd *Cmd) string {
	if r.cluster != nil {
		slot, err := SlotOf(cmd.Info, cmd.Args, cmd.Options.KeyPrefix, cmd.Options.Keys)
		if err != nil {
			return ""
		}
		return r.cluster.addr(r.cluster.slotTarget(cmd, slot))
	}
	// As one.do routes it: a blocking command and a batch (no arguments) go to the
	// master.
	t := Any()
	t.Replica = r.one.replicaReads && !cmd.Options.Blocking && len(cmd.Args) > 0 && readOnly(cmd.Args)
	return r.b.addr(t)
}

// NewPlan returns an empty plan of a pipeline for this router, from a pool: Add
// commands to it, then send it with DoPlan, or give it back with Release.
func (r *Router) NewPlan() *Plan {
	return newPlan(r.cluster != nil)
}

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
	if r.cluster != nil {
		return r.cluster.doPlan(ctx, p)
	}
	return r.one.doEncoded(ctx, p.Len(), p.buf)
}

// Shared returns the auto-pipelined connection that serves t. On a Cluster, for
// [Any] (as for Dedicated and Dial), a master that cannot be reached gives way to the
// next, each tried once while ctx allows.
func (r *Router) Shared(ctx context.Context, t Target) (*conn.Conn, error) {
	return r.b.shared(ctx, t)
}

// Dedicated checks out a connection of the caller's own for t; Release gives it back.
func (r *Router) Dedicated(ctx context.Context, t Target) (*conn.Conn, error) {
	return r.b.dedicated(ctx, t)
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
	if r.cluster != nil {
		return r.cluster.watch(ctx, t, args)
	}
	cn, err := r.b.dedicated(ctx, t)
	if err != nil {
		return nil, err
	}
	_, err = cn.Do(ctx, args...)
	return cn, err
}

// Release gives back a connection Dedicated or Watch returned, or discards it when it
// may be out of sync (reusable false).
func (r *Router) Release(cn *conn.Conn, reusable bool) { r.b.release(cn, reusable) }

// Dial opens a new connection for t that the caller owns and closes (subscriptions,
// tracked connections); adjust changes its options. Under Sentinel the router closes
// it too when its server stops being the master, so that the caller dials the new
// one: a caller keeping connections by server learns of a failover that way.
func (r *Router) Dial(ctx context.Context, t Target, adjust func(*conn.Options)) (*conn.Conn, error) {
	return r.b.dial(ctx, t, adjust)
}

// Masters returns a target for each master that serves slots, in address order, for
// commands that walk all of them (SCAN); one server has one.
func (r *Router) Masters(ctx context.Context) ([]Target, error) { return r.b.masterTargets(ctx) }

// KeySlot is the slot key, with prefix before it, is routed by: AnySlot where slots do
// not route.
func (r *Router) KeySlot(prefix, key string) int {
	if r.cluster == nil {
		return AnySlot
	}
	return keySlot(prefix, key)
}

// SlotOf is the slot of a command's keys (AnySlot where slots do not route), or an
// error matching ErrCrossSlot when they hash to different slots of a Cluster. info is
// the command's entry (nil: no keys), prefix the key prefix and prefixed the positions
// it applies to. It reads args without retaining them.
func (r *Router) SlotOf(info *command.Info, args []any, prefix string, prefixed []int) (int, error) {
	if r.cluster == nil {
		return AnySlot, nil
	}
	return SlotOf(info, args, prefix, prefixed)
}

// RoutesByKey reports whether commands go to different servers by their keys (a
// Cluster's slots): calls then need every command's key positions before anything is
// sent, which the caller works out (COMMAND INFO for a command its table lacks).
func (r *Router) RoutesByKey() bool { return r.cluster != nil }

// Standalone reports whether the router serves the one server it was given: neither
// the nodes of a Cluster nor a master that Sentinel elects.
func (r *Router) Standalone() bool {
	_, ok := r.b.(*standalone)
	return ok
}

// Resolve reads the topology again now (a Cluster's slot table), bounded by ctx; a
// no-op where there is none to read.
func (r *Router) Resolve(ctx context.Context) error {
	if r.cluster == nil {
		return nil
	}
	return r.cluster.refresher.Refresh(ctx)
}

// OnTopologyChange makes f run whenever a slot that had a server gets another one
// while connections to the old one stay open (a Cluster's slot migration, which leaves
// a client-side cache with keys the new owner does not track).
func (r *Router) OnTopologyChange(f func()) {
	if r.cluster != nil {
		r.cluster.slotMoved.Store(&f)
	}
}

// Stats reports the dedicated-connection pools' counters, summed over servers.
func (r *Router) Stats() pool.Stats { return r.b.stats() }

// Close closes every connection of the router; calls fail with ErrClosed after.
func (r *Router) Close() error { return r.b.close() }
