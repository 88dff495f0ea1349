package lock

import "errors"

var (
	// ErrNotAcquired is returned by Acquire when another owner holds the lock (after the
	// wait budget, if one was given), or when the reply came too late for the lease to
	// be of use.
	ErrNotAcquired = errors.New("lock: not acquired")
	// ErrLeaseLost is the cause of a keep-alive context that ended because the lock was
	// found expired, released or owned by someone else.
	ErrLeaseLost = errors.New("lock: lease lost")
	// ErrOwnershipUncertain is the cause when a renewal or release may have reached the
	// server but its reply never came back: the handle stops trusting the lock (and
	// severs the connection that carried it, when it may).
	ErrOwnershipUncertain = errors.New("lock: ownership uncertain")
	// ErrLeaseExpired is the cause of a keep-alive context that ended because the lease
	// ran out before a renewal succeeded (the renewal was late, slow or failing).
	ErrLeaseExpired = errors.New("lock: lease expired before it was renewed")
	// ErrReleased is the cause of a keep-alive context that ended because the lock was
	// released through its handle (only once the delete succeeded).
	ErrReleased = errors.New("lock: released")
	// ErrKeepAliveStopped is the cause of a keep-alive context ended by Stop, or by a
	// Release that failed without deleting: the lock is still held but nothing renews
	// it any more.
	ErrKeepAliveStopped = errors.New("lock: keep-alive stopped")
	// ErrEmptyToken is returned for an empty owner token.
	ErrEmptyToken = errors.New("lock: empty token")
	// ErrInvalidArg is matched by errors for other unusable arguments: an empty key, a
	// TTL under a millisecond, a negative wait.
	ErrInvalidArg = errors.New("lock: invalid argument")

	// errLeaderGaveUp is why a Release that joined another caller's release does not
	// know its outcome: that caller's context ended after the delete was sent.
	errLeaderGaveUp = errors.New("lock: the concurrent Release that sent the delete stopped waiting for its reply")
)
