package command

// IsBlocking reports whether the command in args may block server-side, so that it
// needs a connection of its own rather than a shared, pipelined one: BLPOP, BRPOP,
// BRPOPLPUSH, BLMOVE, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, WAIT, WAITAOF, and XREAD or
// XREADGROUP with a BLOCK option.
//
// The table's FlagBlocking is right for the list and sorted-set commands but not for
// the rest, so those are hand rules:
//   - XREAD and XREADGROUP carry FlagBlocking whether or not they block; they block
//     only with a BLOCK option, found by walking the options as the server does.
//   - WAIT (and WAITAOF, new in Redis 7.2) holds the caller until replicas (or the AOF)
//     acknowledge, yet has no blocking flag. They are matched by name, so a table from
//     a server without WAITAOF still knows it.
//
// Pub/sub commands (SUBSCRIBE and the rest) and MONITOR are not blocking: they change
// the connection's mode, which the client handles by kind (FlagPubsub), not by
// waiting.
func IsBlocking(args []any) bool {
	if len(args) == 0 {
		return false
	}
	var buf [maxNameLen]byte
	n, ok := lowerArg(&buf, args[0])
	if !ok || n == 0 || !blockingInitial[buf[0]] {
		return false // most commands, without the table lookup
	}
	if block, decided := blockingByName(string(buf[:n]), args); decided {
		return block
	}
	info, ok := commands[string(buf[:n])]
	return ok && info.Flags&FlagBlocking != 0
}

// InfoIsBlocking is IsBlocking for a command whose entry the caller has looked up
// already (info; nil when it has none, and then the name decides, as for IsBlocking):
// the same hand rules by the entry's name, and else the entry's own FlagBlocking, so
// that an entry the client learned from COMMAND INFO (a module's blocking command) is
// taken as it says.
func InfoIsBlocking(info *Info, args []any) bool {
	if info == nil {
		return IsBlocking(args)
	}
	if block, decided := blockingByName(info.Name, args); decided {
		return block
	}
	return info.Flags&FlagBlocking != 0
}

// blockingByName applies the hand rules to the command args of lower-case name: for
// the commands whose blocking flag does not tell, whether it blocks (decided); for any
// other command, decided is false.
func blockingByName(name string, args []any) (block, decided bool) {
	switch name {
	case "wait", "waitaof":
		return true, true
	case "xread":
		streams, block := xreadOptions(args, false)
		return block && streams > 0, true
	case "xreadgroup":
		streams, block := xreadOptions(args, true)
		return block && streams > 0, true
	}
	return false, false
}

// xreadOptions walks the options of XREAD [COUNT n] [BLOCK ms] STREAMS ... or
// XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS ... the way the server's
// xreadCommand does: options in any order, each followed by its values. It returns the
// index of the STREAMS option, or 0 when the options are malformed (the server then
// replies with an error and neither blocks nor touches a key), and whether a BLOCK
// option came before it.
func xreadOptions(args []any, group bool) (streams int, block bool) {
	for i := 1; i < len(args); i++ {
		more := len(args) - 1 - i
		a := args[i]
		switch {
		case argIsKeyword(a, "BLOCK") && more >= 1:
			block = true
			i++
		case argIsKeyword(a, "COUNT") && more >= 1:
			i++
		case argIsKeyword(a, "STREAMS") && more >= 1:
			return i, block
		case group && argIsKeyword(a, "GROUP") && more >= 2:
			i += 2
		case group && argIsKeyword(a, "NOACK"):
		default:
			return 0, block
		}
	}
	return 0, block
}

// blockingInitial marks the first letters of the commands IsBlocking may report: this
// runs on every command, and a GET or SET is then told apart by one array load instead
// of a map lookup.
var blockingInitial = func() (set [256]bool) {
	for _, name := range []string{"wait", "waitaof", "xread", "xreadgroup"} {
		set[name[0]] = true
	}
	for name, info := range commands {
		if info.Flags&FlagBlocking != 0 {
			set[name[0]] = true
		}
	}
	return set
}()
