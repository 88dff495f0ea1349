package route

import (
	"context"
	"errors"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// The calls of Router that carry the caller's arguments reach its implementation
// through a type switch instead of the deployment interface. Through an interface
// method the compiler cannot see the callee, so it takes every argument for one that
// may be kept and moves it to the heap: four allocations more for each Do (the
// command, its Call, its key positions, its arguments), measured with the client's
// allocation budgets. In a switch on the implementation each case is a direct call,
// and the arguments stay on the caller's stack. Every case makes the same call: the
// implementation was chosen by the constructor, and the switch chooses no behaviour.

// errDeployment is the panic of a Router whose implementation the dispatch does not
// know: a deployment added without its case here.
var errDeployment = errors.New("route: a deployment without its case in dispatch.go")

// Do sends one command and returns its reply and the connection that carried the
// last attempt (nil when none did), for callers that learn per connection. A server
// that redirects or asks to try again is followed; a command that was not sent, or is
// read-only, is sent again once on a new connection.
func (r *Router) Do(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, *conn.Conn, error) {
	switch d := r.d.(type) {
	case *one:
		return d.do(ctx, cmd, c)
	case *Cluster:
		return d.do(ctx, cmd, c)
	}
	panic(errDeployment)
}

// AddrOf returns the address of the server cmd would be sent to now, as far as the
// router knows without I/O or waiting: the one server, or the current master (a
// replica for a read that replica reads send there), or a Cluster slot's master. It
// returns "" when it cannot tell: a Cluster command of no slot (it goes to any master,
// or to every one), a replica read on a Cluster (the replica is picked when it is
// sent), a slot no node serves as far as the router knows. An observer's CommandStart
// and BatchStart carry it (samplers decide by it); the server that answers can differ
// after a redirection or a failover, and the end event says which one did. A batch's
// is AddrOf(&Cmd{}): "" on a Cluster, where it is split by node when it is sent.
func (r *Router) AddrOf(cmd *Cmd) string {
	switch d := r.d.(type) {
	case *one:
		return d.addrOf(cmd)
	case *Cluster:
		return d.addrOf(cmd)
	}
	panic(errDeployment)
}

// DoMulti sends the commands of b as one pipeline: split by node on a Cluster (a Plan
// of their encodings), else encoded straight into the shared connection's write
// buffer, so that a big batch is copied once. The results come in b's order; the error
// is for the batch as a whole, each command's own error reply is in its Result. A
// command that was redirected or told to try again is retried alone. The connection it
// returns is the one the batch went on, for callers that name its server: nil when it
// went to several servers or to none.
func (r *Router) DoMulti(ctx context.Context, b *Batch) ([]conn.Result, *conn.Conn, error) {
	switch d := r.d.(type) {
	case *one:
		return d.doMulti(ctx, b)
	case *Cluster:
		return d.doMulti(ctx, b)
	}
	panic(errDeployment)
}

// SlotOf is the slot of a command's keys (AnySlot where slots do not route), or an
// error matching ErrCrossSlot when they hash to different slots of a Cluster. info is
// the command's entry (nil: no keys), prefix the key prefix and prefixed the positions
// it applies to. It reads args without retaining them.
func (r *Router) SlotOf(info *command.Info, args []any, prefix string, prefixed []int) (int, error) {
	switch d := r.d.(type) {
	case *one:
		return d.slotOf(info, args, prefix, prefixed)
	case *Cluster:
		return d.slotOf(info, args, prefix, prefixed)
	}
	panic(errDeployment)
}

// KeySlot is the slot key, with prefix before it, is routed by: AnySlot where slots do
// not route.
func (r *Router) KeySlot(prefix, key string) int {
	switch d := r.d.(type) {
	case *one:
		return d.keySlot(prefix, key)
	case *Cluster:
		return d.keySlot(prefix, key)
	}
	panic(errDeployment)
}
