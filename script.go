package respire

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/respire/respire/resp"
)

// Script is a Lua script run by its SHA1 digest (EVALSHA), falling back to sending its
// source (EVAL) when the server answers NOSCRIPT, which also caches it there. Create
// scripts once, as package variables; a Script is safe for concurrent use.
type Script struct {
	src string
	sha string
}

// NewScript returns the script for src.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:])}
}

// Hash returns the script's SHA1 digest as EVALSHA takes it.
func (s *Script) Hash() string { return s.sha }

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.src }

// Run runs the script with KEYS (which get the client's key prefix) and ARGV.
func (s *Script) Run(ctx context.Context, c *Client, keys []string, args ...any) (resp.Value, error) {
	for i, k := range keys {
		if k == "" {
			return resp.Value{}, fmt.Errorf("%w: empty key %d", ErrInvalidArg, i)
		}
	}
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "EVALSHA", s.sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	cmd = append(cmd, args...)
	v, err := c.Do(ctx, cmd...)
	if resp.IsNoScript(err) {
		cmd[0], cmd[1] = "EVAL", s.src
		return c.Do(ctx, cmd...)
	}
	return v, err
}
