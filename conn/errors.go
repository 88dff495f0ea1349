package conn

import (
	"errors"
	"strings"
)

var (
	// ErrNotSent is matched by the error of a command whose bytes never reached the
	// socket: it did not run and will not run.
	ErrNotSent = errors.New("conn: command not sent")
	// ErrOutcomeUnknown is matched by the error of a command that was written (or was
	// being written) but whose reply was not received: it may have run.
	ErrOutcomeUnknown = errors.New("conn: command outcome unknown")
	// ErrClosed is the cause when a connection was closed by its owner.
	ErrClosed = errors.New("conn: closed")
	// ErrUnexpectedReply is the cause when the server sends a reply nobody asked for;
	// the connection is out of sync and is closed.
	ErrUnexpectedReply = errors.New("conn: reply without a request")
	// ErrInvalidOptions is matched by errors from Dial for unusable options, and from
	// calls given impossible arguments (DoEncoded, DoConfirmed).
	ErrInvalidOptions = errors.New("conn: invalid options")
	// ErrCredentials is matched by the error of a dial whose Options.Credentials
	// failed (the provider's error is matched too) or gave no password; nothing was
	// dialled.
	ErrCredentials = errors.New("conn: credentials provider failed")
	// ErrNoPassword is matched, with ErrCredentials, by the error of a dial (or of a
	// respire.Client's re-authentication) whose credentials provider answered with
	// credentials without a password and no error: they would authenticate nothing,
	// and the ones in use would run out unnoticed.
	ErrNoPassword = errors.New("conn: credentials without a password")
	// ErrReauthPubSub is the error of Reauth on a RESP2 connection in pub/sub mode,
	// where the server refuses AUTH; nothing was sent.
	ErrReauthPubSub = errors.New("conn: cannot re-authenticate a RESP2 connection in pub/sub mode")
	// ErrBadDigest is matched by the error of ScriptDigest when SCRIPT LOAD answered
	// something other than a script digest (40 hexadecimal digits); nothing is
	// remembered and the script did not run.
	ErrBadDigest = errors.New("conn: SCRIPT LOAD did not answer a script digest")
)

// stepError is the error of a step of a dial after the connection was made (the
// handshake, OnConnect). The dial's caller sent no command of its own, so a command
// of the step that got no reply is told by its cause alone ("EOF", not "outcome
// unknown"); errors.Is and errors.As still find the *CallError.
type stepError struct {
	step string // "handshake with"
	addr string
	err  error
}

func (e *stepError) Error() string {
	cause := e.err
	var ce *CallError
	if errors.As(cause, &ce) {
		cause = ce.Err
	}
	return "conn: " + e.step + " " + e.addr + ": " + cause.Error()
}

func (e *stepError) Unwrap() error { return e.err }

// CallError is returned for a command that did not get its reply: the caller gave up
// (Err is the context's error) or the connection broke (Err is the I/O or protocol
// error). Written says whether the command's bytes may have reached the server;
// errors.Is matches ErrOutcomeUnknown when it did and ErrNotSent when it did not.
type CallError struct {
	Written bool
	Err     error
}

func (e *CallError) Error() string {
	// A cause from this package (a dial, a handshake) carries our prefix: say it once.
	cause := strings.TrimPrefix(e.Err.Error(), "conn: ")
	if e.Written {
		return "conn: command outcome unknown (it was written): " + cause
	}
	return "conn: command not sent: " + cause
}

// Is matches ErrNotSent or ErrOutcomeUnknown by Written.
func (e *CallError) Is(target error) bool {
	switch target {
	case ErrNotSent:
		return !e.Written
	case ErrOutcomeUnknown:
		return e.Written
	}
	return false
}

// Unwrap returns the cause: the context's error, an I/O error or a protocol error.
func (e *CallError) Unwrap() error { return e.Err }

// WasWritten reports whether err says a command may have reached the server. Errors
// that are not *CallError (server replies, argument errors) say nothing about it and
// give false; a server error reply means the command was both written and answered.
func WasWritten(err error) bool {
	var ce *CallError
	return errors.As(err, &ce) && ce.Written
}
