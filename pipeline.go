package respire

import (
	"context"
	"fmt"
	"strings"

	"github.com/respire/respire/internal/route"
)

// Pipeline collects commands to send together with Exec. Each command is encoded as it
// is added, so the pipeline keeps none of its arguments: once the pipeline's buffer has
// grown, adding a command allocates nothing. A command that cannot be added (invalid
// argument, blocking or connection-state command) makes Exec fail without sending
// anything. A Pipeline belongs to one goroutine; it can be reused after Exec.
type Pipeline struct {
	c *Client
	// plan is the commands, encoded with the key prefix applied and, on a Cluster,
	// planned by slot: taken from a pool by the first Do, given back by Exec.
	plan *route.Plan
	n    int
	err  error // the first command that could not be added
}

// Pipeline returns an empty pipeline on c.
func (c *Client) Pipeline() *Pipeline { return &Pipeline{c: c} }

// Do adds a command to the pipeline.
func (p *Pipeline) Do(args ...any) *Pipeline {
	defer func() { p.n++ }()
	if p.err != nil {
		return p
	}
	var keys [8]int
	o, info, err := p.c.callOptionsInfo(args, keys[:0])
	switch {
	case err != nil:
	case o.Blocking:
		err = fmt.Errorf("%w: %s blocks the server; use Do", ErrConnState, commandName(args))
	default:
		if p.plan == nil {
			p.plan = p.c.route.NewPlan()
		}
		err = p.plan.Add(info, o.KeyPrefix, o.Keys, args)
	}
	if err != nil {
		p.err = fmt.Errorf("command %d: %w", p.n, err)
	}
	return p
}

// Len returns the number of commands added since the last Exec.
func (p *Pipeline) Len() int { return p.n }

// Exec sends every command added in one round trip, as DoMulti does, and empties the
// pipeline. The error is for the batch as a whole; single commands' error replies are
// in their Result.
func (p *Pipeline) Exec(ctx context.Context) ([]Result, error) {
	plan, n, err := p.plan, p.n, p.err
	p.plan, p.n, p.err = nil, 0, nil
	switch {
	case err != nil:
		plan.Release()
		return nil, err
	case n == 0:
		plan.Release()
		return nil, nil
	case p.c.closed.Load():
		plan.Release()
		return nil, ErrClosed
	}
	return p.c.route.DoPlan(ctx, plan)
}

// commandName returns a command's name for an error message. Unlike formatting args[0]
// with fmt, it does not make the caller's arguments escape.
func commandName(args []any) string {
	var buf [12]byte
	if name, ok := lowerName(args[0], &buf); ok {
		return strings.ToUpper(string(name))
	}
	return "the command"
}
