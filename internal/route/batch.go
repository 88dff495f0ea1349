package route

import (
	"context"
	"fmt"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

// Batch is a batch for [Router.DoMulti], with what the caller worked out for each of
// its commands before anything is sent: the key table, the key prefix and what COMMAND
// INFO said of a command are the caller's, so the router asks nothing back. Nothing of
// it is retained.
type Batch struct {
	Cmds [][]any
	// Infos are the commands' entries in the caller's key table, in Cmds' order (nil:
	// none); a Cluster routes each by its keys.
	Infos []*command.Info
	// Prefix is the key prefix, and Keys the positions it goes to in each command
	// (nil without a prefix).
	Prefix string
	Keys   [][]int
}

// keys returns the positions the prefix goes to in command i.
func (b *Batch) keys(i int) []int {
	if b.Keys == nil {
		return nil
	}
	return b.Keys[i]
}

// doMulti sends b as one pipeline on the shared connection, encoded into it directly
// (conn.DoMultiWith), so that a big batch is copied once.
func (o *one) doMulti(ctx context.Context, b *Batch) ([]conn.Result, *conn.Conn, error) {
	return o.sendBatch(ctx, func(cn *conn.Conn) ([]conn.Result, error) {
		return cn.DoMultiWith(ctx, b.Prefix, b.Keys, b.Cmds...)
	})
}

// doMulti plans b's commands, split by node, and sends the plan.
func (r *Cluster) doMulti(ctx context.Context, b *Batch) ([]conn.Result, *conn.Conn, error) {
	p := newPlan(true)
	defer p.Release()
	for i, args := range b.Cmds {
		if err := p.Add(b.Infos[i], b.Prefix, b.keys(i), args); err != nil {
			return nil, nil, fmt.Errorf("command %d: %w", i, err)
		}
	}
	return r.doPlan(ctx, p)
}
