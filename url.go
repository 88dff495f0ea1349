package respire

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
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
//	rediss+cluster://...    (a Cluster over TLS; see parseClusterURL)
//
// The port defaults to 6379 (26379 for Sentinels). A password alone may be given as
// "redis://:pw@host". Query parameters: dial_timeout, read_timeout, write_timeout (Go
// durations such as "500ms"), protocol (2 or 3), client_name, pool_size, min_idle,
// key_prefix. An unknown parameter is an error, so a typo does not go unnoticed.
func ParseURL(rawURL string) (Options, error) {
	if scheme, _, ok := strings.Cut(rawURL, "://"); ok && strings.HasSuffix(strings.ToLower(scheme), "+sentinel") {
		return parseSentinelURL(rawURL)
	}
	if scheme, _, ok := strings.Cut(rawURL, "://"); ok && strings.HasSuffix(strings.ToLower(scheme), "+cluster") {
		return parseClusterURL(rawURL)
	}
	var o Options
	u, err := url.Parse(rawURL)
	if err != nil {
		return o, fmt.Errorf("%w: %v", ErrInvalidURL, redactParseError(err))
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return o, fmt.Errorf("%w: scheme %q (want redis or rediss)", ErrInvalidURL, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return o, fmt.Errorf("%w: %q has no host", ErrInvalidURL, redactURL(rawURL))
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return o, fmt.Errorf("%w: %q has no host", ErrInvalidURL, redactURL(rawURL))
	}
	if port == "" {
		port = "6379"
	}
	o.Addrs = []string{net.JoinHostPort(host, port)}
	if o.TLS != nil {
		o.TLS.ServerName = host
	}
	setUser(&o, u.User)
	if p := strings.Trim(u.Path, "/"); p != "" {
		if o.DB, err = parseDB(p); err != nil {
			return o, err
		}
	}
	if err := parseQuery(u.Query(), &o); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	return o, nil
}

// setUser sets the credentials of the data nodes from a URL's user info, which every
// form has in the same place. "redis://secret@host", a user name alone, is the
// classic password-only form.
func setUser(o *Options, user *url.Userinfo) {
	if user == nil {
		return
	}
	o.Username = user.Username()
	o.Password, _ = user.Password()
	if o.Password == "" && o.Username != "" {
		o.Password, o.Username = o.Username, ""
	}
}

// parseDB reads the database number of a URL's path.
func parseDB(s string) (int, error) {
	db, err := strconv.Atoi(s)
	if err != nil || db < 0 {
		return 0, fmt.Errorf("%w: database %q is not a number", ErrInvalidURL, s)
	}
	return db, nil
}

// splitHostList takes the host list out of what follows "scheme://" in the forms
// that have several hosts (Sentinels, Cluster seeds), which is not a valid URL host:
// userinfo ends with its "@" when there is one, and tail is the path, query and
// fragment, for net/url to read with one host in the list's place.
func splitHostList(rest string) (userinfo, hosts, tail string) {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	hosts = authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hosts = authority[:i+1], authority[i+1:]
	}
	return userinfo, hosts, tail
}

func parseQuery(q url.Values, o *Options) error {
	for name, values := range q {
		if len(values) != 1 {
			return fmt.Errorf("%w: parameter %s given %d times", ErrInvalidURL, name, len(values))
		}
		v := values[0]
		var err error
		switch name {
		case "dial_timeout":
			o.DialTimeout, err = time.ParseDuration(v)
		case "read_timeout":
			o.ReadTimeout, err = time.ParseDuration(v)
		case "write_timeout":
			o.WriteTimeout, err = time.ParseDuration(v)
		case "protocol":
			o.Protocol, err = strconv.Atoi(v)
		case "client_name":
			o.ClientName = v
		case "pool_size":
			o.PoolSize, err = strconv.Atoi(v)
		case "min_idle":
			o.MinIdle, err = strconv.Atoi(v)
		case "key_prefix":
			o.KeyPrefix = v
		default:
			return fmt.Errorf("%w: unknown parameter %q", ErrInvalidURL, name)
		}
		if err != nil {
			return fmt.Errorf("%w: parameter %s=%q: %v", ErrInvalidURL, name, v, err)
		}
	}
	return nil
}

