// Package lock provides single-key leases on Redis and Valkey: a lock is a key holding
// an owner token with a TTL. Acquisition is SET key token NX PX ttl; renewal and release
// compare the stored token first, so an expired handle can never extend or delete a
// later owner's lock.
//
//	locks := lock.New(client)
//	mu, ok, err := locks.TryAcquire(ctx, "locks:report", 30*time.Second)
//	if err != nil || !ok { ... }
//	defer mu.Close()
//
// # Commands per physical connection
//
// Renewal and release use the server's native compare commands where they exist, and
// Lua elsewhere, chosen per physical connection:
//
//	server          extension                         release
//	Redis 8.4+      SET key token IFEQ token PX ms    DELEX key IFEQ token
//	Valkey 8.1-8.x  SET key token IFEQ token PX ms    Lua compare-and-delete
//	Valkey 9.0+     SET key token IFEQ token PX ms    DELIFEQ key token
//	older           Lua compare-and-PEXPIRE           Lua compare-and-delete
//
// The first renewal on a connection tries SET ... IFEQ and falls back to Lua only after
// the exact reply "ERR syntax error"; release tries DELEX, then DELIFEQ, then Lua, each
// step only after the standard unknown-command error. Those replies prove the command
// did not run. What a connection learned is remembered on that connection only: a
// reconnect, another node or a failover destination discovers again. No INFO or
// COMMAND call is made. NOPERM, timeouts, cancellation, connection loss and other
// errors go back to the caller and never select another command; a command whose
// outcome is uncertain is never replayed. On a Cluster, a command redirected by MOVED or
// ASK (which means it did not run) is sent to the node the redirection names (the
// client's router follows it), and what its reply teaches is remembered on that node's
// connection: a lock whose slot moves is renewed and released through the
// redirection, and a cut-off goes to the node that carried the command. Scripts run by
// EVALSHA, then EVAL after NOSCRIPT; their digests are computed on first use, never at
// init, and in FIPS 140-only mode (GODEBUG=fips140=only), where SHA-1 may not be
// computed here, each connection's server gives them once (SCRIPT LOAD).
//
// ACLs must allow: SET for acquisition and native renewal; DELEX for native release on
// Redis 8.4+, DELIFEQ on Valkey 9.0+; EVALSHA and EVAL with GET, DEL and PEXPIRE for the
// Lua paths; GET for VerifyStillHeld and OwnerToken; CLIENT ID (or HELLO) and CLIENT
// KILL for cutting off uncertain commands. Permission denied never selects another path: widen the ACL when
// upgrading the server.
//
// # Cutting off uncertain commands
//
// A managed renewal (ResetExpiry, KeepAlive) or Release on a *Lock that is cancelled
// or times out after its command may have been written severs the connection that
// carried it: CLIENT KILL ID <its id>, sent on another connection, so nothing queued on
// it can run later; the lock counts as lost before the cut-off begins. The caller
// waits for the cut-off only while its context is live: a renewal or release bounded
// by a deadline returns by it, and the cut-off (up to five seconds when the server
// does not answer) goes on in the background. Those commands travel on the
// client's lock connections (a lane of the client's router: one per server,
// pipelined among locks), never on the shared connection other callers' commands
// use, so a cut-off fails lock traffic only. A Release that cannot be cut off while
// its connection is live travels on the shared connection instead, with the
// acquisitions: one whose context cannot end (its outcome is unknown only once its
// connection broke, which failed every command on it), and ReleaseBy with a
// deadline (never cut off). A renewal of another lock that dies with a severed
// connection was settled by the kill, and since a renewal can only extend its own
// token it is sent again on a fresh connection while the lease lasts, not reported as
// lost; so is a release that had not been written. If the user may not run CLIENT
// KILL, release is a plain compare-and-delete without cut-off. The raw-token calls
// (TryTake, ResetExpiry, Release, OwnerToken on the Locker) never sever.
//
// # Keep-alive and release
//
// A keep-alive renews whenever less than half the lease is left, counted from the
// lease's current expiry estimate: one started late in a lease renews at once, and a
// ResetExpiry while it runs moves both its next renewal and the deadline at which its
// context ends if no renewal succeeds. Release stops the renewals before the delete is
// sent and ends the keep-alive's context once the outcome is known: ErrReleased only
// for a released lock; a release that was not sent leaves the lock held and
// releasable, and the cause says ErrKeepAliveStopped. Concurrent releases share one;
// when the caller that sends it gives up before the delete was written, a joiner
// whose context is live sends it. Close is a no-op on a nil *Lock.
//
// The same keep-alive renews other leases: a Renewable kept by a Keeper, which package
// coordination's permits, read/write leases and Redlocks embed, so that every lease
// renews, and ends its context, by the same code.
//
// # Leases, not mutexes
//
// The lock disappears when its TTL ends, even if the work it protects goes on. Keep work
// shorter than the lease, or run it under a KeepAlive's context and stop when it ends.
// Expiry estimates are local, counted from when the command was sent: an acquisition
// whose reply comes when the lease is already Expired by that estimate (slow replies
// ate its TTL) is not held; TryAcquire reports it not acquired and releases it.
//
// # Failover
//
// Locks on a Sentinel-managed or replicated deployment can be lost on failover:
// replication is asynchronous, so a lock acquired or renewed on the old master may be
// missing on the new one, or carry an older expiry. Another process can then acquire
// it while this handle still believes it holds it, until the next renewal (at most half
// a lease later with a keep-alive) finds it gone and ends the keep-alive's context with
// ErrLeaseLost. A keep-alive that finds its token on the new master renews it there;
// one that cannot reach a master before the lease ends ends its context
// (ErrLeaseExpired, or the renewal's error). Commands after a failover run on new connections, which learn the new
// master's commands afresh (and a cut-off never sends CLIENT KILL to a server other
// than the one that carried the command). A Sentinel or Cluster client is one
// deployment: its endpoints are not independent Redlock votes, and neither are two
// clients of the same server. For an ordered token that a protected resource can
// check, use the fenced locks of package coordination; their counter, too, is only as
// durable as Redis's replication and can lose increments in an asynchronous failover
// or a restore from backup.
//
// # Observation
//
// A Locker reports to its client's Observer (respire.Options.Observer), if it has one,
// each step of its locks' lives as an observe.Lock: LockAttempt before each try of an
// acquisition; LockContended when a try finds another owner; LockAcquired, or
// LockGaveUp when TryAcquire or Acquire ends without the lock for another reason than
// one try finding it held (an error, the context, a spent wait budget: ErrNotAcquired,
// a reply too late: ErrLeaseExpired), each with the time since the acquisition began;
// LockRenewed for each renewal by ResetExpiry or a keep-alive (with the error of one
// that failed without losing the lock); LockLost, once per lock, when a renewal finds
// it lost or uncertain or a keep-alive's context ends on a loss, with the cause
// KeepAliveContext ends with and the time it was held; and LockReleased for each
// Release or Close (not for callers that joined another's), with its outcome. Every
// CLIENT KILL a cut-off sends is reported as an observe.Cutoff. The raw-token calls report
// nothing. An Adopt-ed handle reports from its renewals on. Events carry no key or
// token. Without an observer nothing is built and no clock is read.
//
// # Concurrency
//
// Locker, Lock and Keeper are safe for concurrent use. A KeepAlive owns one goroutine,
// which stops when the keep-alive is stopped, its lease is released or lost, or its
// context ends; Stop and Release (Keeper.Halt) wait for it. A cut-off whose caller
// stopped waiting runs on a goroutine the client owns, which ends once its CLIENT KILL
// is answered, five seconds after it began, or when the client closes, whichever comes
// first; the client's Close waits for it. The lock connections
// (lock lanes of the client's router) belong to the client and close with it.
package lock
