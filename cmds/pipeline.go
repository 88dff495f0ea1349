package cmds

import (
	"context"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
)

// Pipeline collects typed commands to send together: In adds one and returns its
// Reply, Exec sends them all, and each Reply then holds its command's typed result.
// Made by NewPipeline it wraps a *respire.Pipeline (one round trip, no transaction);
// made by NewTxPipeline it queues the commands for a transaction's Exec (MULTI/EXEC).
//
// A Pipeline belongs to one goroutine. It can be reused after Exec; the Replies of
// the commands before it then report ErrNoResult.
type Pipeline struct {
	p       *respire.Pipeline
	tx      *respire.Tx
	queued  [][]any // a transaction's commands, kept until Exec
	results []respire.Result
	err     error  // Exec's error, for every reply of the batch
	run     uint64 // how many times Exec ran
}

// NewPipeline returns an empty pipeline on c.
func NewPipeline(c *respire.Client) *Pipeline { return &Pipeline{p: c.Pipeline()} }

// NewTxPipeline returns an empty pipeline whose Exec runs the commands as tx's
// transaction (Tx.Exec): all of them or, when a watched key changed, none.
func NewTxPipeline(tx *respire.Tx) *Pipeline { return &Pipeline{tx: tx} }

// Do adds a command given by its arguments, as Client.Do takes them: a command the
// package has no typed form of (a module's).
func (p *Pipeline) Do(args ...any) Reply[resp.Value] {
	var v argv
	for _, a := range args {
		v.add(a)
	}
	return queue(p, v.args(), v.bad, "command", decodeValue)
}

// Len returns the number of commands added since the last Exec.
func (p *Pipeline) Len() int {
	if p.tx != nil {
		return len(p.queued)
	}
	return p.p.Len()
}

// Exec sends the commands and waits for their replies. Its error is the batch's as a
// whole (nothing could be sent, the transaction was aborted); a command's own error
// reply is its Reply's error.
func (p *Pipeline) Exec(ctx context.Context) error {
	if p.tx != nil {
		p.results, p.err = p.tx.Exec(ctx, p.queued...)
		p.queued = nil
	} else {
		p.results, p.err = p.p.Exec(ctx)
	}
	p.run++
	return p.err
}

// queue adds the command laid out in args, with the problem bad, to p, to be decoded
// by decode after Exec.
func queue[T any](p *Pipeline, args []any, bad problem, name string, decode func(resp.Value, error) (T, error)) Reply[T] {
	r := Reply[T]{p: p, run: p.run, decode: decode}
	if p.tx != nil {
		r.i = len(p.queued)
		args, detachBad := detach(args)
		if bad.kind == problemNone {
			bad = detachBad
		}
		if bad.kind != problemNone {
			r.err = bad.err(name)
			args = nil
		}
		p.queued = append(p.queued, args)
		return r
	}
	r.i = p.p.Len()
	if bad.kind != problemNone {
		// The command still takes its place so that later replies keep theirs; an
		// empty command fails the batch, as an unusable argument does on
		// Client.Pipeline.
		r.err = bad.err(name)
		p.p.Do()
		return r
	}
	p.p.Do(args...)
	return r
}

// Reply is the typed result of a pipelined command, read after its pipeline's Exec.
type Reply[T any] struct {
	p      *Pipeline
	i      int
	run    uint64
	err    error // the command could not be built
	decode func(resp.Value, error) (T, error)
}

// Result returns the command's typed reply, or its error: the command's error reply,
// the batch's error, Nil for a null reply, ErrNoResult before Exec.
func (r Reply[T]) Result() (T, error) {
	var zero T
	switch {
	case r.p == nil:
		return zero, ErrNoResult
	case r.err != nil:
		return zero, r.err
	case r.p.run != r.run+1:
		return zero, ErrNoResult
	case r.p.err != nil:
		return zero, r.p.err
	case r.i >= len(r.p.results):
		return zero, ErrNoResult
	}
	res := r.p.results[r.i]
	return r.decode(res.Value, res.Err)
}

// Val returns the typed reply, or T's zero value when Result would return an error.
func (r Reply[T]) Val() T {
	v, _ := r.Result()
	return v
}

// Err returns the error Result would return.
func (r Reply[T]) Err() error {
	_, err := r.Result()
	return err
}
