package resp

import (
	"errors"
	"strconv"
	"strings"
)

var (
	// ErrNull is returned by Value accessors called on a null reply.
	ErrNull = errors.New("resp: null reply")
	// ErrProtocol matches every *ProtocolError.
	ErrProtocol = errors.New("resp: protocol error")
	// ErrLimit is wrapped by a *ProtocolError when a frame exceeds a configured limit
	// (bulk length, nesting depth, aggregate length, line length).
	ErrLimit = errors.New("resp: limit exceeded")
	// ErrEmptyCommand is returned when a command has no name.
	ErrEmptyCommand = errors.New("resp: empty command")
	// ErrInvalidArg is matched by every *ArgError.
	ErrInvalidArg = errors.New("resp: invalid argument")

	errOddArray = errors.New("odd number of elements")
	errMapKey   = errors.New("a key that is not text")
)

// ServerError is an error reply sent by the server. Code is its first word, the prefix
// Redis uses to classify errors: "ERR", "WRONGTYPE", "NOPERM", "MOVED", "ASK",
// "NOSCRIPT", "READONLY", ...
type ServerError struct {
	Code string // the first word of Msg
	Msg  string // the whole message as the server sent it, without "-" and CRLF
}

// NewServerError returns the *ServerError for a server's error message.
func NewServerError(msg string) *ServerError {
	code := msg
	if i := strings.IndexByte(msg, ' '); i >= 0 {
		code = msg[:i]
	}
	return &ServerError{Code: code, Msg: msg}
}

// Error returns the message as the server sent it.
func (e *ServerError) Error() string { return e.Msg }

// Redirect is a Cluster redirection carried by a MOVED or ASK error.
type Redirect struct {
	Ask  bool   // ASK (one command on Addr) rather than MOVED (the slot's new owner)
	Slot int    // the hash slot
	Addr string // host:port of the node to ask
}

// Redirect parses a MOVED or ASK error ("MOVED 3999 127.0.0.1:6381").
func (e *ServerError) Redirect() (Redirect, bool) {
	if e.Code != "MOVED" && e.Code != "ASK" {
		return Redirect{}, false
	}
	f := strings.Fields(e.Msg)
	if len(f) != 3 {
		return Redirect{}, false
	}
	slot, err := strconv.Atoi(f[1])
	if err != nil || slot < 0 || slot > 16383 {
		return Redirect{}, false
	}
	return Redirect{Ask: e.Code == "ASK", Slot: slot, Addr: f[2]}, true
}

// HasCode reports whether err is, or wraps, a *ServerError with the given code.
func HasCode(err error, code string) bool {
	se, ok := AsServerError(err)
	return ok && se.Code == code
}

// ProtocolError reports a malformed or over-limit frame. The connection that read it
// cannot be trusted afterwards.
type ProtocolError struct {
	Reason string
	Err    error // ErrLimit for limit violations, else nil or an underlying cause
}

func (e *ProtocolError) Error() string {
	if e.Err != nil && !errors.Is(e.Err, ErrLimit) {
		return "resp: protocol error: " + e.Reason + ": " + e.Err.Error()
	}
	return "resp: protocol error: " + e.Reason
}

// Is makes every *ProtocolError match ErrProtocol.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// Unwrap returns the cause, ErrLimit for limit violations.
func (e *ProtocolError) Unwrap() error { return e.Err }

// TypeError reports an accessor called on a value of another kind.
type TypeError struct {
	Kind Kind   // the value's kind
	Want string // what the accessor needs
	Err  error  // parse error, if the kind fit but the text did not
}

func (e *TypeError) Error() string {
	s := "resp: cannot read " + e.Kind.String() + " as " + e.Want
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the parse error, if any.
func (e *TypeError) Unwrap() error { return e.Err }

// ArgError reports a command argument that cannot be encoded.
type ArgError struct {
	Index  int    // position in the command, 0 being the name
	Reason string // such as "unsupported type map[string]int" or "nil argument"
}

func (e *ArgError) Error() string {
	return "resp: argument " + strconv.Itoa(e.Index) + ": " + e.Reason
}

// Is makes every *ArgError match ErrInvalidArg.
func (e *ArgError) Is(target error) bool { return target == ErrInvalidArg }
