// Package observe defines what a respire.Client tells an Observer: the events that
// traces, metrics and logs are made of. It depends on nothing but the standard library,
// so an Observer can be written without importing the client, and the client pays
// nothing for observation that is not asked for: with no Observer set, no event is
// built.
//
// Events carry names, addresses, durations, counts and errors; never argument values,
// keys or credentials.
package observe

import (
	"context"
	"time"
)

// Observer receives a client's events. Its methods are called synchronously on the
// goroutine where the event happens (often a connection's reader or a keep-alive), so
// they must return quickly, must not block, and must not call back into the client.
// Events are passed by value; an Observer may keep them.
//
// Implementations embed Base, so that they implement only the events they care about
// and keep compiling when later versions add events.
type Observer interface {
	// CommandStart is called before one command (Client.Do, DoCached on a miss, a lock's
	// command, ...) is sent. The context it returns is the one CommandEnd receives: a
	// tracer starts its span here.
	CommandStart(ctx context.Context, e CommandStart) context.Context
	// CommandEnd is called when the command's reply, or its failure, is known.
	CommandEnd(ctx context.Context, e CommandEnd)
	// BatchStart is called before a batch (DoMulti, Pipeline.Exec, a transaction) is sent.
	BatchStart(ctx context.Context, e BatchStart) context.Context
	// BatchEnd is called when every reply of the batch, or its failure, is known.
	BatchEnd(ctx context.Context, e BatchEnd)

	// Conn is called when a connection is dialled (with its handshake), fails to be,
	// breaks, or is re-authenticated, and when a subscription's connection is refused
	// a channel it subscribed to before.
	Conn(e Conn)
	// PoolWait is called when a checkout of a dedicated connection found the pool
	// exhausted and had to wait.
	PoolWait(e PoolWait)
	// Redirect is called for every MOVED, ASK, TRYAGAIN and CLUSTERDOWN reply the
	// client handles itself.
	Redirect(e Redirect)
	// Topology is called after each refresh of a Cluster's slot map.
	Topology(e Topology)
	// Failover is called when Sentinel names a new master and the client follows.
	Failover(e Failover)
	// Cutoff is called when a lock cuts off a connection with CLIENT KILL.
	Cutoff(e Cutoff)
	// Cache is called for client-side cache hits, misses, invalidations and flushes.
	Cache(e Cache)
	// Lock is called for each step of a lock's life.
	Lock(ctx context.Context, e Lock)
}

// Base implements every Observer method as a no-op; embed it.
type Base struct{}

// CommandStart returns ctx.
func (Base) CommandStart(ctx context.Context, _ CommandStart) context.Context { return ctx }

// CommandEnd does nothing.
func (Base) CommandEnd(context.Context, CommandEnd) {}

// BatchStart returns ctx.
func (Base) BatchStart(ctx context.Context, _ BatchStart) context.Context { return ctx }

// BatchEnd does nothing.
func (Base) BatchEnd(context.Context, BatchEnd) {}

// Conn does nothing.
func (Base) Conn(Conn) {}

// PoolWait does nothing.
func (Base) PoolWait(PoolWait) {}

// Redirect does nothing.
func (Base) Redirect(Redirect) {}

// Topology does nothing.
func (Base) Topology(Topology) {}

// Failover does nothing.
func (Base) Failover(Failover) {}

// Cutoff does nothing.
func (Base) Cutoff(Cutoff) {}

// Cache does nothing.
func (Base) Cache(Cache) {}

// Lock does nothing.
func (Base) Lock(context.Context, Lock) {}

// Outcome classes how a command or batch ended, by what the caller may do next.
type Outcome uint8

const (
	// OK: the server replied, without an error reply (a null reply is OK).
	OK Outcome = iota
	// ServerError: the server replied with an error reply; the command ran (or was
	// refused) on the server.
	ServerError
	// NotSent: the command never reached the server (dial failure, full pool, context
	// ended first, client closed); sending it again runs it once.
	NotSent
	// Unknown: the command may have run (connection lost or context ended after it was
	// written, or a reply timeout).
	Unknown
)

// String returns "ok", "server_error", "not_sent" or "unknown": the values respireotel
// records.
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case ServerError:
		return "server_error"
	case NotSent:
		return "not_sent"
	case Unknown:
		return "unknown"
	}
	return "invalid"
}

// CommandStart describes a command about to be sent.
type CommandStart struct {
	// Name is the command's name in upper case as the command table knows it ("GET",
	// "CLIENT"), or its first argument as given for a command the table lacks.
	// A command the table lacks whose name is not a string (a []byte) is named
	// "UNKNOWN": copying its bytes into a string would allocate on every such call.
	Name string
	// Addr is the server ("host:port") the command is about to go to, as the client
	// knows it before sending, so that a tracer's sampler can see it: "" when the
	// client cannot tell yet (on a Cluster, a command without keys, a replica read,
	// a slot no node serves as far as it knows). The server that answers can differ
	// after a redirection or a failover: CommandEnd.Addr says which did.
	Addr string
	// Start is when the client began the call.
	Start time.Time
}

