package route

import "errors"

// The errors a router returns. Package respire exports each under its own name
// (respire.ErrClosed is ErrClosed), so errors.Is matches them on either side of the
// package boundary; the messages carry the public package's prefix for that reason.
var (
	ErrClosed           = errors.New("respire: client closed")
	ErrInvalidOptions   = errors.New("respire: invalid options")
	ErrCrossSlot        = errors.New("respire: keys in different cluster slots")
	ErrTooManyRedirects = errors.New("respire: too many cluster redirections")
	ErrClusterDown      = errors.New("respire: cluster slot not served")
)
