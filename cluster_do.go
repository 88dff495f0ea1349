package respire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/respire/respire/cluster"
	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// clusterSlot returns the hash slot of a command's keys (anySlot when it has none), or
// an error matching ErrCrossSlot when they hash to different slots. prefix is the
// client's key prefix and prefixed the positions it applies to (shard channels, which
// also pick the slot, do not get it). It reads args without retaining them.
func clusterSlot(args []any, prefix string, prefixed []int) (int, error) {
	info, _ := command.LookupArgs(args)
	return clusterSlotInfo(info, args, prefix, prefixed)
}

// clusterSlotInfo is clusterSlot with the command's entry (nil: a command without
// keys), which for a command the table lacks the server described.
func clusterSlotInfo(info *command.Info, args []any, prefix string, prefixed []int) (int, error) {
	if info == nil {
		return anySlot, nil
	}
	var buf [8]int
	slot := anySlot
	for _, i := range command.InfoKeyIndexes(info, args, buf[:0]) {
		p := ""
		if prefix != "" && slices.Contains(prefixed, i) {
			p = prefix
		}
		s := argSlot(p, args[i])
		switch {
		case slot == anySlot:
			slot = s
		case s != slot:
			return anySlot, crossSlotError(args[0], slot, s)
		}
	}
	return slot, nil
}

// argSlot is the slot of one key argument, as the server will read its text.
func argSlot(prefix string, a any) int {
	switch k := a.(type) {
	case string:
		return cluster.PrefixedSlot(prefix, k)
	case []byte:
		return cluster.PrefixedSlot(prefix, k)
	}
	var scratch [48]byte
	enc, err := resp.AppendArg(scratch[:0], 0, a)
	if err != nil {
		return 0 // refused when the command is encoded
	}
	// Strip the bulk header "$n\r\n" and the trailing CRLF.
	if i := bytes.IndexByte(enc, '\n'); i >= 0 && len(enc) >= i+3 {
		enc = enc[i+1 : len(enc)-2]
	}
	return cluster.PrefixedSlot(prefix, enc)
}

// crossSlotError names the command and two of its slots. It copies the name, so the
// caller's arguments do not escape.
func crossSlotError(name any, a, b int) error {
	var buf [12]byte
	n, ok := lowerName(name, &buf)
	cmd := "command"
	if ok {
		cmd = strings.ToUpper(string(n))
	}
	return fmt.Errorf("%w: the keys of %s hash to slots %d and %d; use a {hash tag} to keep them together", ErrCrossSlot, cmd, a, b)
}

// keySlot is the slot a key (without the client's prefix) is served by, anySlot outside
// a Cluster.
func (c *Client) keySlot(key string) int {
	if c.cluster == nil {
		return anySlot
	}
	return cluster.PrefixedSlot(c.prefix, key)
}

// doCluster runs one command on a Cluster: routed by slot, fanned out to every master
// when that is what the command means, redirections followed.
func (c *Client) doCluster(ctx context.Context, o conn.CallOptions, info *command.Info, args []any) (resp.Value, error) {
	slot, err := clusterSlotInfo(info, args, c.prefix, o.Keys)
	if err != nil {
		return resp.Value{}, err
	}
	known := info != nil
	if slot == anySlot && known {
		if m, ok := fanouts[info.Name]; ok {
			return c.doFanout(ctx, o, args, info.Name, m)
		}
	}
	replica := c.opts.ReplicaReads && !o.Blocking && known && info.Flags&command.FlagReadonly != 0
	v, _, err := c.cluster.do(ctx, o, args, slot, replica, nil, nil)
	return v, err
}

