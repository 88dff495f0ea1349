package route

import (
	"context"
	"fmt"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

// Commands is what a router asks its caller about each command of a batch
// ([Router.DoMulti]): the key table, the key prefix and what COMMAND INFO said of a
// command are the caller's. A pointer implements it, so that passing one allocates
// nothing.
type Commands interface {
	// Command checks args, one command of a batch, and returns how it is to be sent
	// (its key positions appended to keys, scratch space the caller may not keep) and
	// its entry in the key table. An error refuses the whole batch, before anything is
	// sent.
	Command(ctx context.Context, args []any, keys []int) (conn.CallOptions, *command.Info, error)
}

// DoMulti checks each of cmds with cc and sends them as one pipeline: split by node on
// a Cluster (a Plan of their encodings), else encoded straight into the shared
// connection's write buffer, so that a big batch is copied once. The results come in
// cmds' order; the error is for the batch as a whole, each command's own error reply
// is in its Result. A command that was redirected or told to try again is retried
// alone. The connection it returns is the one the batch went on, for callers that
// name its server: nil when it went to several servers or to none.
func (r *Router) DoMulti(ctx context.Context, cmds [][]any, cc Commands) ([]conn.Result, *conn.Conn, error) {
	if r.cluster != nil {
		return r.cluster.doMulti(ctx, cmds, cc)
	}
	prefix, keys, err := BatchKeys(ctx, cmds, cc)
	if err != nil {
		return nil, nil, err
	}
	return r.one.doMulti(ctx, prefix, keys, cmds)
}

// BatchKeys checks each of cmds with cc and returns the key prefix and, where it
// applies, the positions it goes to in each command (nil without a prefix): what
// conn.Conn.DoMultiWith takes to send them.
func BatchKeys(ctx context.Context, cmds [][]any, cc Commands) (prefix string, keys [][]int, err error) {
	for i, args := range cmds {
		o, _, err := cc.Command(ctx, args, nil)
		if err != nil {
			return "", nil, fmt.Errorf("command %d: %w", i, err)
		}
		if o.KeyPrefix != "" {
			if keys == nil {
				keys = make([][]int, len(cmds))
			}
			prefix, keys[i] = o.KeyPrefix, o.Keys
		}
	}
	return prefix, keys, nil
}

// doMulti plans cmds, each checked by cc, and sends the plan.
func (r *Cluster) doMulti(ctx context.Context, cmds [][]any, cc Commands) ([]conn.Result, *conn.Conn, error) {
	p := newPlan(true)
	defer p.Release()
	for i, args := range cmds {
		o, info, err := cc.Command(ctx, args, p.keys[:0])
		if err == nil {
			err = p.Add(info, o.KeyPrefix, o.Keys, args)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("command %d: %w", i, err)
		}
	}
	return r.doPlan(ctx, p)
}
