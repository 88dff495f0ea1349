package respire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/confine"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/resp"
)

// How the client finds and confines a command's keys: the one look-up of a command in
// the client's key table (entry), COMMAND INFO for the commands the table lacks, and
// what the key prefix does to a command (callOptions, confine). The rules that need no
// client are in internal/confine.

// Commands the key table lacks. The generated table (internal/command) knows every
// command of the servers it was made from; a module's command, or a newer server's, is
// looked up once with COMMAND INFO when a call needs its key positions (a KeyPrefix,
// Cluster routing), and what the server said is remembered for the client's lifetime:
// its entry, or why there is none. A call whose key positions stay unknown fails before
// anything is sent (ErrUnknownKeys): sent unprefixed, it would touch another
// application's keys; routed by guess, it would run on a node that does not own them.
//
// The memory is per client, which talks to one deployment: its nodes run one server
// version with one set of modules. A client without a prefix outside a Cluster needs
// no key positions and asks nothing.

// learnedCommands is what the servers said of commands the table lacks, by lower-case
// name.
type learnedCommands struct {
	mu sync.Mutex
	m  map[string]*learnedCommand
}

// learnedCommand is one COMMAND INFO answer. done is closed once info or err is set.
type learnedCommand struct {
	done chan struct{}
	info *command.Info // the server's entry, when it describes the keys
	err  error         // else why not, matching ErrUnknownKeys
}

// unresolvedError is the error of a call that needs the key positions of a command
// the table lacks before COMMAND INFO was asked: Do, DoMulti and transactions then ask
// and try again; a Pipeline, whose Do takes no context, asks at Exec.
type unresolvedError struct{ name string }

func (e *unresolvedError) Error() string {
	return ErrUnknownKeys.Error() + ": " + e.name + " is not in the command table and COMMAND INFO has not been asked yet " +
		"(Client.Do, DoMulti, transactions and Pipeline.Exec ask first)"
}

// Is makes it match ErrUnknownKeys.
func (e *unresolvedError) Is(target error) bool { return target == ErrUnknownKeys }

// needsKeys reports whether calls need key positions: for the prefix, or for routing.
func (c *Client) needsKeys() bool { return c.prefix != "" || c.route.RoutesByKey() }

// entry is the one look-up of a command (args, not empty) in the client's table: the
// entry a typed command's name carries (an *argkind.Name), the table's, or the one
// the server described. Everything the client and its router need of the command
// (blocking, read-only, key positions, slot, name) comes from what it returns, so that
// they cannot disagree. A subcommand the table lacks of a container it has (OBJECT
// NEWSUB key) is a command the table lacks too: the container's entry has no keys. It
// does no I/O; for a command not asked about yet the error is an *unresolvedError.
// Without a need for keys it returns what the table has (nil for a command it lacks).
func (c *Client) entry(args []any) (*command.Info, error) {
	if n, ok := args[0].(*argkind.Name); ok {
		if info, ok := n.Entry.(*command.Info); ok && info != nil {
			return info, nil
		}
	}
	info, ok := c.table.LookupArgs(args)
	if ok && (info.Sub == nil || len(args) < 2) {
		return info, nil
	}
	if !c.needsKeys() {
		return info, nil
	}
	name, ok := c.learnedName(args)
	if !ok {
		return info, nil // not a name; encoding the command refuses it
	}
	c.learned.mu.Lock()
	lc := c.learned.m[name]
	c.learned.mu.Unlock()
	if lc == nil {
		return nil, &unresolvedError{name: strings.ToUpper(name)}
	}
	select {
	case <-lc.done:
	default:
		return nil, &unresolvedError{name: strings.ToUpper(name)}
	}
	if lc.info == nil {
		return nil, lc.err
	}
	if strings.Contains(name, "|") {
		return lc.info, nil
	}
	return command.SubcommandOf(lc.info, args), nil
}

// learnedName is the name COMMAND INFO takes for args' command: "name", or
// "container|sub" for a subcommand of a container the table has.
func (c *Client) learnedName(args []any) (string, bool) {
	name, ok := commandText(args[0])
	if !ok {
		return "", false
	}
	if info, known := c.table.LookupArgs(args[:1]); known && info.Sub != nil && len(args) > 1 {
		sub, ok := commandText(args[1])
		if !ok {
			return "", false
		}
		return name + "|" + sub, true
	}
	return name, true
}

