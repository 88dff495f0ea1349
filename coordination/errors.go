package coordination

import "errors"

var (
	// ErrInvalidArg is matched by errors for unusable arguments: an empty key, the same
	// key as lease and fence, a TTL under a millisecond, a token under 1, a Coordinator
	// without a client, a semaphore capacity under 1, Redlock options out of range.
	ErrInvalidArg = errors.New("coordination: invalid argument")
	// ErrCrossSlot is matched by the error for a pair of keys (lease and fence, or a
	// resource and its accepted-token key) that hash to different Cluster slots once
	// the client's key prefix is applied. It is refused before anything is sent, on
	// every deployment, so code that works on one server keeps working on a Cluster.
	// The error also matches respire.ErrCrossSlot. Keys sharing a {hash tag} share a
	// slot.
	ErrCrossSlot = errors.New("coordination: keys in different cluster slots")
	// ErrStaleToken is matched by the error of a write refused by a resource-side
	// fence because a higher fencing token was accepted before (a *StaleTokenError
	// tells the tokens).
	ErrStaleToken = errors.New("coordination: stale fencing token")
	// ErrNoTracking is matched by the error of AcquireFencedLock on a client that
	// cannot wait for a key's invalidation: one without Options.ClientSideCache, or
	// whose server does not speak RESP3 or refuses CLIENT TRACKING. The wait never
	// falls back to polling.
	ErrNoTracking = errors.New("coordination: waiting for a fenced lock needs RESP3 client-side caching (Options.ClientSideCache)")
	// ErrRedlockGroup is matched by the error for clients that cannot form a Redlock
	// group: fewer than three, an even number, a nil or repeated client, a Cluster or
	// Sentinel client, or two clients that reach one server (same INFO run_id). Their
	// votes would not be independent.
	ErrRedlockGroup = errors.New("coordination: not a group of independent standalone servers")
	// ErrServerIdentity is matched by the error of a Redlock operation on a server that
	// refused INFO server (an ACL without +info) or whose INFO has no run_id, which
	// tells whether two clients reach one server: the group does not count a vote it
	// cannot tell apart.
	ErrServerIdentity = errors.New("coordination: cannot tell the redlock servers apart")
	// ErrNoQuorum is matched by the error of a Redlock acquisition, renewal or release
	// that did not reach a majority of the group because nodes failed or did not answer
	// in time; the error also carries the nodes' errors.
	ErrNoQuorum = errors.New("coordination: no redlock quorum")
	// ErrCapacityMismatch is matched by the error of a semaphore acquisition whose
	// capacity differs from the one the semaphore's live permits were taken with (a
	// *CapacityMismatchError tells both): participants must agree on capacity.
	ErrCapacityMismatch = errors.New("coordination: semaphore capacity differs from the stored one")
)