// CommandEnd describes a finished command.
type CommandEnd struct {
	Name string
	// Addr is the server ("host:port") that produced the reply or the failure, after any
	// redirection; "" when no server was reached.
	Addr     string
	Start    time.Time
	Duration time.Duration
	Outcome  Outcome
	// Err is the error the caller got (nil for OK).
	// Its text can quote the command's arguments (Redis answers an unknown command
	// with "unknown command 'X', with args beginning with: ..."), so an exporter must
	// not record it verbatim.
	Err error
}

// BatchStart describes a batch about to be sent.
type BatchStart struct {
	Kind BatchKind
	Len  int // commands in the batch
	// Name is the name every command of the batch shares, as CommandStart.Name gives
	// it ("GET" for a pipeline of GETs, "INCR" for MULTI, INCR, INCR, EXEC), and ""
	// when their names differ. The database conventions name a batch whose commands
	// share a name after that name ("PIPELINE GET", "MULTI INCR"), and a DoMulti or
	// Pipeline.Exec of one command (Len 1) after the command alone, as one operation.
	Name string
	// Addr is the server the batch is about to go to, as CommandStart.Addr is for a
	// command: "" on a Cluster, where a batch is split by node as it is sent, unless
	// it is a transaction already bound to its node (by WATCH or an earlier Tx.Do).
	Addr  string
	Start time.Time
}

// BatchEnd describes a finished batch.
type BatchEnd struct {
	Kind BatchKind
	Len  int
	Name string // as BatchStart.Name
	// Addr is the server that served the batch; "" when it was split across several
	// Cluster nodes or reached none.
	Addr     string
	Start    time.Time
	Duration time.Duration
	// Outcome is the batch's as a whole: OK when every reply arrived, even if some are
	// error replies (counted by Failed).
	Outcome Outcome
	Failed  int // commands whose reply is an error reply
	Err     error
}

// BatchKind is what sent a batch.
type BatchKind uint8

const (
	// Multi is Client.DoMulti.
	Multi BatchKind = iota
	// Pipeline is Pipeline.Exec.
	Pipeline
	// Transaction is MULTI ... EXEC (Client.Tx, TxPipeline).
	Transaction
)

// String returns "multi", "pipeline" or "transaction".
func (k BatchKind) String() string {
	switch k {
	case Multi:
		return "multi"
	case Pipeline:
		return "pipeline"
	case Transaction:
		return "transaction"
	}
	return "invalid"
}

// Conn describes a connection event.
type Conn struct {
	Kind ConnKind
	Addr string
	// Duration is the dial with its handshake (ConnDialed, ConnDialFailed) or the
	// re-authentication's round trip (ConnReauth).
	Duration time.Duration
	// Err is why a dial or re-authentication failed or the connection broke.
	Err error
}

// ConnKind is what happened to a connection.
type ConnKind uint8

const (
	// ConnDialed: a connection was opened and its handshake succeeded.
	ConnDialed ConnKind = iota
	// ConnDialFailed: opening it or its handshake failed.
	ConnDialFailed
	// ConnLost: an open connection broke (read or write error, reply timeout, the
	// server closed it); not sent for Close.
	ConnLost
	// ConnReauth: a live connection was re-authenticated with fresh credentials (Err
	// set when the server refused them).
	ConnReauth
	// ConnSubscriptionRefused: a subscription's new connection, subscribing again
	// after the old one was lost, was refused a channel or pattern (NOPERM: the user's
	// ACL changed meanwhile), which the subscription dropped while keeping the
	// others. Err is a *respire.RefusedChannelError, one event per name; its text
	// names the channel, so an exporter must not record it verbatim.
	ConnSubscriptionRefused
)

// String returns "dialed", "dial_failed", "lost", "reauth" or "subscription_refused".
func (k ConnKind) String() string {
	switch k {
	case ConnDialed:
		return "dialed"
	case ConnDialFailed:
		return "dial_failed"
	case ConnLost:
		return "lost"
	case ConnReauth:
		return "reauth"
	case ConnSubscriptionRefused:
		return "subscription_refused"
	}
	return "invalid"
}

// PoolWait describes a checkout that waited for a dedicated connection.
type PoolWait struct {
	Addr string
	Wait time.Duration
	// Err is why the checkout gave up (its context ended, the pool closed); nil when it
	// got a connection.
	Err error
}

// Redirect describes a redirection or retry reply the client followed.
type Redirect struct {
	Kind RedirectKind
	Slot int
	From string // the node that replied
	// To is also "" for an ASK that WATCH waits out on the slot's owner instead of
	// following it.
	To string // the node the command goes to next ("" for TRYAGAIN and CLUSTERDOWN)
}

// RedirectKind is the reply that redirected a command.
type RedirectKind uint8

