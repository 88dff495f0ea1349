package respire

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/respire/respire/cache"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/redisurl"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Options configures a Client. Only Addrs is required; every other zero value means the
// documented default.
type Options struct {
	// Addrs is the server to connect to ("host:port"). Cluster and Sentinel
	// deployments take several seeds here.
	Addrs []string

	// Cluster: Addrs are seed nodes of a Redis Cluster (any one that answers is
	// enough); commands are routed by hash slot and MOVED/ASK redirections are
	// followed. Each node gets its own shared connection and its own pool of PoolSize
	// dedicated connections. A Cluster has only database 0.
	Cluster bool
	// SentinelMaster: Addrs are Sentinels, and the client serves the master they
	// name SentinelMaster, following failovers.
	SentinelMaster string
	// SentinelUsername and SentinelPassword authenticate to the Sentinels (which have
	// their own ACLs); Username and Password are for the data nodes.
	SentinelUsername string
	SentinelPassword string
	// ReplicaReads sends read-only commands to replicas (READONLY in a Cluster,
	// replicas named by Sentinel); off by default, since replicas lag.
	ReplicaReads bool

	Username   string // ACL user; "default" when only Password is set
	Password   string
	DB         int    // database selected on every connection
	ClientName string // CLIENT SETNAME on every connection
	TLS        *tls.Config

	// Protocol is 3 (default: RESP3, falling back to RESP2 on servers without HELLO)
	// or 2 (RESP2 only).
	Protocol int

	// KeyPrefix is prepended to every key argument of every command, as the command
	// key table finds them (movable keys included), and to the patterns that name
	// keys: the KEYS pattern and SCAN MATCH patterns (with the prefix's glob
	// characters escaped; a SCAN without MATCH gets MATCH prefix*), and the BY and GET
	// patterns of SORT and SORT_RO that hold a '*'. Replies are the server's: key
	// names in them (KEYS, SCAN, BLPOP...) carry the prefix; Client.Scan strips it.
	// Commands that would reach keys it cannot confine (RANDOMKEY, DEBUG, CLUSTER
	// GETKEYSINSLOT) are refused with ErrNotConfined. Commands on the whole database
	// (FLUSHDB, DBSIZE...) and keys a script names in its body are not confined; the
	// "Key prefix" in docs/options.md lists what is.
	KeyPrefix string

	// PoolSize bounds the dedicated connections (blocking commands, transactions,
	// RESP2 subscriptions); default 10 × GOMAXPROCS. Ordinary commands share
	// auto-pipelined connections and never wait for the pool.
	PoolSize int
	// MinIdle dedicated connections are kept open; default 0.
	MinIdle int
	// ConnMaxLifetime and ConnMaxIdleTime retire dedicated connections; default none.
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration

	DialTimeout  time.Duration // connect and handshake; default 5s
	ReadTimeout  time.Duration // wait for a reply once written; default 3s, -1 for none
	WriteTimeout time.Duration // one socket write; default 3s, -1 for none

	// Limits bound the replies the client accepts (bulk length, line length, nesting,
	// aggregate length, memory per reply); zero fields take resp.DefaultLimits, which
	// accept every reply a server sends in normal use.
	Limits resp.Limits

	// SubscriptionBuffer is the capacity of a Subscription's message channel;
	// default 1024. A full channel drops new messages and counts them (Dropped).
	SubscriptionBuffer int
	// SubscriptionHealthCheck is how often a subscription PINGs its connection; a PING
	// unanswered for as long again breaks the connection, and the subscription
	// reconnects and subscribes again, so a connection that silently stops delivering
	// (a dead peer, a black-holed route) is noticed within twice this. Default 15s; -1
	// for none.
	SubscriptionHealthCheck time.Duration

	// ClientSideCache, when set, enables DoCached: replies of read commands kept in
	// this process and dropped when the server says their key changed (RESP3 client
	// tracking). Its zero value gives the default bounds. It needs RESP3.
	ClientSideCache *cache.Options

	// Dialer opens transports; net.Dialer by default.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

	// Credentials, when set, is asked for the username and password on every dial
	// (instead of Username and Password, which must then be empty), and again before the
	// ExpiresAt it returned, to re-authenticate every live connection (shared,
	// dedicated, tracking, subscription) in order with its traffic: for managed services
	// whose passwords are short-lived tokens. An answer without a password fails as an
	// error does (conn.ErrCredentials), at a dial and at a re-authentication alike.
	Credentials func(ctx context.Context) (Credentials, error)

	// OnConnect runs on every new connection once its handshake is done, before any
	// command of the caller's is sent on it: for per-connection set-up. An error closes
	// the connection and fails its dial. It must not keep cn.
	OnConnect func(ctx context.Context, cn *Conn) error

	// Observer receives the client's events: commands, batches, connections, pool
	// waits, redirections, failovers, cut-offs (observe.Cutoff), cache and lock events (package observe;
	// respireotel turns them into traces and metrics). Nil, the default, costs nothing.
	Observer observe.Observer

	// Logger receives the few events worth a log line (connections lost and dialled
	// again, failovers, topology changes, cut-offs, tracking loss), structured and
	// without secrets. Nil, the default, logs nothing.
	Logger *slog.Logger
}

