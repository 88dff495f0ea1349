package conn

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// digestLen is the length of a script digest as the server gives it: SHA-1 in hex.
const digestLen = 40

// ScriptDigest returns the digest this connection's server runs the Lua script src by
// (EVALSHA), for a process that may not compute SHA-1 itself (FIPS 140-only mode,
// GODEBUG=fips140=only). The server tells it once, with SCRIPT LOAD, which also caches
// the script there; the answer is remembered on this connection alone, like its
// capabilities, since a digest names a script in one server's cache and is trusted
// only where it was given. A failure means the script did not run: an error of SCRIPT
// LOAD's transport matches ErrNotSent (SCRIPT LOAD runs nothing), a server error is
// returned as is, and a reply that is not a digest matches ErrBadDigest.
func (c *Conn) ScriptDigest(ctx context.Context, src string) (string, error) {
	return c.ScriptDigestBy(ctx, time.Time{}, src)
}

// ScriptDigestBy is ScriptDigest whose SCRIPT LOAD is waited for until by at the
// latest (zero: no bound; CallOptions.Deadline), for callers that bound the script's
// run so: the digest's look-up is part of it.
func (c *Conn) ScriptDigestBy(ctx context.Context, by time.Time, src string) (string, error) {
	if d, ok := c.ident.scripts.Load(src); ok {
		return d.(string), nil
	}
	v, err := c.DoWith(ctx, CallOptions{Deadline: by}, "SCRIPT", "LOAD", src)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) {
			return "", &CallError{Err: fmt.Errorf("SCRIPT LOAD: %w", ce.Err)}
		}
		return "", err
	}
	d, err := v.Text()
	if err != nil || !isDigest(d) {
		// Not quoted: a server that sends no digest may send anything, of any size.
		return "", fmt.Errorf("%w: SCRIPT LOAD answered a %s of %d bytes", ErrBadDigest, v.Kind(), len(d))
	}
	c.ident.scripts.Store(src, d)
	return d, nil
}

// isDigest reports whether d is 40 hexadecimal digits, as the server writes SHA-1.
func isDigest(d string) bool {
	if len(d) != digestLen {
		return false
	}
	for i := range len(d) {
		if b := d[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F') {
			return false
		}
	}
	return true
}
