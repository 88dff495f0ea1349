package redisurl

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config is what a URL says, named as respire.Options names it. A field the URL does
// not set is zero.
type Config struct {
	Addrs            []string
	Username         string
	Password         string
	DB               int
	TLS              *tls.Config // for rediss: TLS 1.2 at least, the host verified
	SentinelMaster   string
	SentinelUsername string
	SentinelPassword string
	ReplicaReads     bool
	Cluster          bool
	DialTimeout      time.Duration
	ReadTimeout      time.Duration
	WriteTimeout     time.Duration
	Protocol         int
	ClientName       string
	PoolSize         int
	MinIdle          int
	KeyPrefix        string
}

// Parse reads a URL in one of the forms respire.ParseURL documents. It checks the
// URL's syntax, not whether the settings make a usable client (a port out of range, a
// negative pool size): that is the caller's check of its options.
func Parse(rawURL string) (Config, error) {
	c, err := parse(rawURL)
	if err != nil && ambiguousUserinfo(rawURL) {
		// The error may quote, or net/url's may hold, a piece of a password that an
		// unescaped '/', '?' or '#' cut short: say why without quoting any of it.
		return Config{}, fmt.Errorf("%q: %w", redactLoose(rawURL), errAmbiguousUserinfo)
	}
	return c, err
}

// errAmbiguousUserinfo is the error of a URL that does not parse and has a '/', '?' or
// '#' before its last '@': a password holding one of them unescaped, which ends the
// user information early and runs on into the host, the path or the query.
var errAmbiguousUserinfo = errors.New("a '/', '?' or '#' comes before the last '@': in a password, percent-encode them (%2F, %3F, %23)")

// ambiguousUserinfo reports whether raw has a '/', '?' or '#' before the last '@' after
// its scheme.
func ambiguousUserinfo(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndexByte(rest, '@')
	return ok && at >= 0 && strings.ContainsAny(rest[:at], "/?#")
}

