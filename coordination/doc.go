// Package coordination provides fenced locks on Redis and Valkey: leases that carry a
// fencing token, a number strictly above the token of every earlier holder, which the
// protected resource checks so that a holder that paused past its lease cannot
// overwrite its successor's work. Beside them: a Redlock group over independent
// servers, read/write leases and semaphores (see their sections below).
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
// commands per server and the same cut-off (CLIENT ID / CLIENT KILL of its
// connection) of a renewal or release whose outcome is uncertain; see that package.
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
// the last acquisition, and a server restarted without persistence has no counter at
// all (with appendonly yes and appendfsync always, a kill -9 and restart keeps every
// acknowledged increment); the next holder can then get a token that an earlier holder
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
// only, and expiry estimates are local, counted from when the acquisition was sent: one
// whose reply comes too late for the lease to be of use is reported not acquired and
// given back (a fenced lock's counter has advanced then). A process paused past its
// lease (GC, SIGSTOP, a VM migration) can wake and write with its old token: only the
// resource-side fence stops that write.
//
// # Redlock
//
// A RedlockGroup (NewRedlockGroup) takes a lease on a majority of an odd number, at
// least three, of independent standalone servers, one client each: the same key and
// owner token on each, by package lock's SET NX, in parallel, each server within
// RedlockOptions.NodeTimeout. The lease is valid for ttl − elapsed − (ttl ×
// DriftFactor + 2 ms); an attempt that gets no quorum, or no validity, releases what
// it got. Cluster and Sentinel clients are refused (one deployment is not several
// votes), and so are two clients of one server, told apart by INFO server's run_id the
// first time the group reaches each (a server that refuses INFO is refused:
// ErrServerIdentity). The group does not own its clients.
//
// Renew a Redlock with ResetExpiry, which must reach a quorum within the previous
// validity, or run the work under KeepAlive's context, which renews at half the TTL
// and ends, with its cause, when a renewal fails or is uncertain. Release reports
// whether a quorum confirmed; after a failed release the handle no longer reports
// ownership, and Release can be called again. RemainingEstimate and ValidUntilEstimate
// are local estimates, not ownership proofs; VerifyStillHeld asks the servers.
// TryAcquire makes one attempt, or with lock.WithWait attempts under one wait budget
// with jittered pauses.
//
// Limitations, as for every Redlock: there is no fencing token and no consensus. A
// server that restarts without persistence forgets the lease and can give its vote to
// a second owner while the first still holds a valid lease; run the servers with
// persistence, or keep a restarted server out for longer than the longest TTL. Clock
// jumps on a server, and process pauses longer than the validity, break the validity
// arithmetic. Where a stale write must be refused, use a fenced lock and a fenced
// resource.
//
// # Read/write leases and semaphores
//
// TryAcquireReadLock and TryAcquireWriteLock take leases of a read/write lock: readers
// share the key, a writer excludes readers and writers. Semaphore(key, capacity) gives
// at most capacity permits at once. Each is one key holding a hash of owner entries
// and their expiries, written by scripts that read the server's clock (TIME) and
// reclaim expired entries before deciding: client clocks never decide. One key means
// one Cluster slot, so they work alike on standalone, Cluster and Sentinel
// deployments, with no cross-slot pair to refuse. The key expires with its last entry.
//
// Attempts wait with package lock's options; there is no queue and no fairness:
// readers that keep coming can starve a writer. Every lease and permit expires (no
// permit exists without a TTL, which would leak for good after a crash): renew with
// ResetExpiry and stop the work when it returns false, or run it under KeepAlive's
// context (package lock's keep-alive), which ends with the cause of a loss. Release returns
// lock.ReleaseOutcome. All participants must agree on a semaphore's capacity: one that
// differs from the capacity the live permits were taken with is refused
// (ErrCapacityMismatch) and changes nothing. A renewal or release whose reply is lost
// is not fenced as a lock's is: the handle counts the entry as lost
// (lock.ErrOwnershipUncertain), and a late renewal can only hold its place until its
// TTL, never admit another holder. These are single-deployment primitives, subject to
// the failover limits above; there is no quorum read/write lock or semaphore.
//
// RedlockGroup, Redlock, Semaphore, Permit and RWLease are safe for concurrent use. A
// Redlock's acquisition and release send every server's command from the caller's
// goroutine before they wait for any reply (a server whose connection must be dialled
// first gets a goroutine of its own, so that its dial holds up no other); its renewal,
// its check and the first learning of the servers' identities run one goroutine per
// server. Each call waits for all of its goroutines before it returns; only a
// keep-alive runs in the background (see Concurrency).
//
// # Observation
//
// Leases report to their client's Observer (respire.Options.Observer) the same
// observe.Lock events as package lock's: an attempt per try, contended, acquired or
// given up, renewals, a loss with its cause (lock.ErrLeaseLost,
// lock.ErrOwnershipUncertain, lock.ErrLeaseExpired, or a Redlock's ErrNoQuorum) and
// release outcomes. A FencedLock's renewals, keep-alive, loss, cut-offs and release are
// its lock.Lock's, reported by package lock; its acquisition, including each try of a
// waiting AcquireFencedLock, is reported here. A Permit's and an RWLease's are
// reported at the same points. A Redlock reports as one lease, to the observer of the
// first of the group's clients that has one, never once per server; the cut-offs of its
// per-server renewals and releases go to each server's client. Events are sent with
// no lock of the lease held, so an observer may call back into the lease (read its
// state, release it); events of calls racing on one lease arrive in the order they
// are sent.
//
// # Concurrency
//
// Coordinator, FencedLock and Resource are safe for concurrent use. The package starts
// no background goroutine of its own (a Redlock call's per-server goroutines end
// before it returns): the keep-alive of a FencedLock, Permit, RWLease or Redlock is
// package lock's, which owns one goroutine that stops when the keep-alive is stopped,
// the lease is released or lost, or its context ends. A waiting AcquireFencedLock runs on its caller's goroutine; the
// invalidations that wake it arrive on the client's tracked connections, which the
// client owns and stops in Close.
package coordination
