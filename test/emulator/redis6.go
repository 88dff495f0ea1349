package emulator

import (
	"strings"

	"github.com/respire/respire/resp"
)

// The Redis 6.x profile (SERVER-REPLIES.md, "Error shapes across server generations").
// The backend is Redis 7, which knows more than Redis 6.0 and words some errors
// differently; the profile refuses what 6.0 lacks and rewords the backend's errors.

// Error texts of Redis 7 that Redis 6.x words differently.
const (
	redis7UnknownCommand = "ERR unknown command '"
	redis7WrongArgsSub   = "ERR wrong number of arguments for '"
	redis6NoPermSuffix   = " or its subcommand"
)

// redis6UnknownCommand is Redis 6.x's unknown-command error for args: the name and the
// arguments in backticks, each argument followed by a comma, the list cut once it
// reaches 128 bytes as the server cuts it.
func redis6UnknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command `")
	b.Write(args[0])
	b.WriteString("`, with args beginning with: ")
	n := 0
	for i := 1; i < len(args) && n < 128; i++ {
		a := args[i]
		if len(a) > 128-n {
			a = a[:128-n]
		}
		item := "`" + string(a) + "`, "
		b.WriteString(item)
		n += len(item)
	}
	return b.String()
}

// redis6UnknownSubcommand is Redis 6.x's error for an unknown subcommand, or a known one
// with the wrong number of arguments; CLIENT words it without the final period.
func redis6UnknownSubcommand(container string, sub []byte) string {
	msg := "ERR Unknown subcommand or wrong number of arguments for '" + string(sub) + "'. Try " + container + " HELP"
	if container != "CLIENT" {
		msg += "."
	}
	return msg
}

// redis6Refusal returns the error Redis 6.0 gives a command that the backend would run
// but 6.0 does not have; ok is false for every other command.
func (f *features) redis6Refusal(args [][]byte) (msg string, ok bool) {
	if !f.redis6 || len(args) == 0 {
		return "", false
	}
	switch upper(args[0]) {
	case "HELLO":
		if len(args) == 1 { // the protocol version is optional since 6.2
			return wrongArgs("hello"), true
		}
	case "CLIENT":
		if len(args) < 2 {
			break
		}
		switch upper(args[1]) {
		case "NO-EVICT": // 7.0
			return redis6UnknownSubcommand("CLIENT", args[1]), true
		case "PAUSE": // CLIENT PAUSE ms only: WRITE and ALL came in 6.2
			if len(args) != 3 {
				return redis6UnknownSubcommand("CLIENT", args[1]), true
			}
		}
	}
	return "", false
}

// redis6Reply rewrites the backend's reply to args as Redis 6.0 answers; ok is false
// when it stays as it is. CLUSTER SHARDS (7.0) is an unknown subcommand on a Cluster
// node; on a standalone server the backend's "cluster support disabled" is 6.0's too.
func (f *features) redis6Reply(args [][]byte, v resp.Value) (out []byte, ok bool) {
	if !f.redis6 || len(args) == 0 {
		return nil, false
	}
	msg, isErr := errorText(v)
	if !isErr {
		if len(args) > 1 && upper(args[0]) == "CLUSTER" && upper(args[1]) == "SHARDS" {
			return errorFrame(redis6UnknownSubcommand("CLUSTER", args[1])), true
		}
		return nil, false
	}
	if msg, ok := f.redis6Error(msg, args); ok {
		return errorFrame(msg), true
	}
	return nil, false
}

// redis6Error rewords a Redis 7 error message (without "-") as Redis 6.x words it.
func (f *features) redis6Error(msg string, args [][]byte) (string, bool) {
	switch {
	case strings.HasPrefix(msg, redis7UnknownCommand):
		return redis6UnknownCommand(args), true
	case len(args) > 1:
		if container, _, ok := resp.UnknownSubcommand(msg); ok {
			return redis6UnknownSubcommand(container, args[1]), true
		}
		// A subcommand's arity error names it "container|sub" on Redis 7; Redis 6 has
		// only its unknown-subcommand error for it.
		if rest, ok := strings.CutPrefix(msg, redis7WrongArgsSub); ok {
			if name, ok := strings.CutSuffix(rest, "' command"); ok && strings.Contains(name, "|") {
				container, _, _ := strings.Cut(name, "|")
				return redis6UnknownSubcommand(strings.ToUpper(container), args[1]), true
			}
		}
	}
	// NOPERM names the command alone, never the subcommand, and says so.
	if rest, ok := strings.CutPrefix(msg, redis7NoPermCmdPrefix); ok {
		if name, ok := strings.CutSuffix(rest, noPermCmdSuffix); ok {
			name, _, _ = strings.Cut(name, "|")
			return redis7NoPermCmdPrefix + name + noPermCmdSuffix + redis6NoPermSuffix, true
		}
	}
	return msg, false
}
