package respire

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// clusterBatch is the plan of one Cluster batch: its commands encoded back to back
// (the key prefix applied), each one's slot and where its bytes end, and the scratch
// space that splits it by node. Batches are pooled, so a batch of the usual size
// plans, splits and merges without allocating: what it costs per command is the
// encoding and the slot.
type clusterBatch struct {
	buf   []byte
	slots []int // anySlot for a command without keys
	ends  []int // command i is buf[ends[i-1]:ends[i]]

	nodes []*clusterNode // where each command goes, while it is sent
	parts []batchPart    // one for each node of the batch
	wg    sync.WaitGroup // the parts sent by goroutines of their own
}

// batchPart is what goes to one node: the positions of its commands in the batch,
// their bytes back to back, and what the node answered.
type batchPart struct {
	node *clusterNode
	idx  []int
	buf  []byte
	cn   *conn.Conn
	res  []Result
	err  error
}

// maxPooledBatch is the largest encoding a batch keeps when it goes back to the pool:
// one huge batch must not pin its buffers for good.
const maxPooledBatch = 1 << 20

var batchPool = sync.Pool{New: func() any { return new(clusterBatch) }}

func newClusterBatch() *clusterBatch { return batchPool.Get().(*clusterBatch) }

// release empties b and puts it back in the pool. It keeps no reply, connection or
// node: a pooled batch pins nothing but its own buffers.
func (b *clusterBatch) release() {
	if b == nil {
		return
	}
	if cap(b.buf) > maxPooledBatch {
		return
	}
	b.buf, b.slots, b.ends = b.buf[:0], b.slots[:0], b.ends[:0]
	clear(b.nodes)
	b.nodes = b.nodes[:0]
	for i := range b.parts {
		p := &b.parts[i]
		if cap(p.buf) > maxPooledBatch {
			*p = batchPart{}
			continue
		}
		clear(p.res)
		*p = batchPart{idx: p.idx[:0], buf: p.buf[:0]}
	}
	b.parts = b.parts[:0]
	batchPool.Put(b)
}

// add encodes one command, with prefix on the arguments at keys, for slot.
func (b *clusterBatch) add(slot int, prefix string, keys []int, args []any) error {
	buf, err := resp.AppendCommandPrefixed(b.buf, prefix, keys, args...)
	if err != nil {
		return err
	}
	b.buf = buf
	b.slots = append(b.slots, slot)
	b.ends = append(b.ends, len(buf))
	return nil
}

func (b *clusterBatch) len() int { return len(b.slots) }

// command returns the bytes of command i.
func (b *clusterBatch) command(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}

// part returns the part for node n, starting one when n has none yet. Commands of a
// batch mostly come in runs for one node, so the last part found is tried first.
func (b *clusterBatch) part(n *clusterNode, last int) int {
	if last < len(b.parts) && b.parts[last].node == n {
		return last
	}
	for i := range b.parts {
		if b.parts[i].node == n {
			return i
		}
	}
	if len(b.parts) < cap(b.parts) {
		b.parts = b.parts[:len(b.parts)+1]
	} else {
		b.parts = append(b.parts, batchPart{})
	}
	b.parts[len(b.parts)-1].node = n
	return len(b.parts) - 1
}

