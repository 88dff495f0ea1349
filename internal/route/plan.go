package route

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// Plan is the plan of one pipeline (Client.DoMulti, a Pipeline): its commands encoded
// back to back (the key prefix applied), on a Cluster each one's slot and where its
// bytes end, and the scratch space that splits it by node. Plans are pooled, so a batch of the usual size
// plans, splits and merges without allocating: what it costs per command is the
// encoding and the slot.
type Plan struct {
	buf   []byte
	slots []int           // AnySlot for a command without keys
	ends  []int           // command i is buf[ends[i-1]:ends[i]]
	infos []*command.Info // each command's entry, for a command retried alone

	sharded bool // planned for a Cluster: every command's slot is worked out
	// keys is scratch space for the key positions of the command being added.
	keys [8]int

	nodes []*clusterNode // where each command goes, while it is sent
	parts []batchPart    // one for each node of the batch
}

// batchPart is what goes to one node: the positions of its commands in the batch,
// their bytes back to back, and what the node answered (collected into res's array,
// which the plan keeps for its next batch: merge copies the results out).
type batchPart struct {
	node *clusterNode
	idx  []int
	buf  []byte
	cn   *conn.Conn
	pend conn.Pending // between startPart and waitPart
	res  []conn.Result
	err  error
	// resent: the part was sent again on a new connection, after its first was
	// found broken before it sent anything; it is not sent a third time.
	resent bool
}

// maxPooledBatch is the largest encoding a batch keeps when it goes back to the pool:
// one huge batch must not pin its buffers for good.
const maxPooledBatch = 1 << 20

var planPool = sync.Pool{New: func() any { return new(Plan) }}

// newPlan returns an empty plan from the pool; sharded works out each command's slot.
func newPlan(sharded bool) *Plan {
	p := planPool.Get().(*Plan)
	p.sharded = sharded
	return p
}

// Release empties b and puts it back in the pool; a nil plan is left alone. It keeps
// no reply, connection or node: a pooled plan pins nothing but its own buffers.
func (b *Plan) Release() {
	if b == nil || cap(b.buf) > maxPooledBatch {
		return
	}
	b.reset(maxPooledBatch)
	planPool.Put(b)
}

// Recycle gives b back to the pool as Release does and returns nil, unless b is too
// big for the pool: then it empties b, keeping every buffer, and returns it for its
// owner to fill again. A Pipeline that sends a big batch again and again so encodes
// it in place instead of growing a new buffer each time, and a small one still
// shares the pool. A nil plan is left alone.
func (b *Plan) Recycle() *Plan {
	if b == nil {
		return nil
	}
	if cap(b.buf) <= maxPooledBatch {
		b.Release()
		return nil
	}
	b.reset(math.MaxInt)
	return b
}

// reset empties b, dropping a part's buffer larger than maxKept.
func (b *Plan) reset(maxKept int) {
	b.buf, b.slots, b.ends = b.buf[:0], b.slots[:0], b.ends[:0]
	clear(b.infos)
	b.infos = b.infos[:0]
	clear(b.nodes)
	b.nodes = b.nodes[:0]
	for i := range b.parts {
		p := &b.parts[i]
		if cap(p.buf) > maxKept {
			*p = batchPart{}
			continue
		}
		clear(p.res)
		*p = batchPart{idx: p.idx[:0], buf: p.buf[:0], res: p.res[:0]}
	}
	b.parts = b.parts[:0]
}

// Add plans one command: its slot, on a Cluster (with prefix on the keys at
// prefixed, as it will be sent; ErrCrossSlot when they hash to different slots), and
// its encoding. info is the command's entry (nil: no keys).
func (b *Plan) Add(info *command.Info, prefix string, prefixed []int, args []any) error {
	slot := AnySlot
	if b.sharded {
		var err error
		if slot, err = SlotOf(info, args, prefix, prefixed); err != nil {
			return err
		}
	}
	buf, err := resp.AppendCommandPrefixed(b.buf, prefix, prefixed, args...)
	if err != nil {
		return err
	}
	b.buf = buf
	b.slots = append(b.slots, slot)
	b.ends = append(b.ends, len(buf))
	b.infos = append(b.infos, info)
	return nil
}

// Len returns the number of commands added.
func (b *Plan) Len() int { return len(b.slots) }

// command returns the bytes of command i.
func (b *Plan) command(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.buf[start:b.ends[i]]
}

