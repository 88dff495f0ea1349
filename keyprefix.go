package respire

import (
	"fmt"
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

// callOptionsInfo is callOptions that also returns the command's entry, which gives
// its keys (nil when there is none and no key is needed). A command the table lacks
// needs COMMAND INFO first when keys are needed (commandinfo.go); without it the error
// matches ErrUnknownKeys.
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
	o := conn.CallOptions{Blocking: command.IsBlocking(args)}
	if !c.needsKeys() {
		return o, nil, nil
	}
	info, err := c.keyInfo(args)
	if err != nil {
		return conn.CallOptions{}, nil, err
	}
	if c.prefix != "" {
		o.KeyPrefix = c.prefix
		if info != nil {
			o.Keys = command.InfoPrefixableKeyIndexes(info, args, keys)
		}
	}
	return o, info, nil
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

func checkConnState(args []any) error {
	var buf [12]byte
	name, ok := lowerName(args[0], &buf)
	if !ok {
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
