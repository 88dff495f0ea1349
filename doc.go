// Package respire is a Redis and Valkey client written from the wire up: its own
// RESP2/RESP3 codec (package resp), connections (conn), a pool (pool), and the Client
// in this package, which serves a standalone server and, through the same router seam,
// Cluster and Sentinel deployments.
//
//	c, err := respire.Connect(ctx, "redis://127.0.0.1:6379/0")
//	if err != nil { ... }
//	defer c.Close()
//	_, err = c.Do(ctx, "SET", "greeting", "hello", "PX", 30000)
//	v, err := c.Do(ctx, "GET", "greeting")
//	s, err := v.Text()
//
// Commands are built from plain arguments (string, []byte, integers, floats, bool);
// replies are resp.Value, with accessors (Text, Int, Float, Bool, Array, Map, IsNull).
// A server error reply is an error matching *resp.ServerError; a null is a value.
//
// Concurrent calls are pipelined on one shared connection (auto-pipelining): many
// goroutines' commands leave in one write and their replies are matched in order.
// Blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) and transactions (Watch) use
// dedicated pooled connections; subscriptions own a connection each. Commands that
// would change a shared connection's state (MULTI, SUBSCRIBE, SELECT, ...) are refused
// with ErrConnState.
//
// Every error that crosses the network says whether the command was sent: errors.Is
// with conn.ErrNotSent means it never reached the server; conn.ErrOutcomeUnknown means
// it may have run. The client retries on a fresh connection only what was not sent or
// is read-only, never after the caller's context ended.
//
// # Concurrency
//
// Client, Script and Subscription are safe for concurrent use; Pipeline and Tx belong
// to one goroutine. The client owns the goroutines of its connections (two each), the
// pool's maintenance goroutine when MinIdle or ConnMaxIdleTime is set, and one per
// Subscription; Client.Close and Subscription.Close stop them and wait for them.
package respire
