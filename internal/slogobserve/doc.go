// Package slogobserve is the observe.Observer behind respire.Options.Logger: it writes
// the events an operator wants to read about to a *slog.Logger, and nothing per
// command.
//
// # Concurrency
//
// An Observer's methods are safe to call from any goroutine, as observe.Observer
// requires. The package starts no goroutines.
package slogobserve