// doMultiCluster is DoMulti on a Cluster: every command checked (as batchKeys does)
// and planned by slot before anything is sent, then the batch sent as doBatch does.
func (c *Client) doMultiCluster(ctx context.Context, cmds [][]any) ([]Result, error) {
	b := newClusterBatch()
	for i, args := range cmds {
		var scratch [8]int
		o, info, err := c.callOptionsCtx(ctx, args, scratch[:0])
		switch {
		case err != nil:
		case o.Blocking:
			err = fmt.Errorf("%w: %s blocks the server; use Do", ErrConnState, commandName(args))
		default:
			err = c.addToBatch(b, info, o.Keys, args)
		}
		if err != nil {
			b.release()
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
	}
	return c.cluster.doBatch(ctx, b)
}

// addToBatch plans one command of a batch: its slot (with the client's prefix on the
// keys at prefixed, as it will be sent) and its encoding.
func (c *Client) addToBatch(b *clusterBatch, info *command.Info, prefixed []int, args []any) error {
	slot, err := clusterSlotInfo(info, args, c.prefix, prefixed)
	if err != nil {
		return err
	}
	return b.add(slot, c.prefix, prefixed, args)
}

// doBatch sends the batch b and releases it: each node's part as one pipeline (the
// parts concurrently), the results in b's order, and each command that was redirected
// or told to try again retried alone, in place. A batch for one node, the common case
// (one key, a hash tag), is sent as it was encoded and its results are the node's.
func (r *clusterRouter) doBatch(ctx context.Context, b *clusterBatch) ([]Result, error) {
	defer b.release()
	n := b.len()
	var first *clusterNode // the node of the first command with keys
	single := true
	for _, s := range b.slots {
		var nd *clusterNode
		if s != anySlot {
			var err error
			if nd, err = r.nodeFor(ctx, s, false); err != nil {
				return nil, err
			}
			if first == nil {
				first = nd
			}
			single = single && nd == first
		}
		b.nodes = append(b.nodes, nd)
	}
	if first == nil {
		var err error
		if first, err = r.anyMaster(ctx); err != nil {
			return nil, err
		}
	}
	if single {
		// Commands without keys go with the others: any master serves them.
		cn, res, err := r.sendPart(ctx, first, n, b.buf)
		if err != nil {
			return nil, err
		}
		for i := range res {
			r.retryMember(ctx, b, res, i, cn)
		}
		return res, nil
	}
	last := 0
	for i, nd := range b.nodes {
		if nd == nil {
			nd = first
		}
		last = b.part(nd, last)
		p := &b.parts[last]
		p.idx = append(p.idx, i)
		p.buf = append(p.buf, b.command(i)...)
	}
	for i := 1; i < len(b.parts); i++ {
		p := &b.parts[i]
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			p.cn, p.res, p.err = r.sendPart(ctx, p.node, len(p.idx), p.buf)
		}()
	}
	p0 := &b.parts[0]
	p0.cn, p0.res, p0.err = r.sendPart(ctx, p0.node, len(p0.idx), p0.buf)
	b.wg.Wait()
	out := make([]Result, n)
	var errs []error
	for k := range b.parts {
		p := &b.parts[k]
		if p.err != nil {
			errs = append(errs, fmt.Errorf("respire: the part of the batch for %s: %w", p.node.addr, p.err))
			continue
		}
		for j, i := range p.idx {
			out[i] = p.res[j]
			r.retryMember(ctx, b, out, i, p.cn)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// sendPart sends n encoded commands to node nd as one pipeline on its shared
// connection, again once on a new connection if they were not sent.
func (r *clusterRouter) sendPart(ctx context.Context, nd *clusterNode, n int, payload []byte) (*conn.Conn, []Result, error) {
	for attempt := 0; ; attempt++ {
		cn, err := r.conn(ctx, nd)
		if err != nil {
			return nil, nil, err
		}
		res, err := cn.DoEncoded(ctx, n, payload)
		if err == nil {
			return cn, res, nil
		}
		r.refresher.Trigger()
		if attempt > 0 || conn.WasWritten(err) || !retryable(ctx, err, nil) {
			return cn, nil, err
		}
	}
}

// retryMember retries alone, in place, command i of b (result res[i]) when it was
// redirected or told to try again, continuing from the answer of cn. The command is read back
// from its encoding, prefix applied already: redirections are rare, so the plan keeps
// no arguments for them.
func (r *clusterRouter) retryMember(ctx context.Context, b *clusterBatch, res []Result, i int, cn *conn.Conn) {
	if !needsRetry(res[i].Err) {
		return
	}
	cmds, err := decodeCommands(b.command(i), 1)
	if err != nil {
		res[i] = Result{Err: err}
		return
	}
	v, _, err := r.do(ctx, conn.CallOptions{}, cmds[0], b.slots[i], false, res[i].Err, cn)
	res[i] = Result{Value: v, Err: err}
}

// needsRetry reports whether a batch member's error is one the cluster routing
// handles: a redirection, TRYAGAIN or CLUSTERDOWN.
func needsRetry(err error) bool {
	if err == nil {
		return false
	}
	var se *resp.ServerError
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case "MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN":
		return true
	}
	return false
}
