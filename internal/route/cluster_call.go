package route

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// NeedsRetry reports whether a command's error is one the Cluster routing handles: a
// redirection, TRYAGAIN or CLUSTERDOWN.
func NeedsRetry(err error) bool {
	se, ok := resp.AsServerError(err)
	if !ok {
		return false
	}
	switch se.Code {
	case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN":
		return true
	}
	return false
}

// step is where the next attempt of a command goes, as follow decides.
type step struct {
	target *clusterNode // the node a redirection names; nil: the slot's owner
	asking bool         // send ASKING first (an ASK redirection)
}

// budget counts the redirections and retries of one command across its attempts.
type budget struct {
	hops  int
	tries int
	// askWaits makes an ASK wait and retry on the slot's owner, as TRYAGAIN does,
	// instead of following it: a WATCH begins a transaction that stays on its
	// connection, and on the importing node every later command of it would need an
	// ASKING of its own. The migration ends with a MOVED to follow.
	askWaits bool
}

// follow decides what comes after the server error reply err (se) to a command for
// slot that cn carried (cn may be nil): another attempt on the node a MOVED or ASK
// names (asking for ASK), or on the slot's owner after TRYAGAIN or CLUSTERDOWN (which
// asks for a topology refresh) and a backoff. Those replies mean the command did not
// run. stop is what to return instead: any other error, too many redirections or
// retries, ctx's end.
func (r *Cluster) follow(ctx context.Context, se *resp.ServerError, err error, slot int, cn *conn.Conn, b *budget) (next step, stop error) {
	rd, redirect := se.Redirect()
	switch {
	case redirect && !(rd.Ask && b.askWaits):
		return r.redirect(ctx, rd, err, cn, b)
	case redirect:
		return step{}, r.retryLater(ctx, observe.Ask, err, slot, cn, b)
	case se.Code == "TRYAGAIN":
		return step{}, r.retryLater(ctx, observe.TryAgain, err, slot, cn, b)
	case se.Code == "CLUSTERDOWN":
		r.refresher.Trigger()
		return step{}, r.retryLater(ctx, observe.ClusterDown, err, slot, cn, b)
	}
	return step{}, err
}

// redirect is follow for a MOVED or ASK (rd, the reply err) to be followed: the node
// it names, after a pause once the command has gone back and forth.
func (r *Cluster) redirect(ctx context.Context, rd resp.Redirect, err error, cn *conn.Conn, b *budget) (next step, stop error) {
	if b.hops++; b.hops > MaxRedirects {
		return step{}, fmt.Errorf("%w: %d redirections for slot %d, the last: %w", ErrTooManyRedirects, MaxRedirects, rd.Slot, err)
	}
	if b.hops > 2 {
		// Nodes that disagree send a command back and forth until gossip settles;
		// give it a moment.
		if err := sleepCtx(ctx, time.Duration(b.hops)*2*time.Millisecond); err != nil {
			return step{}, err
		}
	}
	addr := rd.Addr
	if cn != nil {
		// A node without a known endpoint is announced as ":port".
		addr = cluster.ResolveAddr(addr, cn.Addr())
	}
	kind := observe.Moved
	if rd.Ask {
		kind = observe.Ask
		next.target, stop = r.node(addr)
	} else {
		next.target, stop = r.moved(rd.Slot, addr)
	}
	if stop != nil {
		return step{}, stop
	}
	next.asking = rd.Ask
	r.observeRedirect(kind, rd.Slot, cn, next.target.addr)
	return next, nil
}

