package coordination

import "errors"

var (
	// ErrInvalidArg is matched by errors for unusable arguments: an empty key, the same
	// key as lease and fence, a TTL under a millisecond, a token under 1, a Coordinator
	// without a client.
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
)
