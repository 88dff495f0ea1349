package respire

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// prefixKeys returns args with the client's key prefix on every key argument, found by
// the command key table. args itself is never modified: callers may reuse it.
func (c *Client) prefixKeys(args []any) []any {
	if c.prefix == "" {
		return args
	}
	var scratch [16]int
	idx := command.PrefixableKeyIndexes(args, scratch[:0])
	if len(idx) == 0 {
		return args
	}
	out := make([]any, len(args))
	copy(out, args)
	for _, i := range idx {
		out[i] = c.prefixed(args[i])
	}
	return out
}

// prefixed returns the key argument a with the prefix in front.
func (c *Client) prefixed(a any) any {
	switch k := a.(type) {
	case string:
		return c.prefix + k
	case []byte:
		return append([]byte(c.prefix), k...)
	}
	// Numbers used as keys: the key is the text the encoder would send, which is the
	// payload of the bulk string it writes ("$2\r\n42\r\n").
	bulk, err := resp.AppendArg(nil, 0, a)
	if err != nil {
		return a // left for the encoder to reject with its own error
	}
	payload := bulk[bytes.IndexByte(bulk, '\n')+1 : len(bulk)-2]
	return append([]byte(c.prefix), payload...)
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
	"ssubscribe":   "use Client.Subscribe",
	"unsubscribe":  "use Subscription.Unsubscribe",
	"punsubscribe": "use Subscription.PUnsubscribe",
	"sunsubscribe": "use Subscription.Unsubscribe",
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
// every command); ok is false for names too long to matter or of another type.
func lowerName(a any, buf *[12]byte) ([]byte, bool) {
	var n int
	switch s := a.(type) {
	case string:
		if len(s) > len(buf) {
			return nil, false
		}
		n = copy(buf[:], s)
	case []byte:
		if len(s) > len(buf) {
			return nil, false
		}
		n = copy(buf[:], s)
	default:
		return nil, false
	}
	for i := range n {
		if c := buf[i]; 'A' <= c && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	return buf[:n], true
}