// follow decides what comes after the server error reply err (se) to a command for
// slot that cn carried (cn may be nil): another attempt on the node a MOVED or ASK
// names (asking for ASK), or on the slot's owner after TRYAGAIN or CLUSTERDOWN and a
// backoff (target nil). Those replies mean the command did not run. stop is what to
// return instead: any other error, too many redirections or retries, ctx's end. hops
// and tries count the redirections and retries of one command across calls.
func (r *clusterRouter) follow(ctx context.Context, se *resp.ServerError, err error, slot int, cn *conn.Conn, hops, tries *int) (target *clusterNode, asking bool, stop error) {
	if rd, ok := se.Redirect(); ok {
		if *hops++; *hops > maxRedirects {
			return nil, false, fmt.Errorf("%w: %d redirections for slot %d, the last: %w", ErrTooManyRedirects, maxRedirects, slot, err)
		}
		if *hops > 2 {
			// Nodes that disagree send a command back and forth until gossip
			// settles; give it a moment.
			if err := sleepCtx(ctx, time.Duration(*hops)*2*time.Millisecond); err != nil {
				return nil, false, err
			}
		}
		addr := rd.Addr
		if cn != nil {
			// A node without a known endpoint is announced as ":port".
			addr = cluster.ResolveAddr(addr, cn.Addr())
		}
		if rd.Ask {
			target, stop = r.node(addr)
		} else {
			target, stop = r.moved(rd.Slot, addr)
		}
		return target, rd.Ask, stop
	}
	if se.Code != "TRYAGAIN" && se.Code != "CLUSTERDOWN" {
		return nil, false, err
	}
	if *tries++; *tries > maxClusterRetries {
		return nil, false, err
	}
	if se.Code == "CLUSTERDOWN" {
		r.refresher.Trigger()
	}
	if err := sleepCtx(ctx, backoff(*tries)); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}

// askingCmd precedes a command redirected by ASK.
var askingCmd = []any{"ASKING"}

// do sends one command for slot and follows what the cluster answers: MOVED (the slot
// has a new owner: update the table and retry there), ASK (send it once, after ASKING,
// to the node importing the slot), TRYAGAIN and CLUSTERDOWN (retry after a backoff).
// Retrying is safe: those replies mean the command did not run. A transport failure
// asks for a topology refresh and is retried once when the command was not sent or is
// read-only. first, when not nil, is the error of an attempt already made on from (a
// member of a batch, a command sent on a connection of the caller's choice), to
// continue from.
//
// It returns the connection that carried the last attempt (nil when none did), for
// callers that learn per connection.
func (r *clusterRouter) do(ctx context.Context, o conn.CallOptions, args []any, slot int, replica bool, first error, from *conn.Conn) (resp.Value, *conn.Conn, error) {
	var (
		target  *clusterNode // where a redirection said to go
		asking  bool
		hops    int
		tries   int
		retried bool
	)
	var (
		v   resp.Value
		cn  = from
		err = first
	)
	if err == nil {
		if v, cn, err = r.attempt(ctx, o, args, slot, replica, nil, false); err == nil {
			return v, cn, nil
		}
	}
	for {
		var se *resp.ServerError
		switch {
		case errors.As(err, &se):
			var stop error
			if target, asking, stop = r.follow(ctx, se, err, slot, cn, &hops, &tries); stop != nil {
				return resp.Value{}, cn, stop
			}
		default:
			var ce *conn.CallError
			if errors.As(err, &ce) {
				r.refresher.Trigger()
			}
			if retried || !retryable(ctx, err, args) {
				return resp.Value{}, cn, err
			}
			retried = true
			target, asking = nil, false
		}
		if v, cn, err = r.attempt(ctx, o, args, slot, replica, target, asking); err == nil {
			return v, cn, nil
		}
	}
}

// attempt sends the command once, to target or else to the node that serves slot, and
// returns the connection that carried it.
func (r *clusterRouter) attempt(ctx context.Context, o conn.CallOptions, args []any, slot int, replica bool, target *clusterNode, asking bool) (resp.Value, *conn.Conn, error) {
	n := target
	if n == nil {
		var err error
		if n, err = r.nodeFor(ctx, slot, replica); err != nil {
			return resp.Value{}, nil, err
		}
	}
	if o.Blocking {
		cn, err := n.pool.Get(ctx)
		if err != nil {
			r.refresher.Trigger()
			return resp.Value{}, nil, err
		}
		if asking {
			// A dedicated connection: nothing can come between the two.
			if _, err := cn.Do(ctx, askingCmd...); err != nil {
				r.release(cn, reusable(err))
				return resp.Value{}, cn, err
			}
		}
		v, err := cn.DoWith(ctx, o, args...)
		r.release(cn, reusable(err))
		return v, cn, err
	}
	cn, err := r.conn(ctx, n)
	if err != nil {
		if n.gone.Load() {
			// The node left while we looked it up; not sent, so retryable.
			return resp.Value{}, nil, &conn.CallError{Err: err}
		}
		return resp.Value{}, nil, err
	}
	if !asking {
		v, err := cn.DoWith(ctx, o, args...)
		return v, cn, err
	}
	v, err := doAsking(ctx, cn, o, args)
	return v, cn, err
}

