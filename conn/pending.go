package conn

import (
	"context"
	"fmt"
	"time"

	"github.com/respire/respire/resp"
)

// Pending is a batch that StartEncoded has handed to its connection: written, or about
// to be, with its replies still to come. Wait collects them. It is a few words, so a
// caller with batches for several connections keeps them in a slice it reuses, without
// allocating.
type Pending struct {
	c   *Conn
	cl  *call
	gen uint32          // cl's generation when started: a copy waited after p sees it moved on
	ctx context.Context // StartEncoded's: the watch the call was registered with is for it
	by  time.Time       // StartWith's CallOptions.Deadline: when the wait ends; zero for none
	one bool            // started by StartWith: Reply collects it, not Wait
}

// StartEncoded is the first half of DoEncoded: it hands the n encoded commands of
// payload to the connection and returns without waiting for their replies. When ctx
// cannot be cancelled and nothing is in flight (nor about to be: see afterBurst in
// pipeline.go), they are written on the calling goroutine before StartEncoded returns
// (with a cancellable ctx, as much as the socket takes at once), so a caller with
// batches for several servers writes them all before it waits for any, and needs no
// goroutine per server. payload may be reused as soon as StartEncoded returns. The results are collected into results when its capacity is n
// or more, so a caller can reuse one slice for every batch; else into a new slice. The
// connection writes into results until Wait returns, and not after, even when Wait
// returns early because ctx ended.
//
// The connection's reader goroutine reads the replies, never the caller: a caller
// waiting for its batch on one server must not hold up everybody else's replies on
// the others it has started batches on. On success the caller must call Wait exactly
// once, even when it no longer wants the replies (once ctx has ended Wait returns at
// once), so that the results slice is released. Batches started on one connection must
// be waited for in the order they were started; batches on different connections may
// be waited for in any order.
func (c *Conn) StartEncoded(ctx context.Context, n int, payload []byte, results []Result) (Pending, error) {
	return c.startEncoded(ctx, n, payload, results, false)
}

// startEncoded is StartEncoded; readSelf lets the caller take the read role of a quiet
// connection, for DoEncoded, whose caller waits for nothing else.
func (c *Conn) startEncoded(ctx context.Context, n int, payload []byte, results []Result, readSelf bool) (Pending, error) {
	if n <= 0 || len(payload) == 0 {
		return Pending{}, fmt.Errorf("%w: %d commands in %d bytes", ErrInvalidOptions, n, len(payload))
	}
	cl := c.getCall(n)
	if !readSelf {
		cl.reader = readByOthers
	}
	if cap(results) >= n { // n > 0: results[:0] is not nil, so the call collects a batch
		cl.results = results[:0]
	} else {
		cl.results = make([]Result, 0, n)
	}
	if err := c.lockForEnqueue(ctx); err != nil {
		c.putCall(cl)
		return Pending{}, err
	}
	start := len(c.w.buf)
	c.w.buf = append(c.w.buf, payload...)
	c.submitLocked(ctx, cl, start)
	return Pending{c: c, cl: cl, gen: cl.gen.Load(), ctx: ctx}, nil
}

// Wait is the second half of DoEncoded: it waits for the replies of the batch p stands
// for and returns their results in order, with the errors DoEncoded returns. If the
// context given to StartEncoded ends first, Wait returns at once with a *CallError that
// says whether the batch was sent; a batch already written still runs, and its replies
// are read and dropped. A second Wait, also through a copy of p, Wait on the zero
// Pending or on a command StartWith started (Reply collects it), returns
// ErrInvalidOptions: after the first, the call behind p belongs to the
// connection again.
func (p *Pending) Wait() ([]Result, error) {
	if p.cl == nil || p.cl.gen.Load() != p.gen || p.one {
		return nil, fmt.Errorf("%w: no batch pending", ErrInvalidOptions)
	}
	c, cl, ctx := p.c, p.cl, p.ctx
	*p = Pending{}
	return c.waitResults(ctx, cl)
}

// StartWith is the first half of DoWith, as StartEncoded is of DoEncoded: it hands one
// command to the connection, written on the calling goroutine when the connection is
// quiet (as StartEncoded writes), and returns without waiting for the reply, which the
// connection's reader goroutine reads. A caller with one command for each of several
// servers (a Redlock's acquisition or release) starts them all, then collects each
// reply with Reply, and needs no goroutine per server. o.Deadline bounds the wait in
// Reply as it bounds DoWith's. On success the caller must call Reply exactly once, as
// Wait for StartEncoded; commands started on one connection are collected in the
// order they were started.
func (c *Conn) StartWith(ctx context.Context, o CallOptions, args ...any) (Pending, error) {
	cl, err := c.startOne(ctx, o, args, readByOthers)
	if err != nil {
		return Pending{}, err
	}
	return Pending{c: c, cl: cl, gen: cl.gen.Load(), ctx: ctx, by: o.Deadline, one: true}, nil
}

// Reply is the second half of DoWith: it waits for the reply of the command StartWith
// started and returns it with the errors DoWith returns, a *CallError when the
// context given to StartWith ends or its deadline passes first (the command, if
// written, still runs; its reply is read and dropped). Like Wait, it may be called
// once; a second call, Reply on a batch of StartEncoded, or on the zero Pending,
// returns ErrInvalidOptions.
func (p *Pending) Reply() (resp.Value, error) {
	if p.cl == nil || p.cl.gen.Load() != p.gen || !p.one {
		return resp.Value{}, fmt.Errorf("%w: no command pending", ErrInvalidOptions)
	}
	c, cl, ctx, by := p.c, p.cl, p.ctx, p.by
	*p = Pending{}
	return c.replyOf(ctx, cl, by)
}
