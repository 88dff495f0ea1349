package route

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// one is the deployment of a router that serves one server at a time (a standalone
// server, the master Sentinel names), over the backend that finds that server:
// nothing to split or redirect, a retry on a new connection when that is safe, and
// failures handed to the backend to learn from.
type one struct {
	backend
	// replicaReads sends read-only commands to a replica when the backend has one.
	replicaReads bool
	// given: the backend is the one server the router was given (NewStandalone), not
	// a master that Sentinel elects.
	given bool
}

func (o *one) do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error) {
	if cmd.Options.Blocking {
		return o.doDedicated(ctx, cmd)
	}
	t := Any()
	t.Replica = o.replicaReads && readOnly(cmd.Info)
	for attempt := 0; ; attempt++ {
		cn, err := o.shared(ctx, t)
		if err != nil {
			return resp.Value{}, nil, err
		}
		v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
		if err != nil && attempt == 0 && Retryable(ctx, err, cmd.Info) {
			continue
		}
		if err != nil {
			o.observe(ctx, err)
		}
		return v, cn, err
	}
}

// doDedicated runs a blocking command on a dedicated connection. It returns that
// connection, back in the pool by then, as the one that carried the command (as the
// Cluster's attemptDedicated does): callers read its address and server, never send on it.
func (o *one) doDedicated(ctx context.Context, cmd *Cmd) (resp.Value, *conn.Conn, error) {
	cn, err := o.dedicated(ctx, Any())
	if err != nil {
		return resp.Value{}, nil, err
	}
	v, err := cn.DoWith(ctx, cmd.Options, cmd.Args...)
	o.release(cn, Reusable(err))
	if err != nil {
		o.observe(ctx, err)
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

// addrOf is where do sends cmd: a blocking command and a batch (no arguments) go to
// the master.
func (o *one) addrOf(cmd *Cmd) string {
	t := Any()
	t.Replica = o.replicaReads && !cmd.Options.Blocking && len(cmd.Args) > 0 && readOnly(cmd.Info)
	return o.addr(t)
}

// watch runs WATCH (args) on a dedicated connection: one server does not redirect.
func (o *one) watch(ctx context.Context, t Target, args []any) (*conn.Conn, error) {
	cn, err := o.dedicated(ctx, t)
	if err != nil {
		return nil, err
	}
	_, err = cn.Do(ctx, args...)
	return cn, err
}

// One server routes nothing by slot: every key is AnySlot's, no keys cross slots, and
// there is no topology to read.
func (o *one) slotOf(*command.Info, []any, string, []int) (int, error) { return AnySlot, nil }

func (o *one) keySlot(string, string) int { return AnySlot }

func (o *one) routesByKey() bool { return false }

func (o *one) standalone() bool { return o.given }

func (o *one) resolve(context.Context) error { return nil }

func (o *one) newPlan() *Plan { return newPlan(false) }

func (o *one) sendPlan(ctx context.Context, p *Plan) ([]conn.Result, *conn.Conn, error) {
	return o.doEncoded(ctx, p.Len(), p.buf)
}

func (o *one) inspect() Inspection { return Inspection{} }

// oneServer is the Masters of a router of one server.
func oneServer() []Target { return []Target{Any()} }
