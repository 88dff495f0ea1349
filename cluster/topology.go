package cluster

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/respire/respire/resp"
)

// ErrTopology is matched by errors for a CLUSTER SHARDS or CLUSTER SLOTS reply that
// cannot be read or describes no usable cluster.
var ErrTopology = errors.New("cluster: bad topology reply")

// Node is one server of a cluster, as a topology reply names it.
type Node struct {
	ID      string // the node ID (40 hex characters); empty when the reply omits it
	Addr    string // host:port to dial
	Healthy bool   // health "online" in CLUSTER SHARDS; always true from CLUSTER SLOTS
}

// SlotRange is an inclusive range of hash slots.
type SlotRange struct{ First, Last int }

// Shard is a master, its replicas and the slots it serves.
type Shard struct {
	Master   Node
	Replicas []Node
	Slots    []SlotRange
}

// Topology is a cluster's layout at one moment: which shard serves which slots. It is
// immutable once parsed.
type Topology struct {
	Shards []Shard
}

// Owner returns the index in Shards of the shard that serves slot, or -1.
func (t *Topology) Owner(slot int) int {
	for i, s := range t.Shards {
		for _, r := range s.Slots {
			if r.First <= slot && slot <= r.Last {
				return i
			}
		}
	}
	return -1
}

// Covered returns how many slots some shard serves.
func (t *Topology) Covered() int {
	n := 0
	for _, s := range t.Shards {
		for _, r := range s.Slots {
			n += r.Last - r.First + 1
		}
	}
	return n
}

// Addrs returns the address of every node, masters first, without duplicates.
func (t *Topology) Addrs() []string {
	var out []string
	for _, s := range t.Shards {
		if s.Master.Addr != "" && !slices.Contains(out, s.Master.Addr) {
			out = append(out, s.Master.Addr)
		}
	}
	for _, s := range t.Shards {
		for _, r := range s.Replicas {
			if !slices.Contains(out, r.Addr) {
				out = append(out, r.Addr)
			}
		}
	}
	return out
}

// ParseShards reads a CLUSTER SHARDS reply (Redis 7.0+), in RESP2 or RESP3. from is
// the address of the node that answered: a node announced without an endpoint or IP
// is reached on from's host. With useTLS, a node's tls-port is used where it has one.
// Shards without slots are kept (a master whose slots all moved away is still a node);
// a reply in which two shards claim one slot is an error.
func ParseShards(v resp.Value, from string, useTLS bool) (*Topology, error) {
	shards, err := v.Array()
	if err != nil {
		return nil, fmt.Errorf("%w: CLUSTER SHARDS: %v", ErrTopology, err)
	}
	t := &Topology{}
	for i, sv := range shards {
		m, err := sv.Map()
		if err != nil {
			return nil, fmt.Errorf("%w: CLUSTER SHARDS shard %d: %v", ErrTopology, i, err)
		}
		var s Shard
		if sv, ok := m["slots"]; ok {
			if s.Slots, err = slotPairs(sv); err != nil {
				return nil, fmt.Errorf("%w: CLUSTER SHARDS shard %d: %v", ErrTopology, i, err)
			}
		}
		nodes, err := m["nodes"].Array()
		if err != nil {
			return nil, fmt.Errorf("%w: CLUSTER SHARDS shard %d nodes: %v", ErrTopology, i, err)
		}
		for j, nv := range nodes {
			n, role, err := shardNode(nv, from, useTLS)
			if err != nil {
				return nil, fmt.Errorf("%w: CLUSTER SHARDS shard %d node %d: %v", ErrTopology, i, j, err)
			}
			if role == "master" && s.Master.Addr == "" {
				s.Master = n
			} else {
				s.Replicas = append(s.Replicas, n)
			}
		}
		if s.Master.Addr == "" && len(s.Slots) > 0 {
			return nil, fmt.Errorf("%w: CLUSTER SHARDS shard %d serves slots without a master", ErrTopology, i)
		}
		t.Shards = append(t.Shards, s)
	}
	return t, t.check()
}

