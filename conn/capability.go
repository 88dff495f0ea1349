package conn

import "sync"

// Support is what a connection has learned about one capability of its server.
type Support uint8

const (
	// Unknown: not tried yet on this connection.
	Unknown Support = iota
	// Supported: a definitive reply showed the server has it.
	Supported
	// Unsupported: a definitive reply (such as the unknown-command error) showed the
	// server lacks it.
	Unsupported
)

func (s Support) String() string {
	switch s {
	case Supported:
		return "supported"
	case Unsupported:
		return "unsupported"
	}
	return "unknown"
}

// Capabilities is the memory of one physical connection about which optional commands
// its server accepts (native compare commands and the like). It is never shared: a
// reconnect, another node, or a failover destination starts with an empty record, since
// the server behind it may be another version. Names are chosen by the packages that
// learn them (for instance "lock.delex").
type Capabilities struct {
	m sync.Map // string -> Support
}

// Load returns what is known of the named capability.
func (c *Capabilities) Load(name string) Support {
	v, ok := c.m.Load(name)
	if !ok {
		return Unknown
	}
	return v.(Support)
}

// Store records what a definitive reply showed about the named capability. Storing
// what is already known is free: callers confirm a capability on every success.
func (c *Capabilities) Store(name string, s Support) {
	if c.Load(name) != s {
		c.m.Store(name, s)
	}
}
