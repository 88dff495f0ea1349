// Package script is a Lua script as Respire runs it: by the SHA-1 digest EVALSHA
// takes, then by its source (EVAL) after NOSCRIPT.
//
// The digest is computed on first use, never at init, and only where this process may
// compute SHA-1: in FIPS 140-only mode (GODEBUG=fips140=only) crypto/sha1 panics, so
// there each connection's server gives it instead (conn.Conn.ScriptDigest, SCRIPT
// LOAD), once per connection.
//
// # Concurrency
//
// A Script is safe for concurrent use. The package starts no goroutines.
package script
