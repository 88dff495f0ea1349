package resp

import (
	"errors"
	"strings"
)

// Error classification. Some decisions of the client depend on which error a server
// sent, not only on its code: an unknown command proves the command did not run (so a
// fallback may be sent), an unknown CLUSTER SHARDS means the topology has to come from
// CLUSTER SLOTS. The texts differ between server generations (Redis 6.x quotes names
// with backticks, Redis 8.6 drops the argument list when there are no arguments, Redis
// 6.x words unknown subcommands differently), so they are recognised here, once, from
// the replies recorded in SERVER-REPLIES.md ("Error shapes across server generations"),
// and nowhere else in the library.

// The fixed parts of the recognised messages.
const (
	unknownCommandPrefix = "ERR unknown command "
	unknownCommandArgs   = ", with args beginning with:"
	unknownSubPrefix     = "ERR unknown subcommand "                                  // Redis 7.0+, Valkey
	unknownSubPrefix6    = "ERR Unknown subcommand or wrong number of arguments for " // Redis 5.0, 6.x
	syntaxError          = "ERR syntax error"
	clusterDisabled      = "ERR This instance has cluster support disabled"
	noSuchClient         = "ERR No such client"
)

// AsServerError returns the *ServerError err is or wraps, and whether there is one: an
// error reply, as opposed to a failure of the connection or of the call. It is
// errors.As for the error type callers ask about after every reply, without the
// allocation errors.As costs for its target in the common cases: a nil err, and an
// error reply returned as is rather than wrapped.
func AsServerError(err error) (*ServerError, bool) {
	if err == nil {
		return nil, false
	}
	if se, ok := err.(*ServerError); ok {
		return se, true
	}
	var se *ServerError
	ok := errors.As(err, &se)
	return se, ok
}

// UnknownCommand returns the command name an unknown-command error names, as the
// server quoted it, and whether msg (a server error message, without "-") is one. It
// accepts every server generation's form:
//
//	ERR unknown command 'DELEX', with args beginning with: 'k' 'IFEQ' 'v'   (Redis 7.0+, Valkey)
//	ERR unknown command 'FOOBAR'                                             (Redis 8.6, no arguments)
//	ERR unknown command `DELEX`, with args beginning with: `k`, `IFEQ`,     (Redis 5.0, 6.x)
//
// The script error "ERR Unknown Redis command called from script" is not one: it says
// a script failed, not that the command the client sent is unknown.
func UnknownCommand(msg string) (name string, ok bool) {
	rest, ok := strings.CutPrefix(msg, unknownCommandPrefix)
	if !ok || rest == "" {
		return "", false
	}
	q := rest[0]
	if q != '\'' && q != '`' {
		return "", false
	}
	// The name ends at the first quote that the argument list follows (or at the
	// message's last byte), so a name that itself contains the quote is read whole.
	body := rest[1:]
	if i := strings.Index(body, string(q)+unknownCommandArgs); i >= 0 {
		return body[:i], true
	}
	if n := len(body); n > 0 && body[n-1] == q {
		return body[:n-1], true
	}
	return "", false
}

// IsUnknownCommand reports whether err is, or wraps, the server's unknown-command error
// for the command name (compared without regard to case), in any server generation's
// wording (see UnknownCommand). That error proves the command did not run.
func IsUnknownCommand(err error, name string) bool {
	se, ok := AsServerError(err)
	if !ok || se.Code != "ERR" {
		return false
	}
	got, ok := UnknownCommand(se.Msg)
	return ok && strings.EqualFold(got, name)
}

// UnknownSubcommand returns the container command and the subcommand an
// unknown-subcommand error names, and whether msg (a server error message, without
// "-") is one. It accepts every server generation's form:
//
//	ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.                                  (Redis 7.0+, Valkey)
//	ERR Unknown subcommand or wrong number of arguments for 'SHARDS'. Try CLUSTER HELP.  (Redis 5.0, 6.x)
//	ERR Unknown subcommand or wrong number of arguments for 'NO-EVICT'. Try CLIENT HELP  (Redis 6.x CLIENT)
//
// The Redis 5.0/6.x form is also that server's reply to a known subcommand with the
// wrong number of arguments; the two cannot be told apart, and either way the command
// did not run.
func UnknownSubcommand(msg string) (container, sub string, ok bool) {
	rest, ok := strings.CutPrefix(msg, unknownSubPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(msg, unknownSubPrefix6); !ok {
			return "", "", false
		}
	}
	// 'sub'. Try NAME HELP[.] — the subcommand is up to the last "'. Try ".
	const try = "'. Try "
	if len(rest) < 1 || rest[0] != '\'' {
		return "", "", false
	}
	i := strings.LastIndex(rest, try)
	if i < 1 {
		return "", "", false
	}
	sub = rest[1:i]
	tail := strings.TrimSuffix(rest[i+len(try):], ".")
	container, ok = strings.CutSuffix(tail, " HELP")
	if !ok || container == "" || strings.ContainsRune(container, ' ') {
		return "", "", false
	}
	return container, sub, true
}

// IsUnknownSubcommand reports whether err is, or wraps, the server's unknown-subcommand
// error for subcommand sub of container (both compared without regard to case), in any
// server generation's wording (see UnknownSubcommand). That error proves the command
// did not run.
func IsUnknownSubcommand(err error, container, sub string) bool {
	se, ok := AsServerError(err)
	if !ok || se.Code != "ERR" {
		return false
	}
	c, s, ok := UnknownSubcommand(se.Msg)
	return ok && strings.EqualFold(c, container) && strings.EqualFold(s, sub)
}

// IsSyntaxError reports whether err is, or wraps, the server's bare "ERR syntax error",
// the reply of every server generation to an option it does not know (SET … IFEQ before
// Redis 8.4 and Valkey 8.1): the command did not run.
func IsSyntaxError(err error) bool {
	se, ok := AsServerError(err)
	return ok && se.Msg == syntaxError
}

// IsClusterDisabled reports whether err is, or wraps, the reply of a server that is not
// a Cluster node to a CLUSTER subcommand ("ERR This instance has cluster support
// disabled").
func IsClusterDisabled(err error) bool {
	se, ok := AsServerError(err)
	return ok && se.Msg == clusterDisabled
}

// IsNoScript reports whether err is, or wraps, EVALSHA's NOSCRIPT error: the server
// does not have the script, nothing ran, and EVAL with the source may follow. Redis
// says "NOSCRIPT No matching script. Please use EVAL.", Valkey "NOSCRIPT No matching
// script."; only the code is relied on.
func IsNoScript(err error) bool { return HasCode(err, "NOSCRIPT") }

// IsNoSuchClient reports whether err is, or wraps, CLIENT KILL's "ERR No such client",
// its reply (in the old single-address form) when the connection is already gone.
func IsNoSuchClient(err error) bool {
	se, ok := AsServerError(err)
	return ok && se.Msg == noSuchClient
}

// IsLoading reports whether err is, or wraps, the LOADING error of a server still
// loading its dataset into memory after a start ("LOADING Redis is loading the dataset
// in memory"): the command did not run, and the data it would have found may be there
// once loading ends. Only the code is relied on.
func IsLoading(err error) bool { return HasCode(err, "LOADING") }
