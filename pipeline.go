package respire

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/internal/route"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/resp"
)

// Pipeline collects commands to send together with Exec. Each command is encoded as it
// is added, so the pipeline keeps none of its arguments: once the pipeline's buffer has
// grown, adding a command allocates nothing. A command that cannot be added (invalid
// argument, blocking or connection-state command) makes Exec fail without sending
// anything. A Pipeline belongs to one goroutine; it can be reused after Exec.
//
// On a Cluster or with a key prefix, a command the client's command table lacks (a
// module's) is routed and prefixed by what COMMAND INFO says of it, which Do, having
// no context, cannot ask: from the first such command not asked about yet on, the
// commands are encoded as they come, and Exec asks, then plans them from their
// encoding.
type Pipeline struct {
	c *Client
	// plan is the commands, encoded with the key prefix applied and, on a Cluster,
	// planned by slot: taken from a pool by the first Do, given back by Exec unless
	// it is too big for the pool, when the pipeline keeps it for its next commands
	// (Plan.Recycle).
	plan *route.Plan
	// later is the commands after plan's, from the first that waits for COMMAND
	// INFO on, encoded without the prefix, for Exec to plan; nLater counts them. They
	// are encoded rather than kept because keeping them would make every caller's
	// arguments escape to the heap.
	later  []byte
	nLater int
	n      int
	err    error // the first command that could not be added
	// first is the first command's name when the client has an observer, and mixed
	// says a later one had another: the batch's events carry the name its commands
	// share (observe.BatchStart.Name).
	first string
	mixed bool
}

// Pipeline returns an empty pipeline on c.
func (c *Client) Pipeline() *Pipeline { return &Pipeline{c: c} }

// Do adds a command to the pipeline.
func (p *Pipeline) Do(args ...any) *Pipeline {
	defer func() { p.n++ }()
	var info *command.Info // the command's entry, once looked up
	defer func() {
		if p.c.obs == nil {
			return
		}
		switch name := p.c.observedName(info, args); {
		case p.n == 0:
			p.first, p.mixed = name, false
		case name != p.first:
			p.mixed = true
		}
	}()
	if p.err != nil {
		return p
	}
	conf, err := p.c.confine(args)
	if err != nil {
		p.err = fmt.Errorf("command %d: %w", p.n, err)
		return p
	}
	if p.nLater == 0 {
		var keys [8]int
		var o conn.CallOptions
		if o, info, err = p.c.callOptionsInfo(conf, keys[:0]); err == nil {
			if p.plan == nil {
				p.plan = p.c.route.NewPlan()
			}
			err = addToPlan(p.plan, o, info, conf)
		}
	}
	if p.nLater > 0 || err != nil && errors.As(err, new(*unresolvedError)) {
		if p.later, err = resp.AppendCommand(p.later, conf...); err == nil {
			p.nLater++
		}
	}
	if err != nil {
		p.err = fmt.Errorf("command %d: %w", p.n, err)
	}
	return p
}

// addToPlan adds a command to plan as callOptionsInfo found it is to be sent, unless
// it blocks: the batch's shared connection must not wait behind it.
func addToPlan(plan *route.Plan, o conn.CallOptions, info *command.Info, args []any) error {
	if o.Blocking {
		return blockingInBatch(args)
	}
	return plan.Add(info, o.KeyPrefix, o.Keys, args)
}

// blockingInBatch is the error for a blocking command in a batch.
func blockingInBatch(args []any) error {
	return fmt.Errorf("%w: %s would hold up every other caller of the connection; send it with Do", ErrBlockingInBatch, commandName(args))
}

// planLater adds to plan the n commands encoded in later, numbered from first on,
// asking COMMAND INFO about those the command table lacks.
func (c *Client) planLater(ctx context.Context, plan *route.Plan, later []byte, n, first int) error {
	cmds, err := route.DecodeCommands(later, n)
	if err != nil {
		return err
	}
	for i, args := range cmds {
		if err := c.planAsking(ctx, plan, args); err != nil {
			return fmt.Errorf("command %d: %w", first+i, err)
		}
	}
	return nil
}

// planAsking adds a command to plan, asking COMMAND INFO first if the command table
// lacks it and its keys are needed.
func (c *Client) planAsking(ctx context.Context, plan *route.Plan, args []any) error {
	var keys [8]int
	o, info, err := c.callOptionsCtx(ctx, args, keys[:0])
	if err != nil {
		return err
	}
	return addToPlan(plan, o, info, args)
}

// Len returns the number of commands added since the last Exec.
func (p *Pipeline) Len() int { return p.n }

// Discard empties the pipeline without sending anything, as go-redis's
// Pipeliner.Discard does: the commands added since the last Exec are dropped, and an
// observer sees no batch.
func (p *Pipeline) Discard() {
	p.plan = p.plan.Recycle()
	p.later, p.nLater, p.n, p.err = p.later[:0], 0, 0, nil
	p.first, p.mixed = "", false
}

// Exec sends every command added in one round trip, as DoMulti does, and empties the
// pipeline. The error is for the batch as a whole; single commands' error replies are
// in their Result.
func (p *Pipeline) Exec(ctx context.Context) ([]Result, error) {
	if obs := p.c.obs; obs != nil && p.n > 0 {
		b := observeBatch(ctx, obs, observe.Pipeline, p.n, p.batchName(), p.c.batchAddr())
		defer b.end()
		b.res, b.last, b.err = p.exec(b.ctx)
		return b.res, b.err
	}
	res, _, err := p.exec(ctx)
	return res, err
}

// exec is Exec without the observer; it also returns the connection the batch went
// on (nil for several, or none).
func (p *Pipeline) exec(ctx context.Context) ([]Result, *conn.Conn, error) {
	plan, later, nLater, n, err := p.plan, p.later, p.nLater, p.n, p.err
	p.plan, p.later, p.nLater, p.n, p.err = nil, p.later[:0], 0, 0, nil
	switch {
	case err != nil:
		p.plan = plan.Recycle()
		return nil, nil, err
	case n == 0:
		p.plan = plan.Recycle()
		return nil, nil, nil
	case p.c.closed.Load():
		p.plan = plan.Recycle()
		return nil, nil, ErrClosed
	}
	if plan == nil {
		plan = p.c.route.NewPlan()
	}
	if nLater > 0 {
		if err := p.c.planLater(ctx, plan, later, nLater, n-nLater); err != nil {
			p.plan = plan.Recycle()
			return nil, nil, err
		}
	}
	res, last, err := p.c.route.SendPlan(ctx, plan)
	p.plan = plan.Recycle()
	return res, last, err
}

// commandName returns a command's name for an error message. Unlike formatting args[0]
// with fmt, it does not make the caller's arguments escape.
func commandName(args []any) string {
	var buf [12]byte
	if name, ok := argkind.LowerName(args[0], &buf); ok {
		return strings.ToUpper(string(name))
	}
	return "the command"
}
