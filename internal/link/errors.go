package link

import "errors"

// ErrPanicked is the error a CommandEnd or BatchEnd carries for a call that panicked
// on the caller's goroutine before it returned (an observer's, or an argument's
// method): its outcome is unknown. Package respire's command events carry it too.
var ErrPanicked = errors.New("respire: the call panicked before it returned")
