package emulator

import (
	"math"
	"strings"
	"time"
)

// Error texts the emulated commands reply with, as the real servers word them.
const (
	errSyntax     = "ERR syntax error"
	errNotInteger = "ERR value is not an integer or out of range"
	errExpireTime = "ERR invalid expire time in 'set' command"
	errNoAuth     = "NOAUTH Authentication required."
	errExecAbort  = "EXECABORT Transaction discarded because of previous errors."
)

// digestNotEmulated is the emulator's own error for SET with IFDEQ or IFDNE, whose
// XXH3 digests it does not compute.
func digestNotEmulated(cond string) string {
	return "ERR emulator: SET " + cond + " (digest conditions) is not emulated"
}

// wrongArgs is the arity error of the named (lower-case) command.
func wrongArgs(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// emulated is the plan for one command the profile implements on top of the backend:
// which permission it needs, which error it reports without running, or which script
// runs it.
type emulated struct {
	name string   // lower-case name for error texts: "set", "delex", "delifeq"
	perm []string // the backend command whose ACL permission it needs (SET key value …, DEL key)

	// arityErr is an error found before authentication and ACL checks, as the server
	// checks arity first (inside MULTI it is a queue-time error).
	arityErr string
	// execErr is an error the command itself reports once authentication and ACL
	// have passed (syntax, expire time): nothing runs.
	execErr string

	script *script
	keys   []string
	argv   []string

	// asking: the client sent ASKING just before (Cluster), so the script runs after
	// an ASKING of its own.
	asking bool
}

// plan returns the emulation of args under the profile, or nil when the command goes
// to the backend unchanged (including every command the profile does not know: the
// backend's unknown-command error is the same text on all four servers).
func (f *features) plan(args [][]byte) *emulated {
	if f.passThrough() || len(args) == 0 {
		return nil
	}
	if msg, ok := f.redis6Refusal(args); ok {
		// Refused before it runs, as an arity error is (inside MULTI too, where Redis
		// 6.0 would queue it and fail it at EXEC: a simplification).
		return &emulated{name: strings.ToLower(upper(args[0])), arityErr: msg}
	}
	switch upper(args[0]) {
	case "SET":
		return f.planSet(args)
	case "DELEX":
		if f.delex {
			return planDelex(args)
		}
	case "DELIFEQ":
		if f.delifeq {
			return planDelifeq(args)
		}
	}
	return nil
}

// hasSetCondition reports whether a SET carries a condition the profile knows, walking
// the options as the server does so that "EX IFEQ" is not mistaken for one.
func (f *features) hasSetCondition(args [][]byte) bool {
	for i := 3; i < len(args); i++ {
		switch opt := upper(args[i]); {
		case f.isSetCondition(opt):
			return true
		case opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT":
			i++ // its argument
		}
	}
	return false
}

// setCommand is a parsed SET with a condition.
type setCommand struct {
	cond, cmp     string
	nx, xx, get   bool
	keepTTL       bool
	expOpt, expIn string // EX/PX/EXAT/PXAT and its argument
}

// planSet emulates SET when it carries a condition; a SET without one goes to the
// backend.
func (f *features) planSet(args [][]byte) *emulated {
	if len(args) < 3 || !f.hasSetCondition(args) {
		return nil
	}
	e := &emulated{name: "set", perm: strs(args), keys: []string{string(args[1])}}
	c, ok := f.parseSet(args)
	switch {
	case !ok:
		e.execErr = errSyntax
	case c.cond == "IFDEQ" || c.cond == "IFDNE":
		e.execErr = digestNotEmulated(c.cond)
	default:
		e.execErr = c.checkExpiry(time.Now())
	}
	if e.execErr != "" {
		return e
	}
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	e.script = setConditionScript
	e.argv = []string{string(args[2]), c.cond, c.cmp, flag(c.nx), flag(c.get)}
	switch {
	case c.expOpt != "":
		e.argv = append(e.argv, c.expOpt, c.expIn)
	case c.keepTTL:
		e.argv = append(e.argv, "KEEPTTL")
	}
	return e
}

// parseSet parses SET's options by the rules of Redis 7, plus the conditions: on Redis
// 8.4 (8.6.3) a condition after NX or XX is a syntax error but NX or XX after a
// condition is not, and a second condition replaces the first; Valkey rejects every
// such combination.
func (f *features) parseSet(args [][]byte) (c setCommand, ok bool) {
	for i := 3; i < len(args); i++ {
		opt := upper(args[i])
		hasNext := i+1 < len(args)
		switch {
		case opt == "NX":
			if c.xx || (f.exclusiveIfeq && c.cond != "") {
				return c, false
			}
			c.nx = true
		case opt == "XX":
			if c.nx || (f.exclusiveIfeq && c.cond != "") {
				return c, false
			}
			c.xx = true
		case f.isSetCondition(opt):
			if !hasNext || c.nx || c.xx || (f.exclusiveIfeq && c.cond != "") {
				return c, false
			}
			c.cond, c.cmp = opt, string(args[i+1])
			i++
		case opt == "GET":
			c.get = true
		case opt == "KEEPTTL":
			if c.expOpt != "" {
				return c, false
			}
			c.keepTTL = true
		case opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT":
			if !hasNext || c.keepTTL || c.expOpt != "" {
				return c, false
			}
			c.expOpt, c.expIn = opt, string(args[i+1])
			i++
		default:
			return c, false
		}
	}
	return c, true
}

// checkExpiry validates the expiry argument as Redis 7 does before touching the key,
// returning its error text or "".
func (c *setCommand) checkExpiry(now time.Time) string {
	if c.expOpt == "" {
		return ""
	}
	n, ok := parseRedisInt(c.expIn)
	if !ok {
		return errNotInteger
	}
	seconds := c.expOpt == "EX" || c.expOpt == "EXAT"
	if n <= 0 || (seconds && n > math.MaxInt64/1000) {
		return errExpireTime
	}
	if seconds {
		n *= 1000
	}
	if c.expOpt == "EX" || c.expOpt == "PX" {
		if n > math.MaxInt64-now.UnixMilli() {
			return errExpireTime
		}
	}
	return ""
}

// planDelex emulates Redis 8.4's DELEX key [IFEQ v | IFNE v | IFDEQ d | IFDNE d].
func planDelex(args [][]byte) *emulated {
	e := &emulated{name: "delex"}
	switch len(args) {
	case 1:
		e.arityErr = wrongArgs("delex") // below the declared arity (-2)
		return e
	case 2, 4:
	default:
		e.execErr = wrongArgs("delex") // DELEX's own check, before the key lookup
	}
	key := string(args[1])
	e.perm = []string{"DEL", key}
	if e.execErr != "" {
		return e
	}
	e.script, e.keys = delexScript, []string{key}
	if len(args) == 4 {
		e.argv = []string{upper(args[2]), string(args[3])}
	} else {
		e.argv = []string{"", ""}
	}
	return e
}

// planDelifeq emulates Valkey 9.0's DELIFEQ key value.
func planDelifeq(args [][]byte) *emulated {
	e := &emulated{name: "delifeq"}
	if len(args) != 3 {
		e.arityErr = wrongArgs("delifeq") // declared arity 3
		return e
	}
	key := string(args[1])
	e.perm = []string{"DEL", key}
	e.script, e.keys, e.argv = delifeqScript, []string{key}, []string{string(args[2])}
	return e
}

// parseRedisInt parses a decimal int64 as Redis's string2ll does: no sign but a
// leading '-', no leading zeros, no spaces.
func parseRedisInt(s string) (int64, bool) {
	if s == "0" {
		return 0, true
	}
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] < '1' || digits[0] > '9' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(digits); i++ {
		d := digits[i]
		if d < '0' || d > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-uint64(d-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return int64(-n), true // -(1<<63) wraps to itself, which is MinInt64
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

// upper returns an argument upper-cased, for matching command names and options.
func upper(b []byte) string { return strings.ToUpper(string(b)) }

// strs converts arguments to strings.
func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}