func parse(rawURL string) (Config, error) {
	if scheme, _, ok := strings.Cut(rawURL, "://"); ok && strings.HasSuffix(strings.ToLower(scheme), "+sentinel") {
		return parseSentinelURL(rawURL)
	}
	if scheme, _, ok := strings.Cut(rawURL, "://"); ok && strings.HasSuffix(strings.ToLower(scheme), "+cluster") {
		return parseClusterURL(rawURL)
	}
	var c Config
	u, err := url.Parse(rawURL)
	if err != nil {
		return c, redactParseError(err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return c, fmt.Errorf("scheme %q (want redis or rediss)", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return c, fmt.Errorf("%q has no host", redact(rawURL))
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return c, fmt.Errorf("%q has no host", redact(rawURL))
	}
	if port == "" {
		port = "6379"
	}
	c.Addrs = []string{net.JoinHostPort(host, port)}
	if c.TLS != nil {
		c.TLS.ServerName = host
	}
	setUser(&c, u.User)
	if p := strings.Trim(u.Path, "/"); p != "" {
		if c.DB, err = parseDB(p); err != nil {
			return c, err
		}
	}
	if err := parseQuery(u.Query(), &c); err != nil {
		return c, err
	}
	return c, nil
}

// setUser sets the credentials of the data nodes from a URL's user info, which every
// form has in the same place. "redis://secret@host", a user name alone, is the
// classic password-only form.
func setUser(c *Config, user *url.Userinfo) {
	if user == nil {
		return
	}
	c.Username = user.Username()
	c.Password, _ = user.Password()
	if c.Password == "" && c.Username != "" {
		c.Password, c.Username = c.Username, ""
	}
}

// parseDB reads the database number of a URL's path.
func parseDB(s string) (int, error) {
	db, err := strconv.Atoi(s)
	if err != nil || db < 0 {
		return 0, fmt.Errorf("database %q is not a number", s)
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

func parseQuery(q url.Values, c *Config) error {
	for name, values := range q {
		if len(values) != 1 {
			return fmt.Errorf("parameter %s given %d times", name, len(values))
		}
		v := values[0]
		var err error
		switch name {
		case "dial_timeout":
			c.DialTimeout, err = time.ParseDuration(v)
		case "read_timeout":
			c.ReadTimeout, err = time.ParseDuration(v)
		case "write_timeout":
			c.WriteTimeout, err = time.ParseDuration(v)
		case "protocol":
			c.Protocol, err = strconv.Atoi(v)
		case "client_name":
			c.ClientName = v
		case "pool_size":
			c.PoolSize, err = strconv.Atoi(v)
		case "min_idle":
			c.MinIdle, err = strconv.Atoi(v)
		case "key_prefix":
			c.KeyPrefix = v
		default:
			return fmt.Errorf("unknown parameter %q", name)
		}
		if err != nil {
			return fmt.Errorf("parameter %s=%q: %w", name, v, err)
		}
	}
	return nil
}

// parseSentinelURL parses the redis+sentinel form: the hosts are Sentinels, the first
// path segment is the master's name. user:password are the data nodes' credentials;
// the Sentinels' own are the sentinel_username and sentinel_password parameters;
// replica_reads=true sets ReplicaReads. Other parameters are those of Parse.
func parseSentinelURL(rawURL string) (Config, error) {
	var c Config
	scheme, rest, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "redis+sentinel":
	case "rediss+sentinel":
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return c, fmt.Errorf("scheme %q (want redis+sentinel or rediss+sentinel)", scheme)
	}
	userinfo, hosts, tail := splitHostList(rest)
	u, err := url.Parse("redis://" + userinfo + "sentinels" + tail)
	if err != nil {
		return c, redactParseError(err)
	}
	for h := range strings.SplitSeq(hosts, ",") {
		addr, err := sentinelAddr(h)
		if err != nil {
			return c, fmt.Errorf("Sentinel %q: %v", h, err)
		}
		c.Addrs = append(c.Addrs, addr)
	}
	setUser(&c, u.User)
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	if segs[0] == "" || len(segs) > 2 {
		return c, fmt.Errorf("%q: want /master-name or /master-name/db", u.Path)
	}
	c.SentinelMaster = segs[0]
	if len(segs) == 2 {
		if c.DB, err = parseDB(segs[1]); err != nil {
			return c, err
		}
	}
	q := u.Query()
	for _, name := range []string{"sentinel_username", "sentinel_password", "replica_reads"} {
		if len(q[name]) > 1 {
			return c, fmt.Errorf("parameter %s given %d times", name, len(q[name]))
		}
	}
	c.SentinelUsername, c.SentinelPassword = q.Get("sentinel_username"), q.Get("sentinel_password")
	if v := q.Get("replica_reads"); v != "" {
		if c.ReplicaReads, err = strconv.ParseBool(v); err != nil {
			return c, fmt.Errorf("parameter replica_reads=%q: %w", v, err)
		}
	}
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Del("replica_reads")
	if err := parseQuery(q, &c); err != nil {
		return c, err
	}
	return c, nil
}

// sentinelAddr checks one host[:port] of a Sentinel list, defaulting the port to 26379.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty host")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: a bare name or address, or an IPv6 literal in brackets.
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "26379"
	}
	if host == "" || strings.ContainsAny(host, "[]@/ ") {
		return "", errors.New("bad host")
	}
	return net.JoinHostPort(host, port), nil
}

// parseClusterURL parses the redis+cluster form: the hosts are seed nodes of a Cluster
// (any one that answers is enough), comma-separated, with port 6379 by default and
// IPv6 addresses in brackets. A Cluster has only database 0, which the caller's check
// of the settings enforces, so the path must be empty, "/" or "/0". Query parameters
// are those of Parse.
//
//	redis+cluster://user:pass@10.0.0.1:7000,10.0.0.2:7000/?dial_timeout=1s
func parseClusterURL(rawURL string) (Config, error) {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	var base string
	switch strings.ToLower(scheme) {
	case "redis+cluster":
		base = "redis"
	case "rediss+cluster":
		base = "rediss"
	default:
		return Config{}, fmt.Errorf("scheme %q (want redis+cluster or rediss+cluster)", scheme)
	}
	// Parse reads the rest with the first seed in the host list's place.
	userinfo, hosts, tail := splitHostList(rest)
	seeds := strings.Split(hosts, ",")
	addrs := make([]string, 0, len(seeds))
	for _, s := range seeds {
		addr, err := seedAddr(s)
		if err != nil {
			return Config{}, err
		}
		addrs = append(addrs, addr)
	}
	c, err := parse(base + "://" + userinfo + seeds[0] + tail)
	if err != nil {
		return c, err
	}
	c.Addrs = addrs
	c.Cluster = true
	if c.TLS != nil {
		// Each node's certificate is checked against its own host (conn.Dial sets
		// ServerName from the address when it is empty).
		c.TLS.ServerName = ""
	}
	return c, nil
}

// seedAddr makes host:port of one seed, with port 6379 by default.
func seedAddr(s string) (string, error) {
	u, err := url.Parse("redis://" + s)
	if s == "" || err != nil || u.Hostname() == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("seed %q is not host[:port]", s)
	}
	port := u.Port()
	if port == "" {
		port = "6379"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
