package respire

import (
	"context"
	"fmt"
	"math"
	"reflect"

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
	// The command is built in an array on the stack, by direct stores outside loops:
	// stored through a slice, by append or in a loop, each key's box would be taken to
	// escape and allocated. Scripts take one or two keys, seldom more.
	var small [scriptSmallArgs]any
	n := 3 + len(keys) + len(args)
	if n > len(small) || len(keys) > 2 {
		return s.send(ctx, c, bigCommand(sha, keys, args))
	}
	small[0], small[1], small[2] = "EVALSHA", sha, len(keys)
	switch len(keys) {
	case 2:
		small[3], small[4] = keys[0], keys[1]
	case 1:
		small[3] = keys[0]
	}
	for i, a := range args { // not copy, which the compiler takes to store on the heap
		small[3+len(keys)+i] = a
	}
	return s.send(ctx, c, small[:n])
}

// bigCommand is the EVALSHA of a script with many keys or arguments. The arguments go
// in as the text the server receives (resp.AppendArgText, which encodes as Do does),
// never as the caller's values: a value stored on the heap would make every caller's
// arguments escape, including those of the small commands Run builds on the stack.
// An argument that cannot be encoded is replaced by one of its type that fails the
// same way, so that Do reports it as it would have.
func bigCommand(sha string, keys []string, args []any) []any {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "EVALSHA", sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	var text []byte
	for i, a := range args {
		start := len(text)
		var err error
		if text, err = resp.AppendArgText(text, 3+len(keys)+i, a); err != nil {
			cmd = append(cmd, failingLike(a))
			continue
		}
		cmd = append(cmd, text[start:len(text):len(text)])
	}
	return cmd
}

// failingLike returns a new value of a's type that resp cannot encode either: NaN for
// a float kind (the one float that fails), else the zero value (nil for nil).
func failingLike(a any) any {
	t := reflect.TypeOf(a)
	if t == nil {
		return nil
	}
	v := reflect.New(t).Elem()
	if k := t.Kind(); k == reflect.Float32 || k == reflect.Float64 {
		v.SetFloat(math.NaN())
	}
	return v.Interface()
}

// send sends cmd, an EVALSHA, and sends it again as EVAL with the source after
// NOSCRIPT, which says it did not run.
func (s *Script) send(ctx context.Context, c *Client, cmd []any) (resp.Value, error) {
	v, err := c.Do(ctx, cmd...)
	if resp.IsNoScript(err) {
		cmd[0], cmd[1] = "EVAL", s.s.Source()
		return c.Do(ctx, cmd...)
	}
	return v, err
}

// scriptSmallArgs is how many words of EVALSHA (with its keys and arguments) Run sends
// without allocating their list.
const scriptSmallArgs = 12

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