// part returns the part for node n, starting one when n has none yet. Commands of a
// batch mostly come in runs for one node, so the last part found is tried first.
func (b *Plan) part(n *clusterNode, last int) int {
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

// doPlan sends the batch b: each node's part as one pipeline (the
// parts concurrently), the results in b's order, and each command that was redirected
// or told to try again retried alone, in place. A batch for one node, the common case
// (one key, a hash tag), is sent as it was encoded and its results are the node's;
// its connection is returned (nil for a batch split by node, or when none was had).
func (r *Cluster) doPlan(ctx context.Context, b *Plan) ([]conn.Result, *conn.Conn, error) {
	first, single, err := r.locate(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	if single {
		// Commands without keys go with the others: any master serves them.
		one := batchPart{node: first, buf: b.buf}
		r.doPart(ctx, &one, b.Len())
		if one.err != nil {
			return nil, one.cn, one.err
		}
		for i := range one.res {
			r.retryMember(ctx, b, one.res, i, one.cn)
		}
		return one.res, one.cn, nil
	}
	b.split(first)
	r.sendParts(ctx, b)
	res, err := r.merge(ctx, b)
	return res, nil, err
}

// locate finds the node of each command of b (nil for a command without keys) and
// returns the node of the first command with keys (any master when none has keys),
// and whether every command with keys goes there.
func (r *Cluster) locate(ctx context.Context, b *Plan) (first *clusterNode, single bool, err error) {
	single = true
	for _, s := range b.slots {
		var nd *clusterNode
		if s != AnySlot {
			if nd, err = r.nodeFor(ctx, Slot(s)); err != nil {
				return nil, false, err
			}
			if first == nil {
				first = nd
			}
			single = single && nd == first
		}
		b.nodes = append(b.nodes, nd)
	}
	if first == nil {
		if first, err = r.anyMaster(ctx); err != nil {
			return nil, false, err
		}
	}
	return first, single, nil
}

// split copies each command of b into the part of its node; commands without keys go
// to first's.
func (b *Plan) split(first *clusterNode) {
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
}

// sendParts sends every part of b to its node, all on this goroutine: first each part
// but the last is written, then the last is sent and its replies read (by this
// goroutine itself when its connection is quiet: doPart), then the others' replies are
// collected in turn. The nodes work on their parts at the same time without a
// goroutine per part, and while this goroutine reads the last part the connections'
// readers collect the others, which are mostly complete by the time it waits for
// them: a batch over three nodes wakes two readers and parks its caller seldom,
// where waiting for every part through its reader woke three and parked once or more.
func (r *Cluster) sendParts(ctx context.Context, b *Plan) {
	last := len(b.parts) - 1
	for i := range last {
		p := &b.parts[i]
		r.startPart(ctx, p, len(p.idx))
	}
	r.doPart(ctx, &b.parts[last], len(b.parts[last].idx))
	for i := range last {
		p := &b.parts[i]
		r.waitPart(ctx, p, len(p.idx))
	}
}

// merge puts the parts' results back in b's order, retrying alone each command that
// was redirected; a part that failed fails the batch, as not sent only when no part
// was written.
func (r *Cluster) merge(ctx context.Context, b *Plan) ([]conn.Result, error) {
	out := make([]conn.Result, b.Len())
	var errs, causes []error
	written := false
	for k := range b.parts {
		p := &b.parts[k]
		if p.err != nil {
			written = written || conn.WasWritten(p.err)
			errs = append(errs, fmt.Errorf("respire: the part of the batch for %s: %w", p.node.addr, p.err))
			causes = append(causes, p.err)
			continue
		}
		written = true
		for j, i := range p.idx {
			out[i] = p.res[j]
			r.retryMember(ctx, b, out, i, p.cn)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if written {
			return nil, partlyRan(err, causes...)
		}
		return nil, err
	}
	return out, nil
}

// partStep is how far sendPart takes a part.
type partStep uint8

const (
	// started: written, or queued to be, its replies collected later (waitPart) by
	// the connection's reader (conn.StartEncoded).
	started partStep = iota
	// collected: written and its replies collected, by the caller itself when the
	// connection is quiet (conn.DoEncodedInto).
	collected
)

// startPart starts p, n encoded commands, on the shared connection of p's node (for
// waitPart to collect); p.err says why it could not be.
func (r *Cluster) startPart(ctx context.Context, p *batchPart, n int) {
	r.sendPart(ctx, p, n, started)
}

// doPart sends p, n encoded commands, on the shared connection of p's node and
// collects its replies; p.err says why it failed.
func (r *Cluster) doPart(ctx context.Context, p *batchPart, n int) {
	r.sendPart(ctx, p, n, collected)
}

// sendPart takes p, n encoded commands, as far as step says on the shared connection
// of p's node; a part that could not be sent (its connection broke before) is sent
// again once on a new connection.
func (r *Cluster) sendPart(ctx context.Context, p *batchPart, n int, step partStep) {
	for {
		cn, err := r.conn(ctx, p.node)
		if err != nil {
			p.err = err
			return
		}
		p.cn = cn
		if step == collected {
			p.res, p.err = cn.DoEncodedInto(ctx, n, p.buf, p.res[:0])
		} else {
			p.pend, p.err = cn.StartEncoded(ctx, n, p.buf, p.res[:0])
		}
		if !r.resend(ctx, p) {
			return
		}
	}
}

// waitPart collects the replies of p, started by startPart, into p.res; a part that
// was not sent after all (its connection broke while it was queued) is sent once more.
func (r *Cluster) waitPart(ctx context.Context, p *batchPart, n int) {
	for p.err == nil {
		p.res, p.err = p.pend.Wait()
		if !r.resend(ctx, p) {
			return
		}
		r.startPart(ctx, p, n)
	}
}

// resend reports whether p, which failed with p.err (or did not, when nil), is to be
// sent again on a new connection: once, and only if it was not sent and may be.
func (r *Cluster) resend(ctx context.Context, p *batchPart) bool {
	if p.err == nil {
		return false
	}
	r.refresher.Trigger()
	if p.resent || conn.WasWritten(p.err) || !Retryable(ctx, p.err, nil) {
		return false
	}
	p.resent = true
	return true
}

// retryMember retries alone, in place, command i of b (result res[i]) when it was
// redirected or told to try again, continuing from the answer of cn. The command is read back
// from its encoding, prefix applied already: redirections are rare, so the plan keeps
// no arguments for them.
func (r *Cluster) retryMember(ctx context.Context, b *Plan, res []conn.Result, i int, cn *conn.Conn) {
	if !NeedsRetry(res[i].Err) {
		return
	}
	cmds, err := DecodeCommands(b.command(i), 1)
	if err != nil {
		res[i] = conn.Result{Err: err}
		return
	}
	v, _, err := r.redirected(ctx, &Cmd{Args: cmds[0], Info: b.infos[i]}, &Call{}, Slot(b.slots[i]), cn, res[i].Err)
	res[i] = conn.Result{Value: v, Err: err}
}
