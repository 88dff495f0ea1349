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
// The port defaults to 6379. A password alone may be given as "redis://:pw@host".
// Query parameters: dial_timeout, read_timeout, write_timeout (Go durations such as
// "500ms"), protocol (2 or 3), client_name, pool_size, min_idle, key_prefix. An unknown
// parameter is an error, so a typo does not go unnoticed.
func ParseURL(rawURL string) (Options, error) {
	var o Options
	u, err := url.Parse(rawURL)
	if err != nil {
		return o, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return o, fmt.Errorf("%w: scheme %q (want redis or rediss)", ErrInvalidURL, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return o, fmt.Errorf("%w: %q has no host", ErrInvalidURL, rawURL)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return o, fmt.Errorf("%w: %q has no host", ErrInvalidURL, rawURL)
	}
	if port == "" {
		port = "6379"
	}
	o.Addrs = []string{net.JoinHostPort(host, port)}
	if o.TLS != nil {
		o.TLS.ServerName = host
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
		if o.Password == "" && o.Username != "" {
			// "redis://secret@host" is the classic password-only form.
			o.Password, o.Username = o.Username, ""
		}
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		db, err := strconv.Atoi(p)
		if err != nil || db < 0 {
			return o, fmt.Errorf("%w: database %q is not a number", ErrInvalidURL, p)
		}
		o.DB = db
	}
	if err := parseQuery(u.Query(), &o); err != nil {
		return o, err
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	return o, nil
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
