package respire

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

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
