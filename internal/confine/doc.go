// Package confine holds the rules that keep a command within what a client allows
// when it shares its connections between callers and may have a key prefix: the
// commands that would change a shared connection's state (ConnState), those that
// reach keys no prefix can confine (Unconfinable), and the rewriting of arguments
// under a prefix (PrefixArgs, EscapeGlob).
//
// It says what is wrong and leaves the error to the caller: package respire types it
// (respire.ErrConnState, respire.ErrNotConfined). ConnState runs on every command, so
// it does not allocate for a command it lets through.
//
// # Concurrency
//
// The functions are pure and safe to call from any goroutine. The package starts no
// goroutines.
package confine