// Credentials are what Options.Credentials returns: the ACL user and password for the
// next connections, and when they stop being valid.
type Credentials = conn.Credentials

const (
	defaultSubscriptionBuffer      = 1024
	defaultSubscriptionHealthCheck = 15 * time.Second
)

// validate checks what can be checked before dialling.
func (o *Options) validate() error {
	if len(o.Addrs) == 0 {
		return fmt.Errorf("%w: no address", ErrInvalidOptions)
	}
	for _, a := range o.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return fmt.Errorf("%w: address %q: %v", ErrInvalidOptions, a, err)
		}
		if host == "" {
			return fmt.Errorf("%w: address %q has no host", ErrInvalidOptions, a)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("%w: address %q: bad port", ErrInvalidOptions, a)
		}
	}
	switch {
	case o.Protocol != 0 && o.Protocol != 2 && o.Protocol != 3:
		return fmt.Errorf("%w: protocol %d (want 2 or 3)", ErrInvalidOptions, o.Protocol)
	case o.DB < 0:
		return fmt.Errorf("%w: negative DB %d", ErrInvalidOptions, o.DB)
	case o.PoolSize < 0 || o.MinIdle < 0:
		return fmt.Errorf("%w: negative pool size", ErrInvalidOptions)
	case o.PoolSize > 0 && o.MinIdle > o.PoolSize:
		return fmt.Errorf("%w: MinIdle %d above PoolSize %d", ErrInvalidOptions, o.MinIdle, o.PoolSize)
	case o.DialTimeout < 0 || o.ConnMaxLifetime < 0 || o.ConnMaxIdleTime < 0:
		return fmt.Errorf("%w: negative duration", ErrInvalidOptions)
	case o.SubscriptionBuffer < 0:
		return fmt.Errorf("%w: negative subscription buffer", ErrInvalidOptions)
	case o.SubscriptionHealthCheck < -1:
		return fmt.Errorf("%w: subscription health check %v (want a positive interval, 0 for the default or -1 for none)", ErrInvalidOptions, o.SubscriptionHealthCheck)
	case o.Username != "" && o.Password == "":
		return fmt.Errorf("%w: username without password", ErrInvalidOptions)
	case o.Credentials != nil && (o.Username != "" || o.Password != ""):
		return fmt.Errorf("%w: Credentials together with Username or Password", ErrInvalidOptions)
	case o.ClientSideCache != nil && o.Protocol == 2:
		return fmt.Errorf("%w: ClientSideCache needs RESP3 (Protocol 3), for invalidation pushes", ErrInvalidOptions)
	case o.Cluster && o.DB != 0:
		return fmt.Errorf("%w: a Cluster has only database 0, not DB %d", ErrInvalidOptions, o.DB)
	case o.Cluster && o.SentinelMaster != "":
		return fmt.Errorf("%w: Cluster and SentinelMaster are exclusive", ErrInvalidOptions)
	case o.SentinelMaster == "" && (o.SentinelUsername != "" || o.SentinelPassword != ""):
		return fmt.Errorf("%w: Sentinel credentials without SentinelMaster", ErrInvalidOptions)
	case o.SentinelUsername != "" && o.SentinelPassword == "":
		return fmt.Errorf("%w: SentinelUsername without SentinelPassword", ErrInvalidOptions)
	}
	return nil
}

// redacted stands in for a password wherever options or URLs are shown.
const redacted = redisurl.Redacted

// optionsFields is Options without its methods, so formatting it does not recurse.
type optionsFields Options

// String shows the options with their passwords replaced, so that options printed
// with %v or %+v, logged or wrapped into an error never reveal a credential.
func (o Options) String() string { return fmt.Sprintf("%+v", optionsFields(o.redacted())) }

// GoString is String for %#v.
func (o Options) GoString() string { return fmt.Sprintf("%#v", optionsFields(o.redacted())) }

func (o Options) redacted() Options {
	if o.Password != "" {
		o.Password = redacted
	}
	if o.SentinelPassword != "" {
		o.SentinelPassword = redacted
	}
	return o
}
