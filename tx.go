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

// Tx is an optimistic transaction on a dedicated connection, handed to the function
// given to Client.Watch. Read with Do (the reads see the watched keys), then queue the
// writes with Exec, once.
type Tx struct {
	client *Client
	cn     *conn.Conn // nil until bound: by WATCH, else by the first command
	slot   int        // on a Cluster: the slot every key of the transaction must hash to
	execed bool
}

// Watch runs fn on a dedicated connection after WATCH keys, so that fn's Exec runs
// only if none of the keys changed in between; if one did, Exec returns ErrTxFailed
// and nothing ran. Keys get the client's key prefix. With no keys, Exec is a plain
// MULTI/EXEC. The connection is unwatched and returned to the pool when fn returns.
//
// On a Cluster every key of the transaction, watched or used, must hash to one slot
// (ErrCrossSlot otherwise, before anything is sent), and the transaction runs on the
// node that serves it. Without watched keys the first command of the transaction picks
// the node.
//
//	err := c.Watch(ctx, func(tx *respire.Tx) error {
//		n, err := tx.Do(ctx, "GET", "counter")
//		...
//		_, err = tx.Exec(ctx, []any{"SET", "counter", next})
//		return err
//	}, "counter")
func (c *Client) Watch(ctx context.Context, fn func(tx *Tx) error, keys ...string) (err error) {
	if fn == nil {
		return fmt.Errorf("%w: nil transaction function", ErrInvalidArg)
	}
	if c.closed.Load() {
		return ErrClosed
	}
	watch := make([]any, 0, len(keys)+1)
	watch = append(watch, "WATCH")
	for _, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: empty key to watch", ErrInvalidArg)
		}
		watch = append(watch, c.prefixKey(k))
	}
	tx := &Tx{client: c, slot: route.AnySlot}
	if len(keys) > 0 {
		// The keys carry the prefix already.
		info, _ := c.entry(watch)
		if tx.slot, err = c.route.SlotOf(info, watch, "", nil); err != nil {
			return err
		}
	}
	clean := true
	defer func() {
		cn := tx.cn
		if cn == nil {
			return
		}
		if clean && !tx.execed && len(keys) > 0 {
			// A watch left behind would make the next user's EXEC fail.
			_, uerr := cn.Do(context.WithoutCancel(ctx), "UNWATCH")
			clean = uerr == nil
		}
		c.route.Release(cn, clean && cn.Err() == nil)
	}()
	if len(keys) > 0 {
		// The router follows a redirection of WATCH to the slot's owner.
		if tx.cn, err = c.route.Watch(ctx, route.Slot(tx.slot), watch); err != nil {
			clean = reusable(err)
			return err
		}
	}
	err = fn(tx)
	if tx.cn != nil && tx.cn.Err() != nil {
		clean = false
	}
	return err
}

// bind checks that every command of b belongs to the transaction's slot and, on a
// transaction without watched keys, checks out the connection for that slot (any
// server's where slots do not route).
func (tx *Tx) bind(ctx context.Context, b *route.Batch) error {
	for i, args := range b.Cmds {
		var keys []int
		if b.Keys != nil {
			keys = b.Keys[i]
		}
		if err := tx.bindSlot(b.Infos[i], args, keys); err != nil {
			return err
		}
	}
	return tx.checkout(ctx)
}

// bindSlot checks that a command (args, of entry info, with the key prefix going to
// prefixed) belongs to the transaction's slot, which it sets when none is yet.
func (tx *Tx) bindSlot(info *command.Info, args []any, prefixed []int) error {
	c := tx.client
	slot, err := c.route.SlotOf(info, args, c.prefix, prefixed)
	if err != nil {
		return err
	}
	switch {
	case slot == route.AnySlot || slot == tx.slot:
	case tx.slot == route.AnySlot && tx.cn == nil:
		tx.slot = slot
	default:
		var buf [12]byte
		name, _ := argkind.LowerName(args[0], &buf)
		return fmt.Errorf("%w: the transaction is on slot %d and a key of %s hashes to slot %d", ErrCrossSlot, tx.slot, strings.ToUpper(string(name)), slot)
	}
	return nil
}

// checkout checks out the transaction's connection, for its slot, unless it has one.
func (tx *Tx) checkout(ctx context.Context) error {
	if tx.cn != nil {
		return nil
	}
	cn, err := tx.client.route.Dedicated(ctx, route.Slot(tx.slot))
	if err != nil {
		return err
	}
	tx.cn = cn
	return nil
}

// Do runs a command at once on the transaction's connection, typically a read of a
// watched key. It gets the client's key prefix; connection-state commands are refused,
// and a blocking command blocks only the transaction's own connection. On a Cluster, a
// slot that moved since the transaction was bound fails it with ErrTxSlotMoved rather
// than a raw MOVED.
func (tx *Tx) Do(ctx context.Context, args ...any) (resp.Value, error) {
	if obs := tx.client.obs; obs != nil {
		return tx.doObserved(ctx, obs, args)
	}
	return tx.do(ctx, args)
}

