package respire

import (
	"errors"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
)

// The sentinel errors of package respire, matched with errors.Is (a server's error
// reply is a *resp.ServerError instead, matched with errors.As; whether a command was
// sent, with conn.ErrNotSent and conn.ErrOutcomeUnknown). ErrClosed,
// ErrInvalidOptions, ErrCrossSlot, ErrTooManyRedirects, ErrClusterDown and ErrPerNode
// are the routers' own values (internal/route) under the same names, so that
// errors.Is matches them whichever package made the error.
var (
	// ErrClosed is returned by calls on a closed Client or Subscription.
	ErrClosed = route.ErrClosed
	// ErrInvalidOptions is matched by errors from NewClient for unusable Options.
	ErrInvalidOptions = route.ErrInvalidOptions
	// ErrInvalidURL is matched by errors from ParseURL and Connect for a URL that does
	// not parse; settings that parse but that Options do not accept match
	// ErrInvalidOptions instead.
	ErrInvalidURL = errors.New("respire: invalid URL")
	// ErrTxFailed is returned by Tx.Exec when EXEC was aborted because a watched key
	// changed: nothing of the transaction ran; run it again with fresh reads.
	ErrTxFailed = errors.New("respire: transaction failed: a watched key changed")
	// ErrTxSlotMoved is matched by the error of Tx.Do or Tx.Exec when, on a Cluster,
	// the transaction's slot moved (MOVED) or is moving (ASK) to another node after the
	// transaction was bound to its node: the command, or for Exec the whole
	// transaction, did not run. It wraps the redirection; run the transaction again.
	ErrTxSlotMoved = errors.New("respire: transaction failed: its slot moved to another node")
	// ErrConnState is matched by the error for a command that would change the state
	// of a shared connection (MULTI, SUBSCRIBE, SELECT, ...); the error says which call
	// to use instead.
	ErrConnState = errors.New("respire: command changes connection state")
	// ErrBlockingInBatch is matched by the error for a blocking command (BLPOP, XREAD
	// BLOCK, WAIT, ...) in a pipeline or a DoMulti batch: such a batch shares a
	// connection with other callers, and the command would hold up all their replies
	// until it returned. Send it with Do, which gives it a dedicated connection, or in
	// a transaction, where the server runs it without blocking.
	ErrBlockingInBatch = errors.New("respire: blocking command in a batch on a shared connection")
	// ErrInvalidArg is matched by errors for unusable arguments of the Client's own
	// methods (an empty channel list, an empty key).
	ErrInvalidArg = errors.New("respire: invalid argument")
	// ErrCrossSlot is matched by the error for a command (or a transaction, or a
	// subscription) whose keys hash to different Cluster slots: it is refused before
	// anything is sent, and the error names the slots. Keys that share a {hash tag}
	// share a slot.
	ErrCrossSlot = route.ErrCrossSlot
	// ErrTooManyRedirects is matched by the error for a command that the Cluster
	// redirected (MOVED, ASK) more times than the client follows, or answered
	// TRYAGAIN or CLUSTERDOWN (ASK too, for WATCH) more times than it retries; it
	// wraps the last reply, which errors.As finds as a *resp.ServerError. The command
	// did not run.
	ErrTooManyRedirects = route.ErrTooManyRedirects
	// ErrClusterDown is matched by the error for a command no Cluster node serves: its
	// slot is not assigned, or no master serves any slot.
	ErrClusterDown = route.ErrClusterDown
	// ErrPerNode is matched by the error of Do on a Cluster for a keyless command whose
	// replies the server's command tips say combine in a way of their own (INFO,
	// MEMORY STATS, RANDOMKEY, LATENCY LATEST, FUNCTION STATS) or that goes to nodes
	// of its own choosing (SCAN: use Client.Scan): it is refused before anything is
	// sent, and the error names it. Send it to the node you mean: Client.Dedicated for
	// a key that node serves, then Do on that connection, or a Client of that node.
	ErrPerNode = route.ErrPerNode
	// ErrUnknownKeys is matched by the error for a command whose key positions the
	// client cannot know when it needs them (for Options.KeyPrefix or Cluster
	// routing): it is in neither the client's command table nor the server's COMMAND
	// INFO (or the server refused COMMAND INFO, or its entry does not describe the
	// keys). The command is refused before anything is sent; the error names it.
	ErrUnknownKeys = errors.New("respire: key positions of the command unknown")
	// ErrNotConfined is matched by the error for a command that would reach keys
	// outside Options.KeyPrefix and that the prefix cannot confine (RANDOMKEY, DEBUG,
	// CLUSTER GETKEYSINSLOT, a SORT pattern under a prefix holding '*'). The command is
	// refused before anything is sent; the error names it.
	ErrNotConfined = errors.New("respire: command not confined to the key prefix")
	// ErrNoCache is returned by DoCached on a client made without
	// Options.ClientSideCache.
	ErrNoCache = errors.New("respire: client-side cache not enabled (Options.ClientSideCache)")
	// ErrNotCacheable is matched by the error of DoCached for a command it cannot
	// cache: one that writes, blocks, reads other than exactly one key, or whose
	// reply can change while its key does not (SRANDMEMBER, TTL, EVAL_RO, ...).
	ErrNotCacheable = errors.New("respire: command cannot be cached")
	// ErrNoTracking is matched by the error of DoCached when the server cannot track
	// keys for this client: it does not speak RESP3, or refused CLIENT TRACKING.
	ErrNoTracking = errors.New("respire: server does not track keys for client-side caching")
	// ErrReauthPending is matched by the error of Client.Reauthenticate when its context
	// ended before every connection was authenticated with the new credentials: their
	// AUTH waits behind a blocking command, a transaction in progress or an AUTH of
	// older credentials, or they are still being dialled. They are re-authenticated
	// once it has gone, before anything else is sent on them (a dialled one before it
	// is handed out).
	ErrReauthPending = errors.New("respire: re-authentication still in progress")
)

// Result is the outcome of one command of a batch: its reply, or its error (a
// *resp.ServerError for an error reply, else a transport error).
type Result = conn.Result