// slotPairs reads SHARDS' flat list of range bounds: [first, last, first, last, ...].
func slotPairs(v resp.Value) ([]SlotRange, error) {
	elems, err := v.Array()
	if err != nil {
		return nil, err
	}
	if len(elems)%2 != 0 {
		return nil, errors.New("odd number of slot bounds")
	}
	out := make([]SlotRange, 0, len(elems)/2)
	for i := 0; i < len(elems); i += 2 {
		r, err := slotRange(elems[i], elems[i+1])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func slotRange(first, last resp.Value) (SlotRange, error) {
	a, err1 := first.Int()
	b, err2 := last.Int()
	if err := errors.Join(err1, err2); err != nil {
		return SlotRange{}, err
	}
	if a < 0 || b < a || b >= SlotCount {
		return SlotRange{}, fmt.Errorf("slot range %d-%d out of bounds", a, b)
	}
	return SlotRange{First: int(a), Last: int(b)}, nil
}

// shardNode reads one node map of CLUSTER SHARDS.
func shardNode(v resp.Value, from string, useTLS bool) (Node, string, error) {
	m, err := v.Map()
	if err != nil {
		return Node{}, "", err
	}
	text := func(k string) string {
		s, _ := m[k].Text()
		return s
	}
	port, _ := m["port"].Int()
	if tp, err := m["tls-port"].Int(); err == nil && tp > 0 && (useTLS || port <= 0) {
		port = tp
	}
	if port <= 0 || port > 65535 {
		return Node{}, "", fmt.Errorf("node %q has no port", text("id"))
	}
	host := text("endpoint")
	if host == "" || host == "?" {
		host = text("ip")
	}
	n := Node{
		ID:      text("id"),
		Addr:    joinHost(host, int(port), from),
		Healthy: text("health") == "online",
	}
	return n, text("role"), nil
}

// ParseSlots reads a CLUSTER SLOTS reply (every version since 3.0; deprecated in 7.0
// for CLUSTER SHARDS): [[first, last, [host, port, id, ...], replicas...], ...]. A
// master named in several ranges is one shard. See ParseShards for from. SLOTS names
// one port per node, the one the server announces to clients.
func ParseSlots(v resp.Value, from string) (*Topology, error) {
	ranges, err := v.Array()
	if err != nil {
		return nil, fmt.Errorf("%w: CLUSTER SLOTS: %v", ErrTopology, err)
	}
	t := &Topology{}
	byMaster := map[string]int{}
	for i, rv := range ranges {
		elems, err := rv.Array()
		if err != nil || len(elems) < 3 {
			return nil, fmt.Errorf("%w: CLUSTER SLOTS entry %d: want [first, last, master, ...]", ErrTopology, i)
		}
		r, err := slotRange(elems[0], elems[1])
		if err != nil {
			return nil, fmt.Errorf("%w: CLUSTER SLOTS entry %d: %v", ErrTopology, i, err)
		}
		nodes := make([]Node, 0, len(elems)-2)
		for j, nv := range elems[2:] {
			n, err := slotsNode(nv, from)
			if err != nil {
				return nil, fmt.Errorf("%w: CLUSTER SLOTS entry %d node %d: %v", ErrTopology, i, j, err)
			}
			nodes = append(nodes, n)
		}
		k, ok := byMaster[nodes[0].Addr]
		if !ok {
			k = len(t.Shards)
			byMaster[nodes[0].Addr] = k
			t.Shards = append(t.Shards, Shard{Master: nodes[0]})
		}
		s := &t.Shards[k]
		s.Slots = append(s.Slots, r)
		for _, n := range nodes[1:] {
			if !slices.ContainsFunc(s.Replicas, func(x Node) bool { return x.Addr == n.Addr }) {
				s.Replicas = append(s.Replicas, n)
			}
		}
	}
	return t, t.check()
}

// slotsNode reads one [host, port, id, ...] node of CLUSTER SLOTS.
func slotsNode(v resp.Value, from string) (Node, error) {
	elems, err := v.Array()
	if err != nil || len(elems) < 2 {
		return Node{}, errors.New("want [host, port, ...]")
	}
	host, _ := elems[0].Text()
	port, err := elems[1].Int()
	if err != nil || port <= 0 || port > 65535 {
		return Node{}, fmt.Errorf("bad port %s", elems[1])
	}
	n := Node{Addr: joinHost(host, int(port), from), Healthy: true}
	if len(elems) > 2 {
		n.ID, _ = elems[2].Text()
	}
	return n, nil
}

// joinHost makes host:port, taking from's host when the reply has none: an empty host
// (or "?", an unknown endpoint) means "the host you asked".
func joinHost(host string, port int, from string) string {
	if host == "" || host == "?" {
		host, _, _ = net.SplitHostPort(from)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// check refuses a topology in which two shards claim one slot.
func (t *Topology) check() error {
	var owner [SlotCount]int16
	for i, s := range t.Shards {
		for _, r := range s.Slots {
			for slot := r.First; slot <= r.Last; slot++ {
				if o := owner[slot]; o != 0 {
					return fmt.Errorf("%w: slot %d claimed by %s and %s", ErrTopology, slot, t.Shards[o-1].Master.Addr, s.Master.Addr)
				}
				owner[slot] = int16(i + 1)
			}
		}
	}
	return nil
}

// ResolveAddr completes an address from a redirection or topology reply: a missing host
// (":6381", as a node without a known endpoint announces itself) is from's host.
func ResolveAddr(addr, from string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || (host != "" && host != "?") {
		return addr
	}
	fromHost, _, _ := net.SplitHostPort(from)
	return net.JoinHostPort(fromHost, port)
}
