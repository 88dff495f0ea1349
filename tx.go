package respire

import (
	"context"
	"errors"
	"fmt"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// Tx is an optimistic transaction on a dedicated connection, handed to the function
// given to Client.Watch. Read with Do (the reads see the watched keys), then queue the
// writes with Exec, once.
type Tx struct {
	client *Client
	cn     *conn.Conn
	execed bool
}

// Watch runs fn on a dedicated connection after WATCH keys, so that fn's Exec runs
// only if none of the keys changed in between; if one did, Exec returns ErrTxFailed
// and nothing ran. Keys get the client's key prefix. With no keys, Exec is a plain
// MULTI/EXEC. The connection is unwatched and returned to the pool when fn returns.
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
	cn, err := c.route.dedicated(ctx, c.slotOf(watch))
	if err != nil {
		return err
	}
	tx := &Tx{client: c, cn: cn}
	clean := true
	defer func() {
		if clean && !tx.execed && len(keys) > 0 {
			// A watch left behind would make the next user's EXEC fail.
			_, uerr := cn.Do(context.WithoutCancel(ctx), "UNWATCH")
			clean = uerr == nil
		}
		c.route.release(cn, clean && cn.Err() == nil)
	}()
	if len(keys) > 0 {
		if _, err := cn.Do(ctx, watch...); err != nil {
			clean = reusable(err)
			return err
		}
	}
	err = fn(tx)
	if tx.cn.Err() != nil {
		clean = false
	}
	return err
}

// Do runs a command at once on the transaction's connection, typically a read of a
// watched key. It gets the client's key prefix; blocking and connection-state commands
// are refused.
func (tx *Tx) Do(ctx context.Context, args ...any) (resp.Value, error) {
	var keys [8]int
	o, err := tx.client.callOptions(args, keys[:0])
	if err != nil {
		return resp.Value{}, err
	}
	return tx.cn.DoWith(ctx, o, args...)
}

// Exec sends MULTI, the commands and EXEC in one round trip and returns the commands'
// results. It returns ErrTxFailed when a watched key changed (nothing ran), and the
// server's EXECABORT error when a command was rejected while queueing (nothing ran
// either). Exec can be called once per transaction.
func (tx *Tx) Exec(ctx context.Context, cmds ...[]any) ([]Result, error) {
	if tx.execed {
		return nil, fmt.Errorf("%w: Exec called twice in one transaction", ErrInvalidArg)
	}
	tx.execed = true
	keys, err := tx.client.batchKeys(cmds)
	if err != nil {
		return nil, err
	}
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
				return nil, errors.Join(exec.Err, r.Err)
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
