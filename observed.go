package respire

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/link"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
)

// What the client tells its observer (Options.Observer and Options.Logger) about the
// commands and batches it sends. Every caller checks c.obs != nil first, so that a
// client without an observer builds no event and reads no clock.

// errPanicked is the error a CommandEnd or BatchEnd carries for a call that panicked
// on the caller's goroutine before it returned (an observer's, or an argument's
// method): its outcome is unknown.
var errPanicked = link.ErrPanicked

// pendingCommand is a command between its CommandStart and CommandEnd: a caller defers
// end, then sets last and err to what the command returned, so that a panic still ends
// it, with errPanicked.
type pendingCommand struct {
	ctx   context.Context
	obs   observe.Observer
	start observe.CommandStart
	last  *conn.Conn
	err   error
}

// observeCommand tells obs a command (args, of entry info: nil when the caller did
// not look it up) is about to be sent to addr (expectedAddr, when the caller does not
// hold the connection) and returns it, to end, with the context it is sent with, from
// the observer (a tracer's span is in it).
func (c *Client) observeCommand(ctx context.Context, obs observe.Observer, info *command.Info, args []any, addr string) pendingCommand {
	start := observe.CommandStart{Name: c.observedName(info, args), Addr: addr, Start: time.Now()}
	return pendingCommand{ctx: obs.CommandStart(ctx, start), obs: obs, start: start, err: errPanicked}
}

// end tells the observer how the command ended: err is what the caller gets, last
// the connection that produced the reply or the failure (nil if none did). A command
// not sent reached no server, whichever connection it was meant for.
func (p *pendingCommand) end() {
	e := observe.CommandEnd{
		Name:     p.start.Name,
		Start:    p.start.Start,
		Duration: time.Since(p.start.Start),
		Outcome:  outcomeOf(p.err),
		Err:      p.err,
	}
	if p.last != nil && e.Outcome != observe.NotSent {
		e.Addr = p.last.Addr()
	}
	p.obs.CommandEnd(p.ctx, e)
}

// pendingBatch is pendingCommand for a batch.
type pendingBatch struct {
	ctx   context.Context
	obs   observe.Observer
	start observe.BatchStart
	last  *conn.Conn
	res   []conn.Result
	err   error
}

// observeBatch tells obs a batch of n commands is about to be sent to addr, as
// observeCommand does for one command, and returns it, to end; name is the one its
// commands share, if they do (observe.BatchStart.Name).
func observeBatch(ctx context.Context, obs observe.Observer, kind observe.BatchKind, n int, name, addr string) pendingBatch {
	start := observe.BatchStart{Kind: kind, Len: n, Name: name, Addr: addr, Start: time.Now()}
	return pendingBatch{ctx: obs.BatchStart(ctx, start), obs: obs, start: start, err: errPanicked}
}

// end tells the observer how the batch ended: res are its commands' results (their
// error replies are counted), err the batch's error, last the connection it went on
// (nil for several servers or none). A batch not sent reached no server, as a command
// not sent reaches none.
func (p *pendingBatch) end() {
	e := observe.BatchEnd{
		Kind:     p.start.Kind,
		Len:      p.start.Len,
		Name:     p.start.Name,
		Start:    p.start.Start,
		Duration: time.Since(p.start.Start),
		Outcome:  outcomeOf(p.err),
		Err:      p.err,
	}
	if p.last != nil && e.Outcome != observe.NotSent {
		e.Addr = p.last.Addr()
	}
	for _, r := range p.res {
		if _, ok := resp.AsServerError(r.Err); ok {
			e.Failed++
		}
	}
	p.obs.BatchEnd(p.ctx, e)
}

// batchName is the name the events of a batch of cmds carry: the one every command
// shares, else none (observe.BatchStart.Name).
func (c *Client) batchName(cmds [][]any) string {
	if len(cmds) == 0 {
		return ""
	}
	name := c.observedName(nil, cmds[0])
	for _, args := range cmds[1:] {
		if c.observedName(nil, args) != name {
			return ""
		}
	}
	return name
}