// retryLater is follow for a reply (err, of kind) after which the command is sent
// again to the slot's owner after a backoff, at most MaxClusterRetries times; it
// returns nil to go on. A budget used up ends in an error matching
// ErrTooManyRedirects and wrapping the last reply (errors.As finds its
// *resp.ServerError), for every command and WATCH alike: never a bare TRYAGAIN,
// CLUSTERDOWN or ASK.
func (r *Cluster) retryLater(ctx context.Context, kind observe.RedirectKind, err error, slot int, cn *conn.Conn, b *budget) error {
	if b.tries++; b.tries > MaxClusterRetries {
		state := "unavailable" // TRYAGAIN or CLUSTERDOWN
		if kind == observe.Ask {
			state = "still migrating"
		}
		return fmt.Errorf("%w: slot %d %s after %d retries, the last: %w", ErrTooManyRedirects, slot, state, MaxClusterRetries, err)
	}
	r.observeRedirect(kind, slot, cn, "")
	return sleepCtx(ctx, backoff(b.tries))
}

// observeRedirect reports a redirection or retry reply that cn (nil: unknown) carried
// for slot, and that is followed to the node at to ("" for the slot's owner after a
// pause).
func (r *Cluster) observeRedirect(kind observe.RedirectKind, slot int, cn *conn.Conn, to string) {
	obs := r.o.Conn.Observer
	if obs == nil {
		return
	}
	var from string
	if cn != nil {
		from = cn.Addr()
	}
	obs.Redirect(observe.Redirect{Kind: kind, Slot: slot, From: from, To: to})
}

// askingCmd precedes a command redirected by ASK.
var askingCmd = []any{"ASKING"}

// do runs one command on the Cluster: to the node c names, fanned out to the nodes its
// command tips name (fanout.go), or routed by slot with redirections followed.
func (r *Cluster) do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error) {
	if c.Addr != "" {
		n, err := r.knownNode(c.Addr)
		if err != nil {
			return resp.Value{}, nil, err
		}
		return r.attempt(ctx, cmd, c, Any(), step{target: n})
	}
	slot, err := SlotOf(cmd.Info, cmd.Args, cmd.Options.KeyPrefix, cmd.Options.Keys)
	if err != nil {
		return resp.Value{}, nil, err
	}
	t := r.slotTarget(cmd, slot)
	if slot == AnySlot && cmd.Info != nil && c.Fanout && fansOut(cmd.Info) {
		v, err := r.fanout(ctx, cmd, c)
		return v, nil, err
	}
	if cn := r.atHand(cmd, c, t); cn != nil {
		// The common case, written out: through attempt the reply would be copied
		// once more on the stack, and attempt's cases looked at again.
		v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
		if err == nil {
			return v, cn, nil
		}
		return r.redirected(ctx, cmd, c, t, cn, err)
	}
	v, cn, err := r.attempt(ctx, cmd, c, t, step{})
	if err == nil {
		return v, cn, nil
	}
	return r.redirected(ctx, cmd, c, t, cn, err)
}

// atHand is the connection attempt would send cmd on for t, when it is the shared
// connection of the master of t's slot, known and live: nil for every other case
// (a held, blocking or lock-lane call, a replica read, a command without keys, a slot
// not known, a connection to dial), which attempt handles.
func (r *Cluster) atHand(cmd *Cmd, c *Call, t Target) *conn.Conn {
	if c.hold || cmd.Options.Blocking || c.lane != SharedLane || t.Replica || t.Slot == AnySlot {
		return nil
	}
	s := r.slots[t.Slot].Load()
	if s == nil {
		return nil
	}
	return s.master.shared.atHand()
}

// slotTarget is the target of cmd, whose keys hash to slot: a replica may serve it
// when replica reads are on and it is a read that does not block.
func (r *Cluster) slotTarget(cmd *Cmd, slot int) Target {
	t := Slot(slot)
	info := cmd.Info
	t.Replica = r.o.ReplicaReads && !cmd.Options.Blocking && info != nil && info.Flags&command.FlagReadonly != 0
	return t
}

