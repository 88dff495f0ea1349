package route

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// one is the execution of a router that serves one server at a time (a standalone
// server, the master Sentinel names): nothing to split or redirect, a retry on a new
// connection when that is safe, and failures handed to the backend to learn from.
type one struct {
	b backend
	// replicaReads sends read-only commands to a replica when the backend has one.
	replicaReads bool
}

func (o *one) do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error) {
	if cmd.Options.Blocking {
		return o.doDedicated(ctx, cmd)
	}
	t := Any()
	t.Replica = o.replicaReads && readOnly(cmd.Args)
	for attempt := 0; ; attempt++ {
		cn, err := o.b.shared(ctx, t)
		if err != nil {
			return resp.Value{}, nil, err
		}
		v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
		if err != nil && attempt == 0 && Retryable(ctx, err, cmd.Args) {
			continue
		}
		if err != nil {
			o.b.observe(ctx, err)
		}
		return v, cn, err
	}
}

// doDedicated runs a blocking command on a dedicated connection. It returns that
// connection, back in the pool by then, as the one that carried the command (as the
// Cluster's attemptDedicated does): callers read its address and server, never send on it.
func (o *one) doDedicated(ctx context.Context, cmd *Cmd) (resp.Value, *conn.Conn, error) {
	cn, err := o.b.dedicated(ctx, Any())
	if err != nil {
		return resp.Value{}, nil, err
	}
	v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
	o.b.release(cn, Reusable(err))
	if err != nil {
		o.b.observe(ctx, err)
	}
	return v, cn, err
}

// doEncoded sends n encoded commands as one pipeline on the shared connection, and
// returns the connection it went on.
func (o *one) doEncoded(ctx context.Context, n int, buf []byte) ([]conn.Result, *conn.Conn, error) {
	return o.sendBatch(ctx, func(cn *conn.Conn) ([]conn.Result, error) {
		return cn.DoEncoded(ctx, n, buf)
	})
}

// oneServer is the Masters of a router of one server.
func oneServer() []Target { return []Target{Any()} }