// resolve asks the server, once per command name, for the entry of a command the table
// lacks, and waits for the answer (another caller's, if it asked first).
func (c *Client) resolve(ctx context.Context, args []any) error {
	name, ok := c.learnedName(args)
	if !ok {
		return nil
	}
	c.learned.mu.Lock()
	lc := c.learned.m[name]
	asker := lc == nil
	if asker {
		if c.learned.m == nil {
			c.learned.m = map[string]*learnedCommand{}
		}
		lc = &learnedCommand{done: make(chan struct{})}
		c.learned.m[name] = lc
	}
	c.learned.mu.Unlock()
	if asker {
		lc.info, lc.err = c.commandInfo(ctx, name)
		if lc.err != nil && !remembered(lc.err) {
			// A lost connection or an ended context says nothing of the command: the
			// next call asks again.
			c.learned.mu.Lock()
			delete(c.learned.m, name)
			c.learned.mu.Unlock()
		}
		close(lc.done)
		return lc.err
	}
	select {
	case <-lc.done:
		return lc.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", conn.ErrNotSent, context.Cause(ctx))
	}
}

// noEntryError is an ErrUnknownKeys that the server gave: it does not know the
// command, it refused COMMAND INFO, or its entry does not describe the keys. It marks
// the answer as one to remember without adding to the error's text.
type noEntryError struct{ err error }

func (e *noEntryError) Error() string { return e.err.Error() }

func (e *noEntryError) Unwrap() error { return e.err }

// remembered reports whether err is an answer about the command, not a failure to ask.
func remembered(err error) bool {
	var ne *noEntryError
	return errors.As(err, &ne)
}

// commandInfo asks COMMAND INFO name on a shared connection of any node.
func (c *Client) commandInfo(ctx context.Context, name string) (*command.Info, error) {
	upper := strings.ToUpper(name)
	cn, err := c.route.Shared(ctx, route.Any())
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not in the command table and COMMAND INFO could not be asked: %w", ErrUnknownKeys, upper, err)
	}
	v, err := cn.Do(ctx, "COMMAND", "INFO", name)
	switch _, refused := resp.AsServerError(err); {
	case refused:
		return nil, &noEntryError{fmt.Errorf("%w: %s is not in the command table and the server refused COMMAND INFO: %w", ErrUnknownKeys, upper, err)}
	case err != nil:
		return nil, fmt.Errorf("%w: %s is not in the command table and COMMAND INFO failed: %w", ErrUnknownKeys, upper, err)
	}
	entries, err := command.Specs(v)
	switch {
	case err != nil:
		return nil, &noEntryError{fmt.Errorf("%w: %s: the server's COMMAND INFO reply is unreadable: %w", ErrUnknownKeys, upper, err)}
	case len(entries) != 1 || entries[0] == nil:
		return nil, &noEntryError{fmt.Errorf("%w: %s is in neither the client's command table nor the server's COMMAND INFO", ErrUnknownKeys, upper)}
	}
	info := command.FromSpec(entries[0])
	if !info.KeysKnown() {
		return nil, &noEntryError{fmt.Errorf("%w: %s: its keys move with its arguments in a way the server's COMMAND INFO does not describe", ErrUnknownKeys, upper)}
	}
	return info, nil
}

// callOptionsCtx is callOptionsInfo for a caller with a context: a command the table
// lacks is resolved with COMMAND INFO first when its key positions are needed.
func (c *Client) callOptionsCtx(ctx context.Context, args []any, keys []int) (conn.CallOptions, *command.Info, error) {
	o, info, err := c.callOptionsInfo(args, keys)
	if err == nil {
		return o, info, nil // the common case, without the allocation errors.As costs
	}
	var ue *unresolvedError
	if !errors.As(err, &ue) {
		return o, info, err
	}
	if err := c.resolve(ctx, args); err != nil {
		return conn.CallOptions{}, nil, err
	}
	return c.callOptionsInfo(args, keys)
}

// commandText returns a command name argument in lower case, for keeping.
func commandText(a any) (string, bool) {
	s, ok := argkind.Text(a)
	if !ok {
		return "", false
	}
	if _, immutable := a.(string); !immutable {
		s = strings.Clone(s) // a []byte kind's text is a view of the caller's slice
	}
	return strings.ToLower(s), true
}

// callOptions checks a command and works out how to send it: whether it blocks, and
// where the key prefix goes (into keys, the caller's scratch space). The arguments are
// never copied, so a caller's values can stay on its stack.
func (c *Client) callOptions(args []any, keys []int) (conn.CallOptions, error) {
	o, _, err := c.callOptionsInfo(args, keys)
	return o, err
}

