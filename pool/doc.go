// Package pool keeps a bounded set of connections for callers that need one to
// themselves for a while: blocking commands (BLPOP, XREAD BLOCK), transactions
// (WATCH/MULTI/EXEC) and RESP2 pub/sub. Ordinary commands share a pipelined connection
// and do not come here.
//
// A [Pool] is generic over the connection type, which needs only the three methods of
// [Conn]; *conn.Conn provides them. At most [Options].Size connections are open at once,
// counting those checked out, those idle in the pool and those being dialled.
//
// [Pool.Get] hands out the most recently returned idle connection (LIFO, so a quiet pool
// lets its least used connections age out), dials a new one while under Size, or else
// waits first-in first-out until a connection is returned or its context ends. A wait
// ended by the context fails with an [*ExhaustedError] that says how full the pool was
// and matches both [ErrExhausted] and the context's error.
//
// A connection goes back with [Pool.Put], or [Pool.Discard] when the caller knows it is
// no longer usable. A connection whose Err method reports an error is never handed out
// again: Put closes it and frees its slot. Connections past [Options].MaxLifetime or idle
// longer than [Options].MaxIdleTime are closed rather than handed out, and an idle
// connection older than [Options].HealthCheckAfter is pinged before it is handed out.
//
// # Concurrency
//
// Every method of [Pool] is safe for concurrent use. Get, Put and Discard never start a
// goroutine; dialling and health checks run on the caller's goroutine with the caller's
// context, and no lock is held while they run or while a connection is closed.
//
// The pool owns at most one goroutine. [New] starts it only when [Options].MinIdle or
// [Options].MaxIdleTime is set; it wakes on a ticker (every min(MaxIdleTime/2, 1s)) and
// whenever a checkout leaves fewer than MinIdle idle connections, closes expired idle
// connections and dials up to MinIdle idle ones. [Pool.Close] cancels the context that
// goroutine dials with, and waits for it to exit before returning.
package pool