// doObserved is Do between the observer's CommandStart and CommandEnd, with the
// command looked up once before the start event, as Client.doObserved does.
func (tx *Tx) doObserved(ctx context.Context, obs observe.Observer, args []any) (resp.Value, error) {
	c := tx.client
	conf, err := c.confine(args)
	var keys [8]int
	var o conn.CallOptions
	var info *command.Info
	addr := ""
	if err == nil {
		if o, info, err = c.callOptionsInfo(conf, keys[:0]); err == nil {
			addr = tx.addr(o, info, conf)
		}
	}
	p := c.observeCommand(ctx, obs, info, args, addr)
	defer p.end()
	var v resp.Value
	switch {
	case err == nil:
		v, p.err = tx.run(p.ctx, o, info, conf)
	case errors.As(err, new(*unresolvedError)):
		v, p.err = tx.do(p.ctx, args) // asks COMMAND INFO, then looks it up again
	default:
		p.err = err
	}
	p.last = tx.cn
	return v, p.err
}

// addr is the server the transaction's next command (args, of options o and entry
// info) is about to go to, for its start event: the bound connection's, else where the
// router would send it.
func (tx *Tx) addr(o conn.CallOptions, info *command.Info, args []any) string {
	if tx.cn != nil {
		return tx.cn.Addr()
	}
	return tx.client.expectedAddr(o, info, args)
}

// batchAddr is addr for Exec.
func (tx *Tx) batchAddr() string {
	if tx.cn != nil {
		return tx.cn.Addr()
	}
	return tx.client.batchAddr()
}

// do is Do without the observer.
func (tx *Tx) do(ctx context.Context, args []any) (resp.Value, error) {
	args, err := tx.client.confine(args)
	if err != nil {
		return resp.Value{}, err
	}
	var keys [8]int
	o, info, err := tx.client.callOptionsCtx(ctx, args, keys[:0])
	if err != nil {
		return resp.Value{}, err
	}
	return tx.run(ctx, o, info, args)
}

// run sends a checked command (args, of options o and entry info) on the
// transaction's connection, binding it first.
func (tx *Tx) run(ctx context.Context, o conn.CallOptions, info *command.Info, args []any) (resp.Value, error) {
	if err := tx.bindSlot(info, args, o.Keys); err != nil {
		return resp.Value{}, err
	}
	if err := tx.checkout(ctx); err != nil {
		return resp.Value{}, err
	}
	v, err := tx.cn.DoWith(ctx, o, args...)
	return v, slotMoved(err, err)
}

// slotMoved is err as a transaction returns it: matching ErrTxSlotMoved when cause,
// the reply of the transaction's node, is a redirection (the connection is bound to a
// node that no longer serves the slot, so the transaction cannot follow it).
func slotMoved(err, cause error) error {
	se, ok := resp.AsServerError(cause)
	if !ok {
		return err
	}
	if _, ok := se.Redirect(); !ok {
		return err
	}
	return fmt.Errorf("%w: %w", ErrTxSlotMoved, err)
}

// Exec sends MULTI, the commands and EXEC in one round trip and returns the commands'
// results. It returns ErrTxFailed when a watched key changed (nothing ran), and the
// server's EXECABORT error when a command was rejected while queueing (nothing ran
// either), matching ErrTxSlotMoved too when it was rejected because the slot moved.
// Blocking commands are allowed: inside MULTI the server runs them without blocking
// (BLPOP on an empty list replies null at once). Exec can be called once per
// transaction.
func (tx *Tx) Exec(ctx context.Context, cmds ...[]any) ([]Result, error) {
	if obs := tx.client.obs; obs != nil {
		p := observeBatch(ctx, obs, observe.Transaction, len(cmds), tx.client.batchName(cmds), tx.batchAddr())
		defer p.end()
		p.res, p.err = tx.exec(p.ctx, cmds)
		p.last = tx.cn
		return p.res, p.err
	}
	return tx.exec(ctx, cmds)
}

// exec is Exec without the observer.
func (tx *Tx) exec(ctx context.Context, cmds [][]any) ([]Result, error) {
	if tx.execed {
		return nil, fmt.Errorf("%w: Exec called twice in one transaction", ErrInvalidArg)
	}
	tx.execed = true
	cmds, err := tx.client.confineAll(cmds)
	if err != nil {
		return nil, err
	}
	s := newBatchScratch()
	defer s.release()
	b, err := tx.client.batchOf(ctx, cmds, s, true)
	if err != nil {
		return nil, err
	}
	if err := tx.bind(ctx, &b); err != nil {
		return nil, err
	}
	keys := b.Keys
	batch := make([][]any, 0, len(cmds)+2)
	batch = append(batch, []any{"MULTI"})
	batch = append(batch, cmds...)
	batch = append(batch, []any{"EXEC"})
	if keys != nil {
		keys = append(append([][]int{nil}, keys...), nil)
	}
	res, err := tx.cn.DoMultiWith(ctx, tx.client.prefix, keys, batch...)
	if err != nil {
		return nil, err
	}
	exec := res[len(res)-1]
	if exec.Err != nil {
		// EXECABORT: a queued command was rejected; report the first reason too.
		for _, r := range res[1 : len(res)-1] {
			if r.Err != nil {
				return nil, slotMoved(errors.Join(exec.Err, r.Err), r.Err)
			}
		}
		return nil, exec.Err
	}
	if exec.Value.IsNull() {
		return nil, ErrTxFailed
	}
	replies, err := exec.Value.Array()
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(replies))
	for i, v := range replies {
		out[i] = conn.ResultOf(v)
	}
	return out, nil
}
