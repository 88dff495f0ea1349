package respire

import (
	"context"
	"fmt"

	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/internal/script"
	"github.com/respire/respire/resp"
)

// Script is a Lua script run by its SHA1 digest (EVALSHA), falling back to sending its
// source (EVAL) when the server answers NOSCRIPT, which also caches it there. Create
// scripts once, as package variables; a Script is safe for concurrent use.
//
// The digest is computed on first use, not by NewScript. In FIPS 140-only mode
// (GODEBUG=fips140=only), where this process may not compute SHA-1, the server gives
// it instead: SCRIPT LOAD, once per connection, remembered by that connection.
type Script struct {
	s *script.Script
}

// NewScript returns the script for src. It computes nothing, so a package variable
// costs nothing at start-up.
func NewScript(src string) *Script {
	return &Script{s: script.New(src)}
}

// Hash returns the script's SHA1 digest as EVALSHA takes it, or "" in FIPS 140-only
// mode, where this process may not compute it (Run then asks the server).
func (s *Script) Hash() string {
	d, _ := s.s.Local()
	return d
}

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.s.Source() }

// Run runs the script with KEYS (which get the client's key prefix) and ARGV.
func (s *Script) Run(ctx context.Context, c *Client, keys []string, args ...any) (resp.Value, error) {
	for i, k := range keys {
		if k == "" {
			return resp.Value{}, fmt.Errorf("%w: empty key %d", ErrInvalidArg, i)
		}
	}
	sha, err := s.digest(ctx, c, keys)
	if err != nil {
		return resp.Value{}, err
	}
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "EVALSHA", sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	cmd = append(cmd, args...)
	v, err := c.Do(ctx, cmd...)
	if resp.IsNoScript(err) {
		cmd[0], cmd[1] = "EVAL", s.s.Source()
		return c.Do(ctx, cmd...)
	}
	return v, err
}

// digest returns the digest to send EVALSHA with: the local one, or in FIPS 140-only
// mode the one the server of the first key (of any key, without keys) gives on the
// connection that serves it. Should EVALSHA then go elsewhere (a reconnect, a slot
// moved), that server answers NOSCRIPT at worst, and Run sends the source.
func (s *Script) digest(ctx context.Context, c *Client, keys []string) (string, error) {
	if d, ok := s.s.Local(); ok {
		return d, nil
	}
	var key string
	if len(keys) > 0 {
		key = keys[0]
	}
	cn, err := c.link.Conn(ctx, route.SharedLane, key)
	if err != nil {
		return "", err
	}
	return s.s.On(ctx, cn)
}