const (
	// Moved: the slot has a new owner.
	Moved RedirectKind = iota
	// Ask: the slot is migrating and this key is on the importing node.
	Ask
	// TryAgain: a multi-key command's keys are split by a migration in progress.
	TryAgain
	// ClusterDown: the cluster cannot serve the slot for now.
	ClusterDown
)

// String returns "moved", "ask", "tryagain" or "clusterdown".
func (k RedirectKind) String() string {
	switch k {
	case Moved:
		return "moved"
	case Ask:
		return "ask"
	case TryAgain:
		return "tryagain"
	case ClusterDown:
		return "clusterdown"
	}
	return "invalid"
}

// Topology describes one refresh of a Cluster's slot map.
type Topology struct {
	Addr     string // the node asked
	Duration time.Duration
	Nodes    int  // masters in the new map
	Changed  bool // whether any slot changed owner
	Err      error
}

// Failover describes the client following Sentinel to a new master.
type Failover struct {
	Master string // the name Sentinel knows the master by
	From   string // the old master's address ("" at start-up)
	To     string
}

// Cutoff describes a CLIENT KILL a lock sent to cut off a connection that may still
// carry a lost owner's writes. (It was called Fence: in this project a fence is the
// fencing token of package coordination only.)
type Cutoff struct {
	Addr     string // the server
	ClientID int64  // the killed connection's CLIENT ID
	Err      error  // nil when the kill was confirmed
}

// Cache describes client-side cache events.
type Cache struct {
	Kind CacheKind
	// Keys is how many keys an invalidation named (0 for a flush of everything) and 1
	// for a hit or a miss.
	Keys int
	Addr string // the server whose tracking connection sent the invalidation or was lost
}

// CacheKind is what happened in the client-side cache.
type CacheKind uint8

const (
	// CacheHit: a DoCached call was answered from memory.
	CacheHit CacheKind = iota
	// CacheMiss: a DoCached call went to the server.
	CacheMiss
	// CacheInvalidate: the server said keys changed; their entries were dropped.
	CacheInvalidate
	// CacheFlush: every entry was dropped (server flush, topology change).
	CacheFlush
	// CacheTrackingLost: a tracking connection broke; what it tracked was dropped.
	CacheTrackingLost
)

// String returns "hit", "miss", "invalidate", "flush" or "tracking_lost".
func (k CacheKind) String() string {
	switch k {
	case CacheHit:
		return "hit"
	case CacheMiss:
		return "miss"
	case CacheInvalidate:
		return "invalidate"
	case CacheFlush:
		return "flush"
	case CacheTrackingLost:
		return "tracking_lost"
	}
	return "invalid"
}

// Lock describes one step of a lock's life. Lock keys are not included: they are the
// caller's data, and would give metrics one series per key.
type Lock struct {
	Kind LockKind
	// Wait is how long an acquisition has waited so far (LockAcquired, LockContended,
	// LockGaveUp), or how long the lock was held (LockLost, LockReleased).
	Wait time.Duration
	// Release is the outcome of LockReleased.
	Release ReleaseOutcome
	// Err is the cause of LockLost (matching lock's errors with errors.Is), why
	// LockGaveUp gave up, or why a renewal or release failed.
	Err error
}

// LockKind is a step of a lock's life.
type LockKind uint8

const (
	// LockAttempt: one try to take a lock is about to be sent.
	LockAttempt LockKind = iota
	// LockAcquired: the lock was taken.
	LockAcquired
	// LockContended: a try found the lock held by another owner.
	LockContended
	// LockGaveUp: an acquisition ended without the lock (context ended, error).
	LockGaveUp
	// LockRenewed: keep-alive or ResetExpiry extended the lease (Err set if it failed
	// without losing the lock yet).
	LockRenewed
	// LockLost: the lease is known or presumed lost; Err says why.
	LockLost
	// LockReleased: a release finished; Release says how.
	LockReleased
)

// String returns "attempt", "acquired", "contended", "gave_up", "renewed", "lost" or
// "released".
func (k LockKind) String() string {
	switch k {
	case LockAttempt:
		return "attempt"
	case LockAcquired:
		return "acquired"
	case LockContended:
		return "contended"
	case LockGaveUp:
		return "gave_up"
	case LockRenewed:
		return "renewed"
	case LockLost:
		return "lost"
	case LockReleased:
		return "released"
	}
	return "invalid"
}

// ReleaseOutcome is how a release ended.
type ReleaseOutcome uint8

const (
	// Released: the lock was held by this owner and is now free.
	Released ReleaseOutcome = iota
	// AlreadyReleased: this handle had been released before.
	AlreadyReleased
	// NotOwned: the key had expired or belonged to another owner.
	NotOwned
	// ReleaseFailed: the release's outcome is unknown (error); expiry frees the key.
	ReleaseFailed
)

// String returns "released", "already_released", "not_owned" or "failed".
func (r ReleaseOutcome) String() string {
	switch r {
	case Released:
		return "released"
	case AlreadyReleased:
		return "already_released"
	case NotOwned:
		return "not_owned"
	case ReleaseFailed:
		return "failed"
	}
	return "invalid"
}
