package respire

import (
	"context"
	"fmt"

	"github.com/respire/respire/internal/redisurl"
)

// Connect parses a URL with ParseURL and connects with NewClient.
func Connect(ctx context.Context, rawURL string) (*Client, error) {
	opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return NewClient(ctx, opts)
}

// ParseURL turns a URL into Options:
//
//	redis://[user[:password]@]host[:port][/db][?param=value&...]
//	rediss://...   (TLS, verifying the server's certificate against the system roots)
//
//	redis+sentinel://[user[:password]@]host1[:port1][,host2[:port2]...]/master-name[/db][?...]
//	rediss+sentinel://...   (TLS to the Sentinels and the data nodes)
//
//	redis+cluster://[user[:password]@]host1[:port1][,host2[:port2]...][/][?...]
//	rediss+cluster://...    (a Cluster over TLS)
//
// The hosts of a Cluster URL are seed nodes (any one that answers is enough); a
// Cluster has only database 0, so its path is empty, "/" or "/0".
// The port defaults to 6379 (26379 for Sentinels). A password alone may be given as
// "redis://:pw@host". Query parameters: dial_timeout, read_timeout, write_timeout (Go
// durations such as "500ms"), protocol (2 or 3), client_name, pool_size, min_idle,
// key_prefix. An unknown parameter is an error, so a typo does not go unnoticed.
//
// An error matches ErrInvalidURL, or ErrInvalidOptions for settings that parse but
// that Options do not accept, and also its cause where there is one to match
// (errors.As): the *url.Error of a URL that net/url cannot parse (its URL and text
// without the password), and the *strconv.NumError of a number or boolean parameter
// that is not one. A password must have its '/', '?', '#' (and '@', ':') percent-encoded:
// a URL that does not parse and has a '/', '?' or '#' before its last '@' is refused
// with an error that quotes nothing of what precedes that '@', since net/url's own
// error would quote the piece of the password it took for a host or a port.
func ParseURL(rawURL string) (Options, error) {
	u, err := redisurl.Parse(rawURL)
	if err != nil {
		return Options{}, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	o := Options{
		Addrs:            u.Addrs,
		Username:         u.Username,
		Password:         u.Password,
		DB:               u.DB,
		TLS:              u.TLS,
		SentinelMaster:   u.SentinelMaster,
		SentinelUsername: u.SentinelUsername,
		SentinelPassword: u.SentinelPassword,
		ReplicaReads:     u.ReplicaReads,
		Cluster:          u.Cluster,
		DialTimeout:      u.DialTimeout,
		ReadTimeout:      u.ReadTimeout,
		WriteTimeout:     u.WriteTimeout,
		Protocol:         u.Protocol,
		ClientName:       u.ClientName,
		PoolSize:         u.PoolSize,
		MinIdle:          u.MinIdle,
		KeyPrefix:        u.KeyPrefix,
	}
	// What parses is checked as any Options are, so that whatever ParseURL returns
	// without an error is a usable configuration.
	if err := o.validate(); err != nil {
		return o, err
	}
	return o, nil
}
