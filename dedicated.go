package respire

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/resp"
)

// Conn is one connection to one server: checked out of the client's pool by Dedicated,
// for what cannot share a connection (a command that must run on a given node, a
// blocking command among others, state such as CLIENT TRACKING or SELECT kept across
// commands), or handed to Options.OnConnect to set a new connection up. Its commands
// go as given: no key prefix, no routing, no redirection followed. A Conn from
// Dedicated is used by one goroutine at a time and is given back with the release
// function Dedicated returned; neither is used after that, nor after OnConnect
// returns.
type Conn struct{ cn *conn.Conn }

// Do sends one command and waits for its reply. A server error reply is an error that
// errors.As matches to *resp.ServerError; a null reply is a value. If ctx ends first,
// Do returns at once; the error matches conn.ErrNotSent when the command never reached
// the server and conn.ErrOutcomeUnknown when it may have run (release the Conn with
// reusable false then).
func (c *Conn) Do(ctx context.Context, args ...any) (resp.Value, error) { return c.cn.Do(ctx, args...) }

// DoBlocking is Do for a command that blocks on the server (BLPOP, XREAD BLOCK, WAIT):
// no read timeout applies while it waits; ctx bounds it.
func (c *Conn) DoBlocking(ctx context.Context, args ...any) (resp.Value, error) {
	return c.cn.DoBlocking(ctx, args...)
}

// DoMulti sends the commands back to back in one write and returns their results in
// order. The error is for the batch as a whole (invalid argument, ctx ended,
// connection lost); single commands' error replies are in their Result.
func (c *Conn) DoMulti(ctx context.Context, cmds ...[]any) ([]Result, error) {
	return c.cn.DoMulti(ctx, cmds...)
}

// Addr returns the address of the server the connection goes to.
func (c *Conn) Addr() string { return c.cn.Addr() }

// onConnect is Options.OnConnect as the connections' options take it.
func onConnect(user func(context.Context, *Conn) error) func(context.Context, *conn.Conn) error {
	if user == nil {
		return nil
	}
	return func(ctx context.Context, cn *conn.Conn) error { return user(ctx, &Conn{cn: cn}) }
}

// Dedicated checks out a connection of the caller's own, to the node that serves key,
// and returns the function that gives it back: release(true) when it is in a clean
// state, release(false) to close it (after a cancelled command, say).
func (c *Client) Dedicated(ctx context.Context, key string) (cn *Conn, release func(reusable bool), err error) {
	if c.closed.Load() {
		return nil, nil, ErrClosed
	}
	dc, err := c.route.Dedicated(ctx, route.Slot(c.keySlot(key)))
	if err != nil {
		return nil, nil, err
	}
	return &Conn{cn: dc}, func(reusable bool) { c.route.Release(dc, reusable) }, nil
}
