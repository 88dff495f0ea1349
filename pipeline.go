package respire

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// Pipeline collects commands to send together with Exec. Each command is encoded as it
// is added, so the pipeline keeps none of its arguments: once the pipeline's buffer has
// grown, adding a command allocates nothing. A command that cannot be added (invalid
// argument, blocking or connection-state command) makes Exec fail without sending
// anything. A Pipeline belongs to one goroutine; it can be reused after Exec.
type Pipeline struct {
	c   *Client
	buf []byte // the commands, encoded (on a Cluster they are in batch instead)
	n   int
	// batch is a Cluster pipeline's plan (cluster_batch.go): taken from a pool by the
	// first Do, given back by Exec.
	batch *clusterBatch
	err   error // the first command that could not be added
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
	case p.c.cluster != nil:
		if p.batch == nil {
			p.batch = newClusterBatch()
		}
		err = p.c.addToBatch(p.batch, info, o.Keys, args)
	default:
		p.buf, err = resp.AppendCommandPrefixed(p.buf, o.KeyPrefix, o.Keys, args...)
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
	buf, n, err := p.buf, p.n, p.err
	p.buf, p.n, p.err = p.buf[:0], 0, nil
	batch := p.batch
	p.batch = nil
	if err != nil || n == 0 || p.c.closed.Load() {
		batch.release()
	}
	switch {
	case err != nil:
		return nil, err
	case n == 0:
		return nil, nil
	case p.c.closed.Load():
		return nil, ErrClosed
	case p.c.cluster != nil:
		return p.c.cluster.doBatch(ctx, batch)
	}
	for attempt := 0; ; attempt++ {
		cn, err := p.c.route.shared(ctx, anySlot)
		if err != nil {
			return nil, err
		}
		res, err := cn.DoEncoded(ctx, n, buf)
		if err != nil && attempt == 0 && !conn.WasWritten(err) && retryable(ctx, err, nil) {
			continue
		}
		if err != nil {
			p.c.observeFailure(ctx, err)
		}
		return res, err
	}
}

// decodeCommands reads back n encoded commands: a Cluster batch retries a redirected
// command from its arguments.
func decodeCommands(buf []byte, n int) ([][]any, error) {
	rd := resp.NewReader(bufio.NewReader(bytes.NewReader(buf)), resp.Limits{})
	cmds := make([][]any, n)
	for i := range cmds {
		v, err := rd.Read()
		if err != nil {
			return nil, err
		}
		elems, err := v.Array()
		if err != nil {
			return nil, err
		}
		cmd := make([]any, len(elems))
		for j, e := range elems {
			if cmd[j], err = e.Text(); err != nil {
				return nil, err
			}
		}
		cmds[i] = cmd
	}
	return cmds, nil
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
