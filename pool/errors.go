package pool

import (
	"errors"
	"strconv"
)

var (
	// ErrClosed is returned by Get once the pool is closed, including to callers that
	// were waiting when Close was called.
	ErrClosed = errors.New("pool: closed")
	// ErrExhausted is matched by every *ExhaustedError: a Get waited for a connection
	// and its context ended first.
	ErrExhausted = errors.New("pool: exhausted")
	// ErrInvalidOptions is matched by every error New returns for bad Options.
	ErrInvalidOptions = errors.New("pool: invalid options")
)

// ExhaustedError is returned by Get when every connection was in use and the caller's
// context ended while it waited for one. It records how full the pool was at that
// moment, so the message tells a too-small pool from a leak or a slow server.
//
// It matches ErrExhausted and Err with errors.Is, so callers can test for
// context.DeadlineExceeded or context.Canceled as for any other context error.
type ExhaustedError struct {
	Size    int   // Options.Size: the most connections open at once
	InUse   int   // connections checked out or being dialled
	Waiters int   // Get calls waiting, this one included
	Err     error // the context's error: context.DeadlineExceeded or context.Canceled
}

// Error returns a message such as
// "pool: exhausted: all 10 connections in use, 3 waiting: context deadline exceeded".
func (e *ExhaustedError) Error() string {
	b := make([]byte, 0, 96)
	b = append(b, "pool: exhausted: "...)
	if e.InUse >= e.Size {
		b = append(b, "all "...)
		b = strconv.AppendInt(b, int64(e.Size), 10)
	} else {
		b = strconv.AppendInt(b, int64(e.InUse), 10)
		b = append(b, " of "...)
		b = strconv.AppendInt(b, int64(e.Size), 10)
	}
	b = append(b, " connections in use, "...)
	b = strconv.AppendInt(b, int64(e.Waiters), 10)
	b = append(b, " waiting"...)
	if e.Err != nil {
		b = append(b, ": "...)
		b = append(b, e.Err.Error()...)
	}
	return string(b)
}

// Unwrap returns ErrExhausted and Err, so errors.Is matches either.
func (e *ExhaustedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrExhausted}
	}
	return []error{ErrExhausted, e.Err}
}
