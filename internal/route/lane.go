package route

import (
	"context"
	"errors"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// Lane says which of a server's auto-pipelined connections a call goes on.
type Lane uint8

const (
	// SharedLane is the server's shared connection, which every caller's commands
	// share.
	SharedLane Lane = iota
	// LockLane is the connection set aside for lock traffic beside the shared one:
	// dialled the same way, made on first use, redialled when it breaks and closed
	// with the shared connection (when its server stops serving the router). A lock
	// cuts off a cancelled command by killing the connection that carried it (CLIENT
	// KILL); on a lane of its own that kill ends lock traffic only, never the commands
	// other callers pipeline on the shared connection.
	LockLane
)

// LaneConn returns the connection of lane l to the server that serves t. A failure to
// reach the server says that nothing was sent (conn.ErrNotSent), so that the caller
// may try again; on a closed router it is ErrClosed. A lock lane whose server was
// retired while it was looked up (a failover, a node that left) is looked up again.
func (r *Router) LaneConn(ctx context.Context, t Target, l Lane) (*conn.Conn, error) {
	if l == SharedLane {
		return r.d.shared(ctx, t)
	}
	return lockLaneFor(ctx, r.d, t)
}

// LaneConnBy is LaneConn whose every wait (a dial, a topology look-up, a lane
// retired meanwhile) ends at by at the latest (zero: no bound), failing then as under a
// context with that deadline. The connection at hand, live, is returned without
// deriving that context: for callers that bound each of many calls by a deadline
// (conn.CallOptions.Deadline) rather than a context per call.
func (r *Router) LaneConnBy(ctx context.Context, by time.Time, t Target, l Lane) (*conn.Conn, error) {
	if by.IsZero() {
		return r.LaneConn(ctx, t, l)
	}
	if cn := r.laneConnAtHand(t, l); cn != nil {
		return cn, nil
	}
	return r.laneConnUntil(ctx, by, t, l)
}

// LaneConnAtHand is the live connection of lane l to the server that serves t when
// LaneConn would return it without waiting; nil when it would wait (a dial, a
// topology look-up): for a caller that sends to several servers from one goroutine
// before it waits for any reply, which must not hold the others up behind one
// server's dial.
func (r *Router) LaneConnAtHand(t Target, l Lane) *conn.Conn { return r.laneConnAtHand(t, l) }

// laneConnUntil is LaneConn under ctx bounded by by: apart from LaneConnBy, whose
// connection at hand must not pay for the derived context.
func (r *Router) laneConnUntil(ctx context.Context, by time.Time, t Target, l Lane) (*conn.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, by)
	defer cancel()
	return r.LaneConn(ctx, t, l)
}

// laneConnAtHand is the live connection of lane l to the server that serves t when
// LaneConn would return it without waiting; nil otherwise (LaneConn then waits, dials
// or looks up). A target that asks for a replica is left to LaneConn.
func (r *Router) laneConnAtHand(t Target, l Lane) *conn.Conn {
	if t.Replica {
		return nil
	}
	// An ended context: a look-up that would wait (a Cluster slot not known yet)
	// fails at once instead, leaving the wait to LaneConn.
	peer, err := r.d.peer(endedContext, t)
	if err != nil {
		return nil
	}
	if l == SharedLane {
		return peer.atHand()
	}
	peer.mu.Lock()
	lane := peer.lock
	peer.mu.Unlock()
	if lane == nil {
		return nil
	}
	return lane.atHand()
}

// endedContext is a context that has ended, for look-ups that must not wait.
var endedContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// lockLaneFor is the lock lane of the server d serves t with, looked up again when
// that server was retired while it was looked up (a failover, a node that left). A
// failure says that nothing was sent (conn.ErrNotSent); a server that stays retired,
// nothing having replaced it, means the router closed: ErrClosed.
func lockLaneFor(ctx context.Context, d backend, t Target) (*conn.Conn, error) {
	var retired *SharedConn
	for attempt := 0; ; attempt++ {
		peer, err := d.peer(ctx, t)
		if err != nil {
			// No server to send to (the Cluster is down, the topology could not be
			// read): nothing was sent, which is what a lock's retries look for.
			return nil, asNotSent(err)
		}
		if peer == retired {
			// Nothing replaced the closed shared connection: the router closed.
			return nil, ErrClosed
		}
		cn, err := peer.lockLane(ctx)
		switch {
		case err == nil:
			return cn, nil
		case errors.Is(err, ErrClosed) && attempt < 3:
			retired = peer
			continue
		}
		return nil, asNotSent(err)
	}
}

