// Package redisurl reads the text of a Redis URL (redis://, rediss://, and their
// +sentinel and +cluster forms) into the settings it names. It knows the URL forms
// and nothing of the client: package respire maps a Config into its Options and
// checks them as it checks any Options (respire.ParseURL).
//
// Errors say what is wrong with the URL, without a sentinel to match: the caller
// types them (respire.ErrInvalidURL). Neither an error nor anything else this package
// returns shows a password.
//
// # Concurrency
//
// The functions are pure and safe to call from any goroutine. The package starts no
// goroutines.
package redisurl
