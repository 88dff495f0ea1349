package confine

import (
	"strings"

	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/resp"
)

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
// CLIENT), a bit for each of their lengths: ConnState looks a name up in the map only
// when its shape is one of them, so that GET, SET, INCR and most other commands cost
// no map look-up besides the command table's.
var statefulShapes = func() (shapes [256]uint16) {
	for name := range statefulCommands {
		shapes[name[0]] |= 1 << len(name)
	}
	shapes['c'] |= 1 << len("client")
	return shapes
}()

// ConnState reports whether args (not empty) is a command that would change the state
// of the shared connection it ran on; what names it in upper case ("MULTI", "CLIENT
// SETNAME") and hint says what to use instead.
func ConnState(args []any) (what, hint string, bad bool) {
	var buf [12]byte
	name, ok := argkind.LowerName(args[0], &buf)
	if !ok || len(name) == 0 || statefulShapes[name[0]]&(1<<len(name)) == 0 {
		return "", "", false
	}
	if hint, bad := statefulCommands[string(name)]; bad {
		return strings.ToUpper(string(name)), hint, true
	}
	if string(name) == "client" && len(args) > 1 {
		var subBuf [12]byte
		if sub, ok := argkind.LowerName(args[1], &subBuf); ok {
			if hint, bad := statefulClientSubcommands[string(sub)]; bad {
				return "CLIENT " + strings.ToUpper(string(sub)), hint, true
			}
		}
	}
	return "", "", false
}

// notConfined are the commands that reach keys a key prefix cannot confine, refused
// under one; the value says why.
var notConfined = map[string]string{
	"randomkey": "it returns a key of any prefix",
	"debug":     "its subcommands take keys the command table does not describe",
}

// Unconfinable reports whether the command args, whose lower-case name is name,
// reaches keys that a key prefix cannot confine, so that a client with a prefix must
// refuse it; what names it in upper case and why says why.
func Unconfinable(name []byte, args []any) (what, why string, bad bool) {
	if string(name) == "cluster" {
		if len(args) > 1 && argIs(args[1], "getkeysinslot") {
			return "CLUSTER GETKEYSINSLOT", "it returns keys of any prefix", true
		}
		return "", "", false
	}
	if why, bad := notConfined[string(name)]; bad {
		return strings.ToUpper(string(name)), why, true
	}
	return "", "", false
}

// argIs reports whether a is the text s without regard to case, whatever string or
// byte-slice kind a is of (a named string type is sent as its text, so it must be
// refused as its text would be).
func argIs(a any, s string) bool {
	t, ok := argkind.Text(a)
	return ok && strings.EqualFold(t, s)
}

// PrefixArgs returns a copy of args with prefix added to the arguments at the
// positions at (ascending) and extra appended, or args itself when there is nothing to
// change. The copy holds the arguments' text rather than the arguments, so that the
// caller's arguments do not escape to the heap on every command.
func PrefixArgs(args []any, prefix string, at []int, extra []any) ([]any, error) {
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

// EscapeGlob makes a literal string safe inside a SCAN MATCH pattern.
func EscapeGlob(s string) string {
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