// doAsking sends ASKING and the command back to back in one batch, so that no other
// caller's command on the shared connection can come between them and use up the
// ASKING.
func doAsking(ctx context.Context, cn *conn.Conn, o conn.CallOptions, args []any) (resp.Value, error) {
	cmds := [2][]any{askingCmd, args}
	var keys [][]int
	if o.KeyPrefix != "" {
		ks := [2][]int{nil, o.Keys}
		keys = ks[:]
	}
	res, err := cn.DoMultiWith(ctx, o.KeyPrefix, keys, cmds[:]...)
	if err != nil {
		return resp.Value{}, err
	}
	if res[0].Err != nil {
		return resp.Value{}, res[0].Err
	}
	return res[1].Value, res[1].Err
}

// backoff is the wait before retry n (from 1) after TRYAGAIN or CLUSTERDOWN: 10ms
// doubling, at most 320ms, so the retries span about a second and a half.
func backoff(n int) time.Duration {
	return min(10*time.Millisecond<<min(n-1, 5), 320*time.Millisecond)
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &conn.CallError{Err: context.Cause(ctx)}
	}
}

// merge says how the replies of a command sent to every master become one.
type merge uint8

const (
	mergeSame   merge = iota + 1 // the same reply from all (OK, a SHA): the first
	mergeConcat                  // arrays: concatenated (KEYS)
	mergeSum                     // integers: summed (DBSIZE)
	mergeAnd                     // arrays of 0/1: element-wise AND (SCRIPT EXISTS)
)

// fanouts are the keyless commands that mean "every master" on a Cluster.
var fanouts = map[string]merge{
	"flushall":        mergeSame,
	"flushdb":         mergeSame,
	"script|load":     mergeSame,
	"script|flush":    mergeSame,
	"function|load":   mergeSame,
	"function|flush":  mergeSame,
	"function|delete": mergeSame,
	"keys":            mergeConcat,
	"dbsize":          mergeSum,
	"script|exists":   mergeAnd,
}

// doFanout sends the command to every master, one after another, and merges the
// replies. The first error ends it (the masters before may have run it).
func (c *Client) doFanout(ctx context.Context, o conn.CallOptions, args []any, name string, m merge) (resp.Value, error) {
	masters, err := c.cluster.masterNodes(ctx)
	if err != nil {
		return resp.Value{}, err
	}
	var out resp.Value
	var sum int64
	var elems []resp.Value
	for i, n := range masters {
		v, _, err := c.cluster.attempt(ctx, o, args, anySlot, false, n, false)
		if err != nil {
			return resp.Value{}, fmt.Errorf("respire: %s on %s: %w", strings.ToUpper(name), n.addr, err)
		}
		switch m {
		case mergeSame:
			if i == 0 {
				out = v
			}
		case mergeSum:
			k, err := v.Int()
			if err != nil {
				return resp.Value{}, err
			}
			sum += k
		case mergeConcat:
			a, err := v.Array()
			if err != nil {
				return resp.Value{}, err
			}
			elems = append(elems, a...)
		case mergeAnd:
			a, err := v.Array()
			if err != nil {
				return resp.Value{}, err
			}
			if i == 0 {
				elems = slices.Clone(a)
				continue
			}
			for j := range min(len(a), len(elems)) {
				x, _ := elems[j].Int()
				y, _ := a[j].Int()
				elems[j] = resp.Integer(min(x, y))
			}
		}
	}
	switch m {
	case mergeSum:
		return resp.Integer(sum), nil
	case mergeConcat, mergeAnd:
		return resp.Array(elems...), nil
	}
	return out, nil
}
