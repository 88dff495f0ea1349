package respire

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/respire/respire/internal/confine"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/resp"
)

// ScanOptions narrow a SCAN-family iteration. The zero value scans everything with the
// server's default COUNT.
type ScanOptions struct {
	Match string // glob pattern (MATCH); for Scan, the key prefix is added to it
	Count int    // hint of how much work one round trip does (COUNT)
	Type  string // key type filter, Scan only (TYPE)
}

// FieldValue is one field of a hash, as HScan yields it.
type FieldValue struct {
	Field, Value string
}

// ScoredMember is one member of a sorted set, as ZScan yields it.
type ScoredMember struct {
	Member string
	Score  float64
}

// Scan iterates over the keyspace with SCAN, round trip by round trip. As with SCAN,
// a key may be seen more than once if the keyspace changes meanwhile. Keys come back
// without the client's key prefix. An error ends the iteration after it is yielded.
// On a Cluster it walks every master in turn, each with its own cursor; a key that
// migrates to another master during the walk may be seen twice or not at all.
//
//	for key, err := range c.Scan(ctx, respire.ScanOptions{Match: "user:*"}) { ... }
func (c *Client) Scan(ctx context.Context, opts ScanOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		match := opts.Match
		if c.prefix != "" {
			if match == "" {
				match = "*"
			}
			match = confine.EscapeGlob(c.prefix) + match
		}
		for v, err := range c.scanKeys(ctx, ScanOptions{Match: match, Count: opts.Count, Type: opts.Type}) {
			if err != nil {
				yield("", err)
				return
			}
			key, err := v.Text()
			if err == nil {
				key = strings.TrimPrefix(key, c.prefix)
			}
			if !yield(key, err) {
				return
			}
		}
	}
}

// HScan iterates over the fields of a hash with HSCAN.
func (c *Client) HScan(ctx context.Context, key string, opts ScanOptions) iter.Seq2[FieldValue, error] {
	return func(yield func(FieldValue, error) bool) {
		pairs := c.scanPairs(ctx, "HSCAN", key, opts)
		for kv, err := range pairs {
			f, _ := kv[0].Text()
			v, _ := kv[1].Text()
			if !yield(FieldValue{f, v}, err) || err != nil {
				return
			}
		}
	}
}

// SScan iterates over the members of a set with SSCAN.
func (c *Client) SScan(ctx context.Context, key string, opts ScanOptions) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		if err := checkKey(key, opts); err != nil {
			yield("", err)
			return
		}
		for v, err := range c.scan(ctx, []any{"SSCAN", key}, opts) {
			var m string
			if err == nil {
				m, err = v.Text()
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// ZScan iterates over the members of a sorted set with their scores, with ZSCAN.
func (c *Client) ZScan(ctx context.Context, key string, opts ScanOptions) iter.Seq2[ScoredMember, error] {
	return func(yield func(ScoredMember, error) bool) {
		for kv, err := range c.scanPairs(ctx, "ZSCAN", key, opts) {
			var sm ScoredMember
			if err == nil {
				sm.Member, _ = kv[0].Text()
				sm.Score, err = kv[1].Float()
			}
			if !yield(sm, err) || err != nil {
				return
			}
		}
	}
}

func checkKey(key string, opts ScanOptions) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	if opts.Type != "" {
		return fmt.Errorf("%w: TYPE applies to SCAN only", ErrInvalidArg)
	}
	return nil
}

// scanPairs yields the elements of a field/value-style scan two at a time.
func (c *Client) scanPairs(ctx context.Context, cmd, key string, opts ScanOptions) iter.Seq2[[2]resp.Value, error] {
	return func(yield func([2]resp.Value, error) bool) {
		if err := checkKey(key, opts); err != nil {
			yield([2]resp.Value{}, err)
			return
		}
		var pending resp.Value
		odd := false
		for v, err := range c.scan(ctx, []any{cmd, key}, opts) {
			if err != nil {
				yield([2]resp.Value{}, err)
				return
			}
			if !odd {
				pending, odd = v, true
				continue
			}
			odd = false
			if !yield([2]resp.Value{pending, v}, nil) {
				return
			}
		}
	}
}

// scanKeys runs SCAN on every master in turn (the one server outside a Cluster),
// each with its own cursor.
func (c *Client) scanKeys(ctx context.Context, opts ScanOptions) iter.Seq2[resp.Value, error] {
	return func(yield func(resp.Value, error) bool) {
		masters, err := c.route.Masters(ctx)
		if err != nil {
			yield(resp.Value{}, err)
			return
		}
		for _, t := range masters {
			do := func(ctx context.Context, args ...any) (resp.Value, error) {
				return c.scanOn(ctx, t.Addr, args)
			}
			for v, err := range c.scanWith(ctx, do, []any{"SCAN"}, opts) {
				if !yield(v, err) || err != nil {
					return
				}
			}
		}
	}
}

// scanOn sends one SCAN (args) to the master at addr, told to the observer as Do's
// commands are.
func (c *Client) scanOn(ctx context.Context, addr string, args []any) (resp.Value, error) {
	// SCAN's entry: read-only, so that a SCAN lost with its connection is sent again.
	info, _ := c.entry(args)
	if obs := c.obs; obs != nil {
		start := addr
		if start == "" {
			start = c.batchAddr() // the one server
		}
		p := c.observeCommand(ctx, obs, info, args, start)
		defer p.end()
		var v resp.Value
		v, p.last, p.err = c.route.Do(p.ctx, &route.Cmd{Args: args, Info: info}, &route.Call{Addr: addr})
		return v, p.err
	}
	v, _, err := c.route.Do(ctx, &route.Cmd{Args: args, Info: info}, &route.Call{Addr: addr})
	return v, err
}

// scan runs the cursor loop of any SCAN-family command and yields each element.
func (c *Client) scan(ctx context.Context, head []any, opts ScanOptions) iter.Seq2[resp.Value, error] {
	return c.scanWith(ctx, c.Do, head, opts)
}

// scanWith is scan with the function that sends each round trip.
func (c *Client) scanWith(ctx context.Context, do func(ctx context.Context, args ...any) (resp.Value, error), head []any, opts ScanOptions) iter.Seq2[resp.Value, error] {
	return func(yield func(resp.Value, error) bool) {
		if opts.Count < 0 {
			yield(resp.Value{}, fmt.Errorf("%w: negative COUNT", ErrInvalidArg))
			return
		}
		cursor := "0"
		for {
			args := append(append([]any{}, head...), cursor)
			if opts.Match != "" {
				args = append(args, "MATCH", opts.Match)
			}
			if opts.Count > 0 {
				args = append(args, "COUNT", opts.Count)
			}
			if opts.Type != "" {
				args = append(args, "TYPE", opts.Type)
			}
			v, err := do(ctx, args...)
			if err != nil {
				yield(resp.Value{}, err)
				return
			}
			next, elems, err := scanReply(v)
			if err != nil {
				yield(resp.Value{}, err)
				return
			}
			for _, e := range elems {
				if !yield(e, nil) {
					return
				}
			}
			if next == "0" {
				return
			}
			cursor = next
		}
	}
}

func scanReply(v resp.Value) (string, []resp.Value, error) {
	parts, err := v.Array()
	if err != nil || len(parts) != 2 {
		return "", nil, fmt.Errorf("respire: malformed SCAN reply %s", v)
	}
	cursor, err := parts[0].Text()
	if err != nil {
		return "", nil, err
	}
	elems, err := parts[1].Array()
	return cursor, elems, err
}