// DoOn sends cmd on cn, a connection LaneConn returned for lane l, and follows what a
// Cluster answers: after MOVED it sends the command again to the slot's new owner,
// after ASK to the node importing the slot (with ASKING first), after TRYAGAIN or
// CLUSTERDOWN to the slot's owner after a backoff. Those replies mean the command did
// not run, so nothing runs twice. Every attempt goes on lane l of its server: lock
// traffic stays on lock lanes, redirected or not. On the lock lane a transport failure
// is not retried here: the caller's own retries know what the command may repeat.
//
// DoOn returns the reply and the connection that produced it, which after a
// redirection is not cn: code that learns per connection (capabilities, the CLIENT ID
// of a connection to cut off) learns on that one. Outside a Cluster it is
// cn.DoWith. cmd.Info is the command's entry, which a redirection reads for the slot.
func (r *Router) DoOn(ctx context.Context, cn *conn.Conn, cmd *Cmd, l Lane) (resp.Value, *conn.Conn, error) {
	v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
	if err == nil || !NeedsRetry(err) {
		return v, cn, err
	}
	if by := cmd.Options.Deadline; !by.IsZero() {
		// Handed on as a duration: the deadline itself would take cmd's contents
		// (its arguments) to the heap with the context that keeps it.
		return r.redirectedWithin(ctx, time.Until(by), cmd, cn, err, l)
	}
	return r.redirectedOn(ctx, cmd, cn, err, l)
}

// redirectedWithin is redirectedOn for a command with a deadline
// (conn.CallOptions.Deadline), left before it passes: the redirection's waits (a
// topology look-up, a backoff, a connection, the ASKING before the command) end then
// too, as under a context with that deadline, derived on this rare path only.
func (r *Router) redirectedWithin(ctx context.Context, left time.Duration, cmd *Cmd, cn *conn.Conn, err error, l Lane) (resp.Value, *conn.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	return r.redirectedOn(ctx, cmd, cn, err, l)
}

// redirectedOn is DoOn after the first attempt, on cn, failed with err, a reply that
// may ask for another.
func (r *Router) redirectedOn(ctx context.Context, cmd *Cmd, cn *conn.Conn, err error, l Lane) (resp.Value, *conn.Conn, error) {
	// The dispatch of dispatch.go: each case makes the same call.
	var v resp.Value
	var last *conn.Conn
	switch d := r.d.(type) {
	case *one:
		v, last, err = d.redirectedOn(ctx, cmd, cn, err, l)
	case *Cluster:
		v, last, err = d.redirectedOn(ctx, cmd, cn, err, l)
	default:
		panic(errDeployment)
	}
	if last == nil {
		last = cn
	}
	return v, last, err
}

// redirectedOn is DoOn after the first attempt, on cn, failed with err: one server
// does not redirect, so err is the command's outcome (a TRYAGAIN or CLUSTERDOWN from
// a server that is not a Cluster's is its own answer).
func (r *one) redirectedOn(_ context.Context, _ *Cmd, cn *conn.Conn, err error, _ Lane) (resp.Value, *conn.Conn, error) {
	return resp.Value{}, cn, err
}

// redirectedOn is DoOn after the first attempt, on cn, failed with err.
func (r *Cluster) redirectedOn(ctx context.Context, cmd *Cmd, cn *conn.Conn, err error, l Lane) (resp.Value, *conn.Conn, error) {
	slot, serr := SlotOf(cmd.Info, cmd.Args, cmd.Options.KeyPrefix, cmd.Options.Keys)
	if serr != nil {
		return resp.Value{}, cn, serr
	}
	c := Call{lane: l}
	return r.redirected(ctx, cmd, &c, r.slotTarget(cmd, slot), cn, err)
}

// lockConn is the lock lane of n, or of the node that serves t when n is nil (looked
// up as LaneConn looks it up). A failure says that nothing was sent, unless the router
// closed.
func (r *Cluster) lockConn(ctx context.Context, t Target, n *clusterNode) (*conn.Conn, error) {
	if n == nil {
		return lockLaneFor(ctx, r, t)
	}
	cn, err := n.shared.lockLane(ctx)
	switch {
	case err == nil:
		return cn, nil
	case errors.Is(err, ErrClosed) && r.isClosed():
		return nil, ErrClosed
	}
	return nil, asNotSent(err)
}

// isClosed reports whether the router was closed.
func (r *Cluster) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// lockLane returns the live connection of s's lock lane, making the lane on first
// use; it fails with ErrClosed once s is closed.
func (s *SharedConn) lockLane(ctx context.Context) (*conn.Conn, error) {
	s.mu.Lock()
	lane := s.lock
	if lane == nil {
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		lane = s.Sibling()
		s.lock = lane
	}
	s.mu.Unlock()
	return lane.Get(ctx)
}
