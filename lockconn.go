package respire

import (
	"context"
	"errors"
	"sync"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/resp"
)

// lockConns are the connections set aside for lock traffic: one auto-pipelined
// connection per server, beside that server's shared connection (its peer), dialled
// the same way and closed with it. A lock fences a cancelled command by killing the
// connection that carried it (CLIENT KILL); on a connection of its own that kill ends
// lock traffic only, never the commands other callers pipeline on the shared one.
type lockConns struct {
	mu     sync.Mutex
	byPeer map[*route.SharedConn]*lockConn
	closed bool
}

// lockConn is the lock connection of one peer.
type lockConn struct {
	sc   *route.SharedConn
	stop func() bool // deregisters the hook that closes it with its peer
}

// get returns the live lock connection beside peer, making it on first use. It fails
// with ErrClosed when the client or the peer has closed (the peer's server left the
// cluster, or a failover retired it): the caller looks its server up again.
func (l *lockConns) get(ctx context.Context, peer *route.SharedConn) (*conn.Conn, error) {
	l.mu.Lock()
	lc := l.byPeer[peer]
	if lc == nil {
		if l.closed || peer.Context().Err() != nil {
			l.mu.Unlock()
			return nil, ErrClosed
		}
		if l.byPeer == nil {
			l.byPeer = map[*route.SharedConn]*lockConn{}
		}
		lc = &lockConn{sc: peer.Sibling()}
		l.byPeer[peer] = lc
		// The peer's context ends when its owner closes it: its server is no longer
		// where this client sends commands, so lock traffic must not go there either.
		lc.stop = context.AfterFunc(peer.Context(), func() { l.drop(peer, lc) })
	}
	l.mu.Unlock()
	return lc.sc.Get(ctx)
}

// drop closes the lock connection of a peer that closed.
func (l *lockConns) drop(peer *route.SharedConn, lc *lockConn) {
	l.mu.Lock()
	if l.byPeer[peer] == lc {
		delete(l.byPeer, peer)
	}
	l.mu.Unlock()
	lc.sc.Close()
}

// close closes every lock connection; later calls of get fail with ErrClosed.
func (l *lockConns) close() {
	l.mu.Lock()
	l.closed = true
	all := l.byPeer
	l.byPeer = nil
	l.mu.Unlock()
	for _, lc := range all {
		lc.stop()
		lc.sc.Close()
	}
}

// LockConnFor returns the connection set aside for lock traffic to the server that
// currently serves key: auto-pipelined among the commands of locks, separate from the
// shared connection ConnFor returns. It is for package lock, whose renewals and
// releases may have to be fenced (CLIENT KILL of the connection that carried them);
// on this connection a fence fails other locks' commands only, which can tell that
// they were fenced and send again. There is one per server (per node on a Cluster,
// for the current master under Sentinel); it is redialled when it breaks and closed
// when its server stops serving the client. A failure to connect is returned as a
// *conn.CallError that says the command was not sent. As with ConnFor, the caller
// applies the key prefix.
func (c *Client) LockConnFor(ctx context.Context, key string) (*conn.Conn, error) {
	return c.lockConnAt(ctx, c.keySlot(key))
}

// lockConnAt returns the lock connection of the server that serves slot.
func (c *Client) lockConnAt(ctx context.Context, slot int) (*conn.Conn, error) {
	for attempt := 0; ; attempt++ {
		if c.closed.Load() {
			return nil, ErrClosed
		}
		peer, err := c.route.Peer(ctx, route.Slot(slot))
		if err != nil {
			var ce *conn.CallError
			if errors.As(err, &ce) {
				return nil, err
			}
			// No server to send to (the Cluster is down, the topology could not be
			// read): nothing was sent, which is what the lock's retries look for.
			return nil, &conn.CallError{Err: err}
		}
		cn, err := c.lockConnOf(ctx, peer)
		if errors.Is(err, ErrClosed) && !c.closed.Load() && attempt < 3 {
			continue // its server was retired while we asked (failover, node left): look again
		}
		return cn, err
	}
}

// lockConnOf returns the lock connection beside peer. A failure while the client is
// open says that nothing was sent, so the caller may try again; it matches ErrClosed
// when peer's server was retired (failover, node left), for the caller to look its
// server up again.
func (c *Client) lockConnOf(ctx context.Context, peer *route.SharedConn) (*conn.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	cn, err := c.locks.get(ctx, peer)
	if err == nil {
		return cn, nil
	}
	// Declared here, not above: errors.As moves it to the heap, on failures only.
	var ce *conn.CallError
	switch {
	case errors.As(err, &ce):
		return cn, err
	case errors.Is(err, ErrClosed) && c.closed.Load():
		return nil, err
	}
	// A dial or handshake failure, a server retired: nothing was sent.
	return nil, &conn.CallError{Err: err}
}

// LockDoOn is DoOn for a connection LockConnFor returned: it sends one command on cn
// and follows Cluster redirections, sending the command again on the lock connection
// of the node a MOVED or ASK names (with ASKING first after ASK), and again after
// TRYAGAIN or CLUSTERDOWN; those replies mean the command did not run. Lock traffic
// thus stays on lock connections, redirected or not. It returns the reply and the
// connection that produced it.
func (c *Client) LockDoOn(ctx context.Context, cn *conn.Conn, o conn.CallOptions, args ...any) (resp.Value, *conn.Conn, error) {
	return c.doOn(ctx, cn, o, args, c.lockVia)
}
