package route

import (
	"errors"

	"github.com/respire/respire/conn"
)

// The errors a router returns. Package respire exports each under its own name
// (respire.ErrClosed is ErrClosed), so errors.Is matches them on either side of the
// package boundary; the messages carry the public package's prefix for that reason.
var (
	ErrClosed           = errors.New("respire: client closed")
	ErrInvalidOptions   = errors.New("respire: invalid options")
	ErrCrossSlot        = errors.New("respire: keys in different cluster slots")
	ErrTooManyRedirects = errors.New("respire: too many cluster redirections")
	ErrClusterDown      = errors.New("respire: cluster slot not served")
	ErrPerNode          = errors.New("respire: command answers per node on a cluster")
)

// partlyRanError is the error of a batch split by node, or of a fan-out to every
// master, of which one part failed after another was written. partlyRan wraps it in
// the written conn.CallError, since the call as a whole may have run: it matches
// conn.ErrOutcomeUnknown and conn.WasWritten like any written call, and never
// conn.ErrNotSent, which would tell the caller it may send it all again. The failed
// parts' errors stay matchable (errors.Is finds their causes: a refused dial,
// ErrClosed, a context's end), a not-sent part's by its cause alone.
type partlyRanError struct {
	err    error   // for the text
	causes []error // the parts' errors, a not-sent part's by its cause
}

// partlyRan returns err, the error of a call some part of which was written before
// it failed, as a written conn.CallError of a partlyRanError.
func partlyRan(err error, parts ...error) error {
	causes := make([]error, 0, len(parts))
	for _, p := range parts {
		var ce *conn.CallError
		if errors.As(p, &ce) && !ce.Written {
			p = ce.Err
		}
		causes = append(causes, p)
	}
	return &conn.CallError{Written: true, Err: &partlyRanError{err: err, causes: causes}}
}

func (e *partlyRanError) Error() string { return e.err.Error() }

// Unwrap returns the parts' errors, without their not-sent marks.
func (e *partlyRanError) Unwrap() []error { return e.causes }
