package respire

import (
	"fmt"
	"slices"
	"strings"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

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
// (commandinfo.go); without it the error matches ErrUnknownKeys.
func (c *Client) callOptionsInfo(args []any, keys []int) (conn.CallOptions, *command.Info, error) {
	if c.closed.Load() {
		return conn.CallOptions{}, nil, ErrClosed
	}
	if len(args) == 0 {
		return conn.CallOptions{}, nil, resp.ErrEmptyCommand
	}
	if err := checkConnState(args); err != nil {
		return conn.CallOptions{}, nil, err
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

// notConfined are the commands that reach keys a key prefix cannot confine, refused
// under one; the value says why.
var notConfined = map[string]string{
	"randomkey": "it returns a key of any prefix",
	"debug":     "its subcommands take keys the command table does not describe",
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
	name, ok := lowerName(args[0], &buf)
	if !ok {
		return args, nil
	}
	var at [4]int
	switch string(name) {
	case "keys":
		if len(args) != 2 {
			return args, nil // the server refuses it
		}
		return prefixArgs(args, escapeGlob(c.prefix), append(at[:0], 1), nil)
	case "scan":
		if len(args) < 2 {
			return args, nil // the server refuses it
		}
		if match := command.ScanMatchIndexes(args, at[:0]); len(match) > 0 {
			return prefixArgs(args, escapeGlob(c.prefix), match, nil)
		}
		return prefixArgs(args, "", nil, []any{"MATCH", escapeGlob(c.prefix) + "*"})
	case "sort", "sort_ro":
		patterns := command.SortPatternIndexes(args, at[:0])
		if len(patterns) > 0 && strings.Contains(c.prefix, "*") {
			return nil, fmt.Errorf("%w: %s BY or GET pattern under the key prefix %q, whose '*' the server would take for the pattern's", ErrNotConfined, strings.ToUpper(string(name)), c.prefix)
		}
		return prefixArgs(args, c.prefix, patterns, nil)
	case "cluster":
		if len(args) > 1 && argIs(args[1], "getkeysinslot") {
			return nil, fmt.Errorf("%w: CLUSTER GETKEYSINSLOT under a key prefix; it returns keys of any prefix", ErrNotConfined)
		}
	default:
		if why, bad := notConfined[string(name)]; bad {
			return nil, fmt.Errorf("%w: %s under a key prefix; %s", ErrNotConfined, strings.ToUpper(string(name)), why)
		}
	}
	return args, nil
}

// argIs reports whether a is the text s without regard to ASCII case.
func argIs(a any, s string) bool {
	switch t := a.(type) {
	case string:
		return strings.EqualFold(t, s)
	case []byte:
		return strings.EqualFold(string(t), s)
	}
	return false
}

// prefixArgs returns a copy of args with prefix added to the arguments at the
// positions at (ascending) and extra appended, or args itself when there is nothing to
// change. The copy holds the arguments' text rather than the arguments, so that the
// caller's arguments do not escape to the heap on every command.
func prefixArgs(args []any, prefix string, at []int, extra []any) ([]any, error) {
	if len(at) == 0 && len(extra) == 0 {
		return args, nil
	}
	out := make([]any, len(args), len(args)+len(extra))
	for i, a := range args {
		text, err := resp.AppendArgText(nil, i, a)
		if err != nil {
			return nil, err
		}
		if len(at) > 0 && at[0] == i {
			out[i], at = prefix+string(text), at[1:]
		} else {
			out[i] = string(text)
		}
	}
	return append(out, extra...), nil
}

// prefixKey applies the prefix to a key the client's own methods take as a string.
func (c *Client) prefixKey(key string) string { return c.prefix + key }

// escapeGlob makes a literal string safe inside a SCAN MATCH pattern.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// statefulCommands change the state of the connection they run on; on a shared
// connection they would affect every other caller. The value says what to use instead.
var statefulCommands = map[string]string{
	"multi":        "use Client.Watch",
	"exec":         "use Client.Watch",
	"discard":      "use Client.Watch",
	"watch":        "use Client.Watch",
	"unwatch":      "use Client.Watch",
	"subscribe":    "use Client.Subscribe",
	"psubscribe":   "use Client.PSubscribe",
	"ssubscribe":   "use Client.SSubscribe",
	"unsubscribe":  "use Subscription.Unsubscribe",
	"punsubscribe": "use Subscription.PUnsubscribe",
	"sunsubscribe": "use Subscription.SUnsubscribe",
	"monitor":      "open a connection of your own with the conn package",
	"select":       "set Options.DB",
	"auth":         "set Options.Username and Options.Password",
	"hello":        "set Options.Protocol",
	"reset":        "close the client instead",
	"quit":         "close the client instead",
	"sync":         "it is for replicas",
	"psync":        "it is for replicas",
}

// statefulClientSubcommands are the CLIENT subcommands with the same problem.
var statefulClientSubcommands = map[string]string{
	"reply":    "it would desynchronise replies",
	"tracking": "use Options.ClientSideCache",
	"setname":  "set Options.ClientName",
}

// statefulShapes has, for each first letter of the names in statefulCommands (and of
// CLIENT), a bit for each of their lengths: checkConnState looks a name up in the map
// only when its shape is one of them, so that GET, SET, INCR and most other commands
// cost no map look-up besides the command table's.
var statefulShapes = func() (shapes [256]uint16) {
	for name := range statefulCommands {
		shapes[name[0]] |= 1 << len(name)
	}
	shapes['c'] |= 1 << len("client")
	return shapes
}()

func checkConnState(args []any) error {
	var buf [12]byte
	name, ok := lowerName(args[0], &buf)
	if !ok || len(name) == 0 || statefulShapes[name[0]]&(1<<len(name)) == 0 {
		return nil
	}
	if hint, bad := statefulCommands[string(name)]; bad {
		return fmt.Errorf("%w: %s on a shared connection; %s", ErrConnState, strings.ToUpper(string(name)), hint)
	}
	if string(name) == "client" && len(args) > 1 {
		var subBuf [12]byte
		if sub, ok := lowerName(args[1], &subBuf); ok {
			if hint, bad := statefulClientSubcommands[string(sub)]; bad {
				return fmt.Errorf("%w: CLIENT %s on a shared connection; %s", ErrConnState, strings.ToUpper(string(sub)), hint)
			}
		}
	}
	return nil
}

// lowerName lowercases a short command name into buf without allocating (this runs on
// every command); ok is false for names too long to matter or of a kind other than
// string or []byte.
func lowerName(a any, buf *[12]byte) ([]byte, bool) {
	s, ok := argkind.Text(a)
	if !ok || len(s) > len(buf) {
		return nil, false
	}
	n := copy(buf[:], s)
	for i := range n {
		if c := buf[i]; 'A' <= c && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	return buf[:n], true
}