// redirected follows what the cluster answered (err, on cn) to a command for t:
// MOVED (the slot has a new owner: update the table and retry there), ASK (send it
// once, after ASKING, to the node importing the slot), TRYAGAIN and CLUSTERDOWN (retry
// after a backoff). Retrying is safe: those replies mean the command did not run. A
// transport failure asks for a topology refresh and is retried once when the command
// was not sent or is read-only, but not when its node could not be reached at all: a
// failed dial is not made again at once, as sending again would dial the same node. It
// returns the connection that carried the last attempt (nil when none did). A retry
// that no redirection sends elsewhere goes where t says, to a replica again for a
// replica read.
func (r *Cluster) redirected(ctx context.Context, cmd *Cmd, c *Call, t Target, cn *conn.Conn, err error) (resp.Value, *conn.Conn, error) {
	var (
		b       = budget{askWaits: c.hold}
		retried bool
		v       resp.Value
	)
	reached := cn != nil
	for {
		var next step
		se, reply := resp.AsServerError(err)
		switch {
		case reply:
			var stop error
			if next, stop = r.follow(ctx, se, err, t.Slot, cn, &b); stop != nil {
				if c.hold && cn != nil && NeedsRetry(err) {
					// The command did nothing there: no connection is the caller's.
					r.release(cn, true)
					cn = nil
				}
				return resp.Value{}, cn, stop
			}
		default:
			var ce *conn.CallError
			if errors.As(err, &ce) {
				r.refresher.Trigger()
			}
			if retried || c.lane == LockLane || !Retryable(ctx, err, cmd.Info) || !reached && !errors.Is(err, ErrClosed) {
				// (A node that left while it was looked up, ErrClosed, is worth
				// another look: its slot has a new owner.)
				return resp.Value{}, cn, err
			}
			retried = true
		}
		if c.hold && cn != nil {
			// The next attempt checks out a connection of its own.
			r.release(cn, Reusable(err))
			cn = nil
		}
		var last *conn.Conn
		if v, last, err = r.attempt(ctx, cmd, c, t, next); err == nil {
			return v, last, nil
		}
		if reached = last != nil; reached {
			cn = last
		}
	}
}

// attempt sends the command once, to the node of next or else of t, and returns the
// connection that carried it.
func (r *Cluster) attempt(ctx context.Context, cmd *Cmd, c *Call, t Target, next step) (resp.Value, *conn.Conn, error) {
	var cn *conn.Conn
	var err error
	switch {
	case c.hold:
		return r.attemptHeld(ctx, cmd, t, next.target)
	case cmd.Options.Blocking:
		n := next.target
		if n == nil {
			if n, err = r.nodeFor(ctx, t); err != nil {
				return resp.Value{}, nil, err
			}
		}
		return r.attemptDedicated(ctx, cmd, n, next.asking)
	case c.lane == LockLane:
		cn, err = r.lockConn(ctx, t, next.target)
	default:
		cn, err = r.sharedConn(ctx, t, next.target)
	}
	if err != nil {
		return resp.Value{}, nil, err
	}
	if !next.asking {
		v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
		return v, cn, err
	}
	v, err := doAsking(ctx, cn, cmd.Options, cmd.Args)
	return v, cn, err
}

// sharedConn is the shared connection of n, or of the node that serves t when n is
// nil: for a command any node serves, the first master that can be reached.
func (r *Cluster) sharedConn(ctx context.Context, t Target, n *clusterNode) (*conn.Conn, error) {
	if n == nil && anyNode(t) {
		return r.tryMasters(ctx, func(n *clusterNode) (*conn.Conn, error) { return r.conn(ctx, n) })
	}
	if n == nil {
		var err error
		if n, err = r.nodeFor(ctx, t); err != nil {
			return nil, err
		}
	}
	cn, err := r.conn(ctx, n)
	if err != nil && n.gone.Load() {
		// The node left while we looked it up; not sent, so retryable.
		return nil, &conn.CallError{Err: err}
	}
	return cn, err
}

// asNotSent makes err say that the command was not sent, unless it says already.
func asNotSent(err error) error {
	var ce *conn.CallError
	if errors.As(err, &ce) {
		return err
	}
	return &conn.CallError{Err: err}
}

