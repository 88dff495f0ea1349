// Package conn is one physical connection to a Redis or Valkey server: dial, TLS, the
// HELLO handshake with its RESP2 fallback, pipelined use from many goroutines, RESP3
// push dispatch, the connection's identity (CLIENT ID) and its own capability memory,
// with the script digests its server gave where this process may not compute SHA-1
// (ScriptDigest).
//
// Every command on a Conn is in one of three states: queued (encoded in the write
// buffer, not yet handed to the socket), written (it may have run), or replied. A caller
// whose context ends gets a *CallError at once that says which: errors.Is(err,
// ErrNotSent) when the command was still queued (its bytes are removed from the buffer:
// it will never run), errors.Is(err, ErrOutcomeUnknown) when it was written (its reply
// is read later and dropped, so the connection stays in sync). Both also match the
// context's error. Locks depend on this distinction to decide whether a renewal or
// release must be cut off (CLIENT KILL).
//
// Credentials come from Options (Username, Password) or from a provider asked at each
// dial (Options.Credentials), and Reauth changes them on a live connection: its AUTH
// is pipelined in order with the connection's traffic, and kept out of a transaction
// opened with MULTI on it until the EXEC or DISCARD that ends it (a refused MULTI opens
// none, a refused DISCARD ends none; requests taken back before they were written are
// replayed out of the count: auth.go). Options.OnConnect runs once
// the handshake is done, before Dial returns; Options.Observer is told of dials,
// failures, losses and re-authentications, and never of commands.
//
// Any I/O or protocol error breaks the connection for good: the socket is closed,
// every waiting caller gets the error (as not sent or outcome unknown, by state) and
// Err reports it. Owners (pools, clients) replace broken connections.
//
// # Concurrency
//
// All methods are safe for concurrent use. Each Conn owns two goroutines, started by
// Dial: a writer that takes everything queued since its last write and writes it in one
// call, and a reader that decodes replies and matches them to requests in write order.
// Both stop when the connection breaks or Close is called; Close waits for them. The
// push handler runs on the reader goroutine, or on the goroutine of a CatchUp that
// found pushes received and nobody handing them on (catchup.go): one frame at a time,
// in the order of the stream, whichever goroutine it is. A caller may do the I/O itself instead
// (pipeline.go): a sequential caller writes and reads its own reply, polling the socket
// briefly before it parks (spin.go), and a caller with batches for several servers
// writes each with StartEncoded and then collects each with Pending.Wait (one command
// each: StartWith, Pending.Reply), the writes on its own goroutine and the reads left
// to each connection's reader (pending.go). One context at a time is watched with
// context.AfterFunc (watch.go); its callback runs on a goroutine of the context
// package when the context ends, and the watcher is dropped when the connection
// breaks.
package conn