// parseSentinelURL parses the redis+sentinel form: the hosts are Sentinels, the first
// path segment is the master's name. user:password are the data nodes' credentials;
// the Sentinels' own are the sentinel_username and sentinel_password parameters;
// replica_reads=true sets ReplicaReads. Other parameters are those of ParseURL.
func parseSentinelURL(rawURL string) (Options, error) {
	var o Options
	scheme, rest, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "redis+sentinel":
	case "rediss+sentinel":
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return o, fmt.Errorf("%w: scheme %q (want redis+sentinel or rediss+sentinel)", ErrInvalidURL, scheme)
	}
	userinfo, hosts, tail := splitHostList(rest)
	u, err := url.Parse("redis://" + userinfo + "sentinels" + tail)
	if err != nil {
		return o, fmt.Errorf("%w: %v", ErrInvalidURL, redactParseError(err))
	}
	for h := range strings.SplitSeq(hosts, ",") {
		addr, err := sentinelAddr(h)
		if err != nil {
			return o, fmt.Errorf("%w: Sentinel %q: %v", ErrInvalidURL, h, err)
		}
		o.Addrs = append(o.Addrs, addr)
	}
	setUser(&o, u.User)
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if segs[0] == "" || len(segs) > 2 {
		return o, fmt.Errorf("%w: %q: want /master-name or /master-name/db", ErrInvalidURL, u.Path)
	}
	o.SentinelMaster = segs[0]
	if len(segs) == 2 {
		if o.DB, err = parseDB(segs[1]); err != nil {
			return o, err
		}
	}
	q := u.Query()
	for _, name := range []string{"sentinel_username", "sentinel_password", "replica_reads"} {
		if len(q[name]) > 1 {
			return o, fmt.Errorf("%w: parameter %s given %d times", ErrInvalidURL, name, len(q[name]))
		}
	}
	o.SentinelUsername, o.SentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
	if v := q.Get("replica_reads"); v != "" {
		if o.ReplicaReads, err = strconv.ParseBool(v); err != nil {
			return o, fmt.Errorf("%w: parameter replica_reads=%q: %v", ErrInvalidURL, v, err)
		}
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Del("replica_reads")
	if err := parseQuery(q, &o); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	return o, nil
}

// sentinelAddr checks one host[:port] of a Sentinel list, defaulting the port to 26379.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a bare name or address, or an IPv6 literal in brackets.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "26379"
	}
	if host == "" || strings.ContainsAny(host, "[]@/ ") {
		return "", fmt.Errorf("bad host")
	}
	return net.JoinHostPort(host, port), nil
}

// parseClusterURL parses the redis+cluster form: the hosts are seed nodes of a Cluster
// (any one that answers is enough), comma-separated, with port 6379 by default and
// IPv6 addresses in brackets. A Cluster has only database 0, so the path must be empty,
// "/" or "/0". Query parameters are those of ParseURL.
//
//	redis+cluster://user:pass@10.0.0.1:7000,10.0.0.2:7000/?dial_timeout=1s
func parseClusterURL(rawURL string) (Options, error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	var base string
	switch strings.ToLower(scheme) {
	case "redis+cluster":
		base = "redis"
	case "rediss+cluster":
		base = "rediss"
	default:
		return Options{}, fmt.Errorf("%w: scheme %q (want redis+cluster or rediss+cluster)", ErrInvalidURL, scheme)
	}
	// ParseURL reads the rest with the first seed in the host list's place.
	userinfo, hosts, tail := splitHostList(rest)
	seeds := strings.Split(hosts, ",")
	addrs := make([]string, 0, len(seeds))
	for _, s := range seeds {
		addr, err := seedAddr(s)
		if err != nil {
			return Options{}, err
		}
		addrs = append(addrs, addr)
	}
	o, err := ParseURL(base + "://" + userinfo + seeds[0] + tail)
	if err != nil {
		return o, err
	}
	o.Addrs = addrs
	o.Cluster = true
	if o.TLS != nil {
		// Each node's certificate is checked against its own host (conn.Dial sets
		// ServerName from the address when it is empty).
		o.TLS.ServerName = ""
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	return o, nil
}

// seedAddr makes host:port of one seed, with port 6379 by default.
func seedAddr(s string) (string, error) {
	u, err := url.Parse("redis://" + s)
	if s == "" || err != nil || u.Hostname() == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: seed %q is not host[:port]", ErrInvalidURL, s)
	}
	port := u.Port()
	if port == "" {
		port = "6379"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
