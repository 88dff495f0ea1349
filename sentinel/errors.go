package sentinel

import "errors"

var (
	// ErrNoSentinel is matched by the error of a discovery in which no Sentinel gave an
	// answer: none could be reached, or each refused (NOAUTH, WRONGPASS, ...). The
	// error joins what each Sentinel did.
	ErrNoSentinel = errors.New("sentinel: no Sentinel answered")
	// ErrUnknownMaster is matched when the Sentinels that answered do not monitor a
	// master by the name asked for.
	ErrUnknownMaster = errors.New("sentinel: master name unknown to the Sentinels")
	// ErrNotMaster is matched when the server a Sentinel named as the master reports
	// another role (ROLE answers "slave" or "sentinel"): the Sentinel is out of date, or
	// misconfigured. A connection that fails this check is never used.
	ErrNotMaster = errors.New("sentinel: server is not a master")
	// ErrNoReplica is matched when the Sentinels name no replica that can serve reads.
	ErrNoReplica = errors.New("sentinel: no usable replica")
	// ErrInvalidConfig is matched by errors from Start for an unusable Config.
	ErrInvalidConfig = errors.New("sentinel: invalid config")
	// ErrClosed is returned by calls on a closed Monitor.
	ErrClosed = errors.New("sentinel: monitor closed")
)
