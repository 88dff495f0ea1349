// Package resp is a pure codec for the Redis serialization protocol, RESP2 and RESP3:
// functions over bytes, with no sockets, timeouts, retries or other policy.
//
// Decoding: a Reader reads one Value at a time from a *bufio.Reader. Every RESP3 type
// is understood, attributes included (they ride on the value they precede), as are
// RESP2's null bulk string and null array. Every declared length, the nesting depth
// and the memory the reply will hold are checked against Limits before anything is
// allocated, and buffers grow only as bytes actually arrive, so a corrupt or hostile
// frame costs a *ProtocolError rather than a panic or a huge allocation.
//
// Encoding: AppendCommand, AppendArg and friends append to a caller's buffer in the
// style of strconv.Append*, without allocating when the buffer has room. AppendValue
// writes any Value in its wire form, for test servers and round trips.
//
// Errors: a server's error reply is a Value until asked (Value.Err), then a
// *ServerError with its code and, for MOVED and ASK, a parsed Redirect. Malformed input
// is a *ProtocolError, a bad command argument an *ArgError; sentinels match with
// errors.Is. Which error a server sent, where the client's decisions depend on it
// (an unknown command or subcommand, a syntax error, NOSCRIPT, cluster support
// disabled), is recognised by the Is* functions of classify.go in every server
// generation's wording, and nowhere else.
//
// # Concurrency
//
// A Reader is not safe for concurrent use: one goroutine reads a stream at a time, as
// with the bufio.Reader beneath it. Values are immutable once decoded and may be shared
// freely. The Append functions are pure and safe to call from any goroutine on distinct
// buffers. The package starts no goroutines.
package resp
