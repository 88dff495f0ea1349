// Package coordination provides fenced locks on Redis and Valkey: leases that carry a
// fencing token, a number strictly above the token of every earlier holder, which the
// protected resource checks so that a holder that paused past its lease cannot
// overwrite its successor's work.
//
//	co := coordination.New(client)
//	fl, ok, err := co.TryAcquireFencedLock(ctx, "{reports:daily}:lease", "{reports:daily}:fence", 30*time.Second)
//	if err != nil || !ok { ... }
//	defer fl.Close()
//	ka, err := fl.KeepAlive(ctx) // acquiring alone does not start renewal
//	...
//	defer ka.Stop()
//	err = writeReport(ka.Context(), fl.FencingToken()) // the resource refuses a stale token
//
// # Fenced locks
//
// A fenced lock is two keys on one deployment: a lease key holding the owner token with
// a TTL, exactly as a lock of package lock, and a persistent counter. One script takes
// the lease (SET lease token NX PX ttl) and, only if that succeeded, advances the
// counter (INCR fence), whose new value is the fencing token; no other client can run
// between the two. Renewal (ResetExpiry, KeepAlive at half the lease), VerifyStillHeld,
// Release with its outcomes and Close are package lock's, with the same native
// commands per server and the same CLIENT ID / CLIENT KILL fencing of a renewal or
// release whose outcome is uncertain; see that package.
//
// The two keys must hash to one Cluster slot once the client's key prefix is applied:
// give them one {hash tag}, as in "{reports:daily}:lease" and "{reports:daily}:fence".
// A pair that does not is refused before anything is sent (ErrCrossSlot), on every
// deployment, so code tested on one server does not fail on a Cluster. Every participant
// must use the same keys, database and prefix.
//
// This is not a quorum of independent servers: the lease and the counter live on one
// deployment (a server, a Sentinel-managed master, or the Cluster node serving their
// slot), and a Cluster's or a Sentinel group's endpoints are not independent votes.
//
// # The fence belongs to the resource
//
// A token fences nothing by itself: logging it or checking it in the caller does not
// stop a late write. The resource must, atomically with the write, refuse a token lower
// than the highest it has accepted, and record the token it accepts. Equal tokens may
// write again: one lease can do several writes. For a Redis resource, Resource.Write
// does exactly that in one script, with the highest accepted token at a key beside the
// resource's. For a relational resource, keep the token in the row and make the
// comparison part of the write, in the same transaction:
//
//	UPDATE reports SET body = $1, fence = $2
//	 WHERE id = $3 AND fence <= $2;
//	-- 0 rows updated: a newer holder has written; stop, do not retry.
//
//	INSERT INTO reports (id, body, fence) VALUES ($3, $1, $2)
//	ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body, fence = EXCLUDED.fence
//	 WHERE reports.fence <= EXCLUDED.fence;
//
// A resource spread over several rows or tables keeps one fence row per protected
// resource and locks it (SELECT fence FROM fences WHERE id = $1 FOR UPDATE) at the start
// of every write transaction, comparing and raising it before committing.
//
// # Limitations: the counter's history
//
// A fencing token is strictly increasing only while the counter's history survives.
// Redis replication is asynchronous: after a failover the new master may lack the last
// increments, and so may a server restored from a backup or an AOF/RDB file older than
// the last acquisition; the next holder can then get a token that an earlier holder
// already had. The resource-side fence still refuses tokens below the highest it
// accepted, so such a holder is refused rather than allowed to write over newer work,
// but it cannot write until the counter passes that value. Never expire, evict, reset
// or delete a fence key (or an accepted-token key): this package never does, and the
// counter has no TTL, so volatile-* eviction policies leave it alone, while allkeys-*
// policies can evict it. When stronger guarantees are needed, use a consensus-backed
// authority or enforce concurrency in the resource's own transaction.
//
// # Waiting
//
// AcquireFencedLock waits while another owner holds the lease, without polling: it
// tracks the lease key on the client-side cache's RESP3 connection
// (respire.Client.WatchKey) and tries again when the server reports the key changed
// (released, expired, evicted, overwritten), with a timer at the lease's remaining TTL
// in case a report is lost. It tracks the key again after every wake, since the server
// forgets a key once it has reported it. Waiters of one client wake in turn
// (respire.Client.WatchKeyInTurn): a change of the lease wakes the first, which either
// acquires or tracks the key again for the others, so a release costs one round trip,
// not one per waiter. It needs a client with Options.ClientSideCache
// on a server that speaks RESP3, and returns an error matching ErrNoTracking otherwise,
// before sending anything: it never falls back to polling. Give ctx a deadline for a
// bounded wait. TryAcquireFencedLock is the immediate attempt.
//
// Cancellation interrupts the wait and the reply wait at once, but cannot recall a
// script already written: a cancelled or timed-out acquisition may have taken the lease
// (which then stays until its TTL ends) and advanced the counter without returning the
// lock. Never take cancellation as proof that nothing was acquired.
//
// # Leases, not mutexes
//
// The lease ends when its TTL does, even if the work goes on. Run the work under a
// KeepAlive's Context and stop writing when it ends; VerifyStillHeld checks one instant
// only, and expiry estimates are local. A process paused past its lease (GC, SIGSTOP, a
// VM migration) can wake and write with its old token: only the resource-side fence
// stops that write.
//
// # Concurrency
//
// Coordinator, FencedLock and Resource are safe for concurrent use. The package starts
// no goroutine of its own: a FencedLock's keep-alive is package lock's, which owns one
// goroutine that stops when the keep-alive is stopped, the lease is released or lost, or
// its context ends. A waiting AcquireFencedLock runs on its caller's goroutine; the
// invalidations that wake it arrive on the client's tracked connections, which the
// client owns and stops in Close.
package coordination