// batchNameOf is batchName for commands the caller looked up already (infos, in cmds'
// order).
func (c *Client) batchNameOf(infos []*command.Info, cmds [][]any) string {
	name := c.observedName(infos[0], cmds[0])
	for i, args := range cmds[1:] {
		if c.observedName(infos[i+1], args) != name {
			return ""
		}
	}
	return name
}

// batchName is batchName for the pipeline's commands, whose names it compared as they
// were added.
func (p *Pipeline) batchName() string {
	if p.mixed {
		return ""
	}
	return p.first
}

// expectedAddr is the server a command (args, of options o and entry info) is about to
// go to, for its start event (observe.CommandStart.Addr): where the router would send
// it now, or "" when it cannot tell without I/O (route.Router.AddrOf).
func (c *Client) expectedAddr(o conn.CallOptions, info *command.Info, args []any) string {
	return c.route.AddrOf(&route.Cmd{Options: o, Args: args, Info: info})
}

// batchAddr is the server a batch not yet bound to a connection is about to go to
// (observe.BatchStart.Addr): the one server, or "" on a Cluster.
func (c *Client) batchAddr() string { return c.route.AddrOf(&route.Cmd{}) }

// observeCache tells the client's observer of a cache event, when it has one.
func observeCache(obs observe.Observer, kind observe.CacheKind, keys int, addr string) {
	if obs != nil {
		obs.Cache(observe.Cache{Kind: kind, Keys: keys, Addr: addr})
	}
}

// outcomeOf classes the error a caller got by what it may do next (observe.Outcome).
func outcomeOf(err error) observe.Outcome {
	_, reply := resp.AsServerError(err)
	switch {
	case err == nil:
		return observe.OK
	case reply, errors.Is(err, ErrTxFailed):
		// A transaction EXEC refused (a watched key changed) did not run, but the
		// server refused it, as it refuses a command with an error reply.
		return observe.ServerError
	case errors.Is(err, conn.ErrOutcomeUnknown):
		// Checked before the causes below: a command written and then cut off by its
		// context or a Close may have run.
		return observe.Unknown
	}
	for _, target := range notSentErrors {
		if errors.Is(err, target) {
			return observe.NotSent
		}
	}
	return observe.Unknown
}

// notSentErrors are the errors that say a command was not sent: refused before sending
// (invalid arguments, a closed client, no server for its slot, a full pool), or ended
// by its context before it was written (a written command's error matches
// conn.ErrOutcomeUnknown, which outcomeOf checks first).
var notSentErrors = []error{
	conn.ErrNotSent,
	conn.ErrCredentials,
	ErrClosed,
	ErrInvalidArg,
	ErrConnState,
	ErrBlockingInBatch,
	ErrCrossSlot,
	ErrPerNode,
	ErrUnknownKeys,
	ErrNotConfined,
	ErrClusterDown,
	ErrTooManyRedirects,
	ErrNoCache,
	ErrNotCacheable,
	ErrNoTracking,
	resp.ErrEmptyCommand,
	resp.ErrInvalidArg,
	pool.ErrExhausted,
	pool.ErrClosed,
	context.Canceled,
	context.DeadlineExceeded,
}

// observedName is the command's name as events carry it: its entry's (info, which the
// caller looked up already, or else the command table's), in upper case ("GET",
// "CLIENT" for CLIENT LIST), or args[0] as given for a command the table lacks, when
// it is a string; unknownName for any other ([]byte), since converting it to a string
// would allocate on every call.
func (c *Client) observedName(info *command.Info, args []any) string {
	if len(args) == 0 {
		return ""
	}
	if info == nil {
		info, _ = c.entry(args[:1])
	}
	if info != nil {
		if name, ok := upperNames.Load(info); ok {
			return name.(string)
		}
		container, _, _ := strings.Cut(info.Name, "|")
		name, _ := upperNames.LoadOrStore(info, strings.ToUpper(container))
		return name.(string)
	}
	if s, ok := args[0].(string); ok {
		return s // a string is immutable: an observer may keep it
	}
	return unknownName
}

// unknownName is the name events carry for a command the table lacks whose name is
// not a string (observe.CommandStart.Name).
const unknownName = "UNKNOWN"

// upperNames maps command table entries (*command.Info) to their names in upper case,
// made once per command the client sends, so that naming a command does not allocate.
var upperNames sync.Map
