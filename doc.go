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
// Commands are built from plain arguments (string, []byte, integers, floats, bool, or
// named types of those kinds); replies are resp.Value, with accessors (Text, Int,
// Float, Bool, Array, Map, IsNull). A server error reply is an error matching
// *resp.ServerError; a null is a value.
//
// Concurrent calls are pipelined on one shared connection (auto-pipelining): many
// goroutines' commands leave in one write and their replies are matched in order.
// Blocking commands (BLPOP, XREAD BLOCK, WAIT, ...) and transactions (Watch) use
// dedicated pooled connections; subscriptions own a connection each. Commands that
// would change a shared connection's state (MULTI, SUBSCRIBE, SELECT, ...) are refused
// with ErrConnState.
//
// On a Redis Cluster (Options.Cluster, or a redis+cluster:// URL) the same Client
// routes every command by the hash slot of its keys, found with the command key table
// ({hash tags} respected, the key prefix included), follows MOVED and ASK
// redirections, retries TRYAGAIN and CLUSTERDOWN with a backoff, and refuses a
// command whose keys span slots with ErrCrossSlot before sending it. Keyless commands
// follow the server's command tips: those for every master (FLUSHALL, KEYS, DBSIZE,
// ...) or every node (CONFIG SET, SCRIPT LOAD, ...) go to each, their replies
// combined as the tips say, and those answered per node (INFO, ...) are refused with
// ErrPerNode. Scan walks every master, and batches are split by node.
//
// With Options.ClientSideCache, DoCached answers read commands of one key from memory
// and the server's invalidations (RESP3 client tracking) keep it honest; see package
// cache.
//
// Every error that crosses the network says whether the command was sent: errors.Is
// with conn.ErrNotSent means it never reached the server; conn.ErrOutcomeUnknown means
// it may have run. The client retries on a fresh connection only what was not sent or
// is read-only, never after the caller's context ended.
//
// # Errors
//
// A server's error reply matches *resp.ServerError (errors.As). The client's own
// errors are matched with errors.Is against the sentinels of errors.go, each
// documented there: [ErrClosed], [ErrInvalidOptions], [ErrInvalidURL], [ErrInvalidArg],
// [ErrConnState], [ErrTxFailed], [ErrTxSlotMoved], [ErrCrossSlot],
// [ErrTooManyRedirects], [ErrClusterDown], [ErrPerNode], [ErrUnknownKeys], [ErrNoCache],
// [ErrNotCacheable], [ErrNoTracking] and [ErrReauthPending].
//
// # Concurrency
//
// Client, Script and Subscription are safe for concurrent use; Pipeline and Tx belong
// to one goroutine. The client owns the goroutines of its connections (two each), the
// pool's maintenance goroutine when MinIdle or ConnMaxIdleTime is set, one per
// Subscription, with SentinelMaster the two of its sentinel.Monitor (failover
// watcher and rediscovery), and on a Cluster the topology refresher (and, while a
// DoMulti spanning several nodes runs, one goroutine per node); with
// Options.ClientSideCache, one goroutine per tracked connection (it flushes the cache
// when the connection is lost) and one while a tracked connection is being dialled;
// with Options.Credentials, the one that renews them on their schedule (internal/reauth)
// and one per connection while its re-authentication runs. Client.Close and
// Subscription.Close stop them and wait for them.
package respire