// attemptDedicated sends a blocking command once on a dedicated connection to n.
func (r *Cluster) attemptDedicated(ctx context.Context, cmd *Cmd, n *clusterNode, asking bool) (resp.Value, *conn.Conn, error) {
	cn, err := n.get(ctx)
	if err != nil {
		r.refresher.Trigger()
		return resp.Value{}, nil, err
	}
	if asking {
		// A dedicated connection: nothing can come between the two.
		if _, err := cn.Do(ctx, askingCmd...); err != nil {
			r.release(cn, Reusable(err))
			return resp.Value{}, cn, err
		}
	}
	v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
	r.release(cn, Reusable(err))
	return v, cn, err
}

// doAsking sends ASKING and the command back to back in one batch, so that no other
// caller's command on the shared connection can come between them and use up the
// ASKING.
func doAsking(ctx context.Context, cn *conn.Conn, o conn.CallOptions, args []any) (resp.Value, error) {
	cmds := [2][]any{askingCmd, args}
	var keys [][]int
	if o.KeyPrefix != "" {
		ks := [2][]int{nil, o.Keys}
		keys = ks[:]
	}
	res, err := cn.DoMultiWith(ctx, o.KeyPrefix, keys, cmds[:]...)
	if err != nil {
		return resp.Value{}, err
	}
	if res[0].Err != nil {
		return resp.Value{}, res[0].Err
	}
	return res[1].Value, res[1].Err
}

// watch checks out a dedicated connection for t and sends WATCH (args) on it, with
// what the cluster answers followed as for any command (redirected), except that an
// ASK waits for the end of the migration (budget.askWaits). It returns the connection
// WATCH last ran on, for the caller to release, also with the command's own failure.
func (r *Cluster) watch(ctx context.Context, t Target, args []any) (*conn.Conn, error) {
	cmd := Cmd{Args: args}
	c := Call{hold: true}
	_, cn, err := r.attempt(ctx, &cmd, &c, t, step{})
	if err != nil {
		_, cn, err = r.redirected(ctx, &cmd, &c, t, cn, err)
	}
	return cn, err
}

// attemptHeld sends the command once on a dedicated connection to n, or to the node
// that serves t when n is nil, and keeps the connection checked out for the caller
// (nil when none could be had).
func (r *Cluster) attemptHeld(ctx context.Context, cmd *Cmd, t Target, n *clusterNode) (resp.Value, *conn.Conn, error) {
	var cn *conn.Conn
	var err error
	if n != nil {
		cn, err = n.get(ctx)
	} else {
		cn, err = r.dedicated(ctx, t)
	}
	if err != nil {
		return resp.Value{}, nil, err
	}
	v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
	return v, cn, err
}

// addrOf is the node cmd goes to as do routes it, "" when it cannot tell.
func (r *Cluster) addrOf(cmd *Cmd) string {
	slot, err := SlotOf(cmd.Info, cmd.Args, cmd.Options.KeyPrefix, cmd.Options.Keys)
	if err != nil {
		return ""
	}
	return r.addr(r.slotTarget(cmd, slot))
}

func (r *Cluster) slotOf(info *command.Info, args []any, prefix string, prefixed []int) (int, error) {
	return SlotOf(info, args, prefix, prefixed)
}

func (r *Cluster) keySlot(prefix, key string) int { return keySlot(prefix, key) }

func (r *Cluster) routesByKey() bool { return true }

func (r *Cluster) standalone() bool { return false }

func (r *Cluster) resolve(ctx context.Context) error { return r.refresher.Refresh(ctx) }

func (r *Cluster) newPlan() *Plan { return newPlan(true) }

func (r *Cluster) sendPlan(ctx context.Context, p *Plan) ([]conn.Result, *conn.Conn, error) {
	return r.doPlan(ctx, p)
}

func (r *Cluster) inspect() Inspection { return Inspection{r: r} }
