package link

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Client is what packages lock and coordination use of a respire.Client. It is a
// struct, not an interface, because its calls carry their caller's arguments: through
// an interface method they would escape to the heap on every command.
type Client struct {
	// Router is the client's router.
	Router *route.Router
	// Table is the client's command table: the entries of the commands sent through
	// the link come from it, as those of the client's own commands do.
	Table *command.Table
	// Prefix is the key prefix the client applies to every key (Options.KeyPrefix).
	Prefix string
	// Observer is the client's observer (Options.Observer with Options.Logger's
	// events), nil when nothing observes it.
	Observer observe.Observer
	// Standalone is true when the client serves one server directly: neither a Cluster
	// nor a master Sentinel elects (route.Router.Standalone).
	Standalone bool
	// CanWatchKeys is true when the client tracks keys (Options.ClientSideCache), so
	// that its WatchKey and WatchKeyInTurn can wake a waiter when a key changes.
	CanWatchKeys bool
	// WatchInTurn arms a watch of key in turn with the client's other waiters of
	// it, succeeding prev (nil at first): respire.Client.WatchKeyInTurn, which fails
	// with respire.ErrNoCache when CanWatchKeys is false.
	WatchInTurn func(ctx context.Context, key string, prev KeyWatch) (KeyWatch, error)
	// Closed is the client's closed flag: a closed client sends nothing.
	Closed *atomic.Bool
	// Name is the name a command of entry info (nil when the table lacks it) named
	// name carries in the observer's events, as the client's own commands carry it.
	// It takes the name as a string so that the arguments do not escape through the
	// indirect call.
	Name func(info *command.Info, name string) string
	// Outcome classes the error a caller got, as the client's own command events do.
	Outcome func(err error) observe.Outcome
	// Go runs f on a goroutine the client owns: f's ctx ends when the client closes,
	// and Close returns once f has. After Close, f runs on the caller's goroutine with
	// ctx ended.
	Go func(f func(ctx context.Context))
}

// KeyWatch is a one-shot watch of a key the client tracks, a *respire.KeyWatch: Wait
// sleeps until the key changes, its TTL runs out, limit passes or ctx ends; Stop
// retires it (and passes a wake it got in turn to the next waiter).
type KeyWatch interface {
	Wait(ctx context.Context, limit time.Duration) error
	Stop()
}

// clientOf finds the Client of a *respire.Client: a func(*respire.Client) *Client
// that package respire registers (this package cannot name its type).
var clientOf any

// Register sets how Of finds the Client of a *C (a *respire.Client). Package respire
// calls it once, in its init.
func Register[C any](of func(*C) *Client) { clientOf = of }

// Of returns the Client of c, a *respire.Client; nil for a nil c.
func Of[C any](c *C) *Client {
	if c == nil {
		return nil
	}
	return clientOf.(func(*C) *Client)(c)
}

// Conn returns the connection of lane l to the server that serves key (without the
// prefix, which Conn adds to find the slot). The caller applies the prefix to what it
// sends (conn.CallOptions.KeyPrefix). On a closed client it fails with
// route.ErrClosed.
func (l *Client) Conn(ctx context.Context, lane route.Lane, key string) (*conn.Conn, error) {
	return l.ConnBy(ctx, time.Time{}, lane, key)
}

// ConnBy is Conn whose waits (a dial, a topology look-up) end at by at the latest
// (zero: no bound), failing then as under a context with that deadline
// (route.Router.LaneConnBy): for calls bounded by conn.CallOptions.Deadline, which
// bounds the write and the reply but not the getting of the connection.
func (l *Client) ConnBy(ctx context.Context, by time.Time, lane route.Lane, key string) (*conn.Conn, error) {
	if l.Closed.Load() {
		return nil, route.ErrClosed
	}
	return l.Router.LaneConnBy(ctx, by, route.Slot(l.Router.KeySlot(l.Prefix, key)), lane)
}

// ConnAtHand is Conn when it would not wait (route.Router.LaneConnAtHand): nil when
// the connection would have to be dialled or the server looked up first, or the
// client is closed.
func (l *Client) ConnAtHand(lane route.Lane, key string) *conn.Conn {
	if l.Closed.Load() {
		return nil
	}
	return l.Router.LaneConnAtHand(route.Slot(l.Router.KeySlot(l.Prefix, key)), lane)
}

// Do sends one command on cn, a connection Conn returned for lane, with the options o,
// and follows Cluster redirections on that lane (route.Router.DoOn). It returns the
// reply and the connection that produced it. The client's observer sees it as one of
// the client's commands.
func (l *Client) Do(ctx context.Context, cn *conn.Conn, lane route.Lane, o conn.CallOptions, args ...any) (resp.Value, *conn.Conn, error) {
	if obs := l.Observer; obs != nil {
		return l.doObserved(ctx, obs, cn, lane, o, args)
	}
	cmd := l.cmd(o, args)
	return l.Router.DoOn(ctx, cn, &cmd, lane)
}

// doObserved is Do between the observer's CommandStart and CommandEnd. A panic on the
// way ends the command as of unknown outcome (ErrPanicked).
func (l *Client) doObserved(ctx context.Context, obs observe.Observer, cn *conn.Conn, lane route.Lane, o conn.CallOptions, args []any) (v resp.Value, last *conn.Conn, err error) {
	// The entry is looked up apart from the Cmd: handing a field of the Cmd to the
	// indirect Name would make every argument escape with it.
	info := l.entry(args)
	start := observe.CommandStart{Addr: cn.Addr(), Start: time.Now()}
	if len(args) > 0 {
		name, _ := args[0].(string)
		start.Name = l.Name(info, name)
	}
	octx := obs.CommandStart(ctx, start)
	err = ErrPanicked
	defer func() {
		e := observe.CommandEnd{
			Name:     start.Name,
			Start:    start.Start,
			Duration: time.Since(start.Start),
			Outcome:  l.Outcome(err),
			Err:      err,
		}
		if last != nil && e.Outcome != observe.NotSent {
			e.Addr = last.Addr()
		}
		obs.CommandEnd(octx, e)
	}()
	cmd := route.Cmd{Options: o, Args: args, Info: info}
	return l.Router.DoOn(octx, cn, &cmd, lane)
}

// cmd is args to send with the options o, with its entry in the client's table (nil
// for a command the table lacks: the router then treats it as having no keys).
func (l *Client) cmd(o conn.CallOptions, args []any) route.Cmd {
	return route.Cmd{Options: o, Args: args, Info: l.entry(args)}
}

// entry is the entry of args in the client's table, nil when it lacks the command.
func (l *Client) entry(args []any) *command.Info {
	if len(args) == 0 {
		return nil
	}
	info, _ := l.Table.LookupArgs(args)
	return info
}

// DedicatedTo checks out a connection of the caller's own to the server at addr,
// whichever slots it serves now: to reach the server that carried a command (to cut
// off its connection) after a Cluster redirection. Release gives it back.
func (l *Client) DedicatedTo(ctx context.Context, addr string) (*conn.Conn, error) {
	if l.Closed.Load() {
		return nil, route.ErrClosed
	}
	return l.Router.Dedicated(ctx, route.Node(addr))
}

// Release gives back a connection DedicatedTo returned, or discards it when it may be
// out of sync (reusable false).
func (l *Client) Release(cn *conn.Conn, reusable bool) { l.Router.Release(cn, reusable) }
