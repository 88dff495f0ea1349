package respire

import "github.com/respire/respire/internal/link"

// The packages built on the client (lock, coordination) reach its router, prefix,
// observer and key watches through the internal link, not through Client's public
// methods.
func init() {
	link.Register(func(c *Client) *link.Client { return &c.link })
}

// newLink returns what packages lock and coordination use of c, once c's router,
// observer and tracking are set.
func (c *Client) newLink() link.Client {
	return link.Client{
		Router:       c.route,
		Table:        c.table,
		Prefix:       c.prefix,
		Observer:     c.obs,
		Standalone:   c.route.Standalone(),
		CanWatchKeys: c.tracking != nil,
		Closed:       &c.closed,
		Name:         c.commandName,
		Outcome:      outcomeOf,
	}
}

// commandName is the name the observer's events carry for a command named cmd
// (observedName).
func (c *Client) commandName(cmd string) string {
	args := [1]any{cmd}
	return c.observedName(nil, args[:])
}