// callOptionsInfo is callOptions that also returns the command's entry (Client.entry,
// the one look-up of the command: nil for a command the table lacks when no key is
// needed). A command the table lacks needs COMMAND INFO first when keys are needed
// (Client.resolve); without it the error matches ErrUnknownKeys.
func (c *Client) callOptionsInfo(args []any, keys []int) (conn.CallOptions, *command.Info, error) {
	if c.closed.Load() {
		return conn.CallOptions{}, nil, ErrClosed
	}
	if len(args) == 0 {
		return conn.CallOptions{}, nil, resp.ErrEmptyCommand
	}
	if what, hint, bad := confine.ConnState(args); bad {
		return conn.CallOptions{}, nil, fmt.Errorf("%w: %s on a shared connection; %s", ErrConnState, what, hint)
	}
	info, err := c.entry(args)
	if err != nil {
		return conn.CallOptions{}, nil, err
	}
	o := conn.CallOptions{Blocking: command.InfoIsBlocking(info, args)}
	if c.prefix != "" {
		o.KeyPrefix = c.prefix
		if info != nil {
			o.Keys = command.InfoPrefixableKeyIndexes(info, args, keys)
		}
	}
	return o, info, nil
}

// confine returns the command to send for args under the client's key prefix: args
// itself, except for the commands that name keys through patterns (KEYS, SCAN,
// SORT/SORT_RO), whose patterns the prefix must confine too, and which it rewrites
// (confinePatterns). Commands that read keys no prefix can confine are refused with
// ErrNotConfined. Without a prefix it costs one comparison.
func (c *Client) confine(args []any) ([]any, error) {
	if c.prefix == "" {
		return args, nil
	}
	return c.confinePatterns(args)
}

// confineAll is confine for every command of a batch: it copies cmds only when it
// rewrites one of them.
func (c *Client) confineAll(cmds [][]any) ([][]any, error) {
	if c.prefix == "" {
		return cmds, nil
	}
	out := cmds
	for i, args := range cmds {
		conf, err := c.confinePatterns(args)
		if err != nil {
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
		if len(conf) == 0 || &conf[0] == &args[0] {
			continue
		}
		if &out[0] == &cmds[0] {
			out = slices.Clone(cmds)
		}
		out[i] = conf
	}
	return out, nil
}

// confinePatterns is confine under a prefix. KEYS patterns and SCAN MATCH patterns get
// the prefix with its glob characters escaped, so that it matches only itself; a SCAN
// without MATCH gets MATCH prefix*. SORT's BY and GET patterns that name keys get it
// as it is: the server replaces their first '*' with each element, so a prefix holding
// a '*' cannot be added, and such a SORT is refused. The keys KEYS and SCAN reply with
// keep the prefix, as every key name in a reply to Do does (Scan strips it).
func (c *Client) confinePatterns(args []any) ([]any, error) {
	if len(args) == 0 {
		return args, nil // refused as empty later
	}
	var buf [12]byte
	name, ok := argkind.LowerName(args[0], &buf)
	if !ok {
		return args, nil
	}
	var at [4]int
	switch string(name) {
	case "keys":
		if len(args) != 2 {
			return args, nil // the server refuses it
		}
		return confine.PrefixArgs(args, confine.EscapeGlob(c.prefix), append(at[:0], 1), nil)
	case "scan":
		if len(args) < 2 {
			return args, nil // the server refuses it
		}
		if match := command.ScanMatchIndexes(args, at[:0]); len(match) > 0 {
			return confine.PrefixArgs(args, confine.EscapeGlob(c.prefix), match, nil)
		}
		return confine.PrefixArgs(args, "", nil, []any{"MATCH", confine.EscapeGlob(c.prefix) + "*"})
	case "sort", "sort_ro":
		patterns := command.SortPatternIndexes(args, at[:0])
		if len(patterns) > 0 && strings.Contains(c.prefix, "*") {
			return nil, fmt.Errorf("%w: %s BY or GET pattern under the key prefix %q, whose '*' the server would take for the pattern's", ErrNotConfined, strings.ToUpper(string(name)), c.prefix)
		}
		return confine.PrefixArgs(args, c.prefix, patterns, nil)
	default:
		if what, why, bad := confine.Unconfinable(name, args); bad {
			return nil, fmt.Errorf("%w: %s under a key prefix; %s", ErrNotConfined, what, why)
		}
	}
	return args, nil
}

// prefixKey applies the prefix to a key the client's own methods take as a string.
func (c *Client) prefixKey(key string) string { return c.prefix + key }
