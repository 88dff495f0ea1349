package route

import "github.com/respire/respire/conn"

// Inspection is a read-only view of a Cluster router's state, for the tests of the
// packages built on it: which nodes it knows, who owns a slot, how many topology
// replies it read. Its methods are safe for concurrent use; on a router of one server
// they report nothing.
type Inspection struct{ r *Cluster }

// Inspect returns the view of r's state.
func (r *Router) Inspect() Inspection { return r.d.inspect() }

// NodeView is one Cluster node as Inspection sees it.
type NodeView struct{ n *clusterNode }

// Node returns the node at addr, and whether the router knows it now.
func (i Inspection) Node(addr string) (NodeView, bool) {
	if i.r == nil {
		return NodeView{}, false
	}
	i.r.mu.Lock()
	defer i.r.mu.Unlock()
	n := i.r.nodes[addr]
	return NodeView{n: n}, n != nil
}

// Conn returns the node's shared connection, nil when none was dialled.
func (v NodeView) Conn() *conn.Conn {
	if v.n == nil {
		return nil
	}
	return v.n.shared.cur.Load()
}

// Gone reports whether the node was removed from the cluster and closed.
func (v NodeView) Gone() bool { return v.n != nil && v.n.gone.Load() }

// SlotOwner returns the address of the master the slot table has for slot, "" when
// none.
func (i Inspection) SlotOwner(slot int) string {
	if i.r == nil {
		return ""
	}
	if s := i.r.slots[slot].Load(); s != nil {
		return s.master.addr
	}
	return ""
}

// TopologyReads returns how many topology replies the router has read.
func (i Inspection) TopologyReads() uint64 {
	if i.r == nil {
		return 0
	}
	return i.r.fetches.Load()
}

// Moved records, as a MOVED reply would, that slot now belongs to the node at addr.
func (i Inspection) Moved(slot int, addr string) error {
	_, err := i.r.moved(slot, addr)
	return err
}
