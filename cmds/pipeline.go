package cmds

import (
	"context"
	"fmt"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
)

// Pipeline collects typed commands to send together: In adds one and returns its
// Reply, Exec sends them all, and each Reply then holds its command's typed result.
// Made by NewPipeline it wraps a *respire.Pipeline (one round trip, no transaction);
// made by NewTxPipeline it queues the commands for a transaction's Exec (MULTI/EXEC).
//
// A command that cannot be sent as built (an expiration EXPIRE cannot take, a choice
// GEOSEARCH requires not made) is not queued, and Exec then sends nothing: it returns
// that command's error, matching ErrInvalidArg and naming it, and so does every Reply
// of the batch. A batch is sent whole or not at all, as a transaction queued with a
// command the server refuses is (EXECABORT), rather than run without one of its
// commands, which a later one may depend on.
//
// A Pipeline belongs to one goroutine. It can be reused after Exec; the Replies of
// the commands before it then report ErrNoResult.
type Pipeline struct {
	// p is the client's pipeline, held by value so that a Pipeline is one
	// allocation, as a *respire.Pipeline is.
	p       respire.Pipeline
	tx      *respire.Tx
	queued  [][]any // a transaction's commands, kept until Exec
	results []respire.Result
	err     error // Exec's error, for every reply of the batch
	// refused is the error of the batch's first command that could not be built,
	// and nRefused how many could not: Exec sends nothing when there is one.
	refused  error
	nRefused int
	run      uint64 // how many times Exec ran
}

// NewPipeline returns an empty pipeline on c.
func NewPipeline(c *respire.Client) *Pipeline { return &Pipeline{p: *c.Pipeline()} }

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
	return Reply[resp.Value]{p.queue(v.args(), v.bad, "command"), decodeValue}
}

// Len returns the number of commands added since the last Exec.
func (p *Pipeline) Len() int {
	if p.tx != nil {
		return len(p.queued) + p.nRefused
	}
	return p.p.Len() + p.nRefused
}

// Exec sends the commands and waits for their replies. Its error is the batch's as a
// whole (a command could not be built, nothing could be sent, the transaction was
// aborted); a command's own error reply is its Reply's error.
func (p *Pipeline) Exec(ctx context.Context) error {
	refused := p.refused
	p.refused, p.nRefused = nil, 0
	switch {
	case refused != nil && p.tx != nil:
		p.results, p.err = nil, refused
		p.queued = nil
	case refused != nil:
		p.p.Discard()
		p.results, p.err = nil, refused
	case p.tx != nil:
		p.results, p.err = p.tx.Exec(ctx, p.queued...)
		p.queued = nil
	default:
		p.results, p.err = p.p.Exec(ctx)
	}
	p.run++
	return p.err
}

// queue adds the command laid out in args, with the problem bad, to p, and returns
// the handle of its result. It is not generic, and the generated In methods build
// their Reply around it rather than call a generic function: escape analysis takes
// a call of a generic function instantiated in another package (every user's) for
// one that keeps its arguments, which would move each command's arguments, and the
// interface values made of the caller's strings, to the heap.
func (p *Pipeline) queue(args []any, bad problem, name string) handle {
	h := handle{p: p, run: p.run}
	if bad.kind == problemNone && p.tx != nil {
		var copied []any
		if copied, bad = detach(args); bad.kind == problemNone {
			h.i = len(p.queued)
			p.queued = append(p.queued, copied)
			return h
		}
	}
	if bad.kind != problemNone {
		if p.refused == nil {
			p.refused = fmt.Errorf("command %d: %w", p.Len(), bad.err(name))
		}
		p.nRefused++
		h.i = -1
		return h
	}
	h.i = p.p.Len()
	p.p.Do(args...)
	return h
}

// handle is where a pipelined command's result is: the result i of p's batch
// number run, i being -1 for a command that could not be built.
type handle struct {
	p   *Pipeline
	i   int
	run uint64
}

// result returns the command's reply and error once its batch has run, and false
// when it has no result to decode.
func (h handle) result() (*respire.Result, bool) {
	if p := h.p; p != nil && p.run == h.run+1 && p.err == nil && uint(h.i) < uint(len(p.results)) {
		return &p.results[h.i], true
	}
	return nil, false
}

// Reply is the typed result of a pipelined command, read after its pipeline's Exec.
type Reply[T any] struct {
	h      handle
	decode func(resp.Value, error) (T, error)
}

// Result returns the command's typed reply, or its error: the command's error reply,
// the batch's error, Nil for a null reply, ErrNoResult before Exec.
func (r Reply[T]) Result() (T, error) {
	if res, ok := r.h.result(); ok {
		return r.decode(res.Value, res.Err)
	}
	var zero T
	return zero, noResult(r.h.p, r.h.run)
}

// noResult is the error of a Reply, queued in p's batch number run, that has no
// result to decode: the batch's error, or ErrNoResult.
func noResult(p *Pipeline, run uint64) error {
	if p != nil && p.run == run+1 && p.err != nil {
		return p.err
	}
	return ErrNoResult
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
