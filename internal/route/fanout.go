package route

import (
	"bytes"
	"context"
	"fmt"

	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// fansOut reports whether a keyless command with the entry info goes to more than
// one node of a Cluster, by the server's command tips: request_policy all_nodes or
// all_shards, or a special policy, which fanout refuses.
func fansOut(info *command.Info) bool {
	switch info.Request {
	case command.RequestAllNodes, command.RequestAllShards, command.RequestSpecial:
		return true
	}
	return info.Response == command.ResponseSpecial
}

// fanout sends a keyless command to the nodes its request policy names (every master
// for all_shards, every master and replica for all_nodes), one after another, and
// combines their replies by its response policy. A command whose tips say its replies
// combine in a way of their own (INFO, MEMORY STATS, RANDOMKEY) or that goes to nodes
// of its own choosing (SCAN) is refused with ErrPerNode before anything is sent.
// Except under one_succeeded, the first error ends it; once a node before has run the
// command, the error says the outcome is unknown, never that it was not sent.
func (r *Cluster) fanout(ctx context.Context, cmd *Cmd, c *Call) (resp.Value, error) {
	info := cmd.Info
	name := commandName(info)
	if info.Name == "scan" {
		return resp.Value{}, fmt.Errorf("%w: SCAN; Client.Scan walks every master", ErrPerNode)
	}
	if info.Request == command.RequestSpecial || info.Response == command.ResponseSpecial {
		return resp.Value{}, fmt.Errorf("%w: %s; send it to each node you mean, on that node's connection (Client.Dedicated for a key it serves, then Do on that connection) or with a Client of that node", ErrPerNode, name)
	}
	nodes, err := r.masterNodes(ctx)
	if err == nil && info.Request == command.RequestAllNodes {
		nodes = r.allNodes()
	}
	if err != nil {
		return resp.Value{}, err
	}
	var (
		acc    merger
		failed error // one_succeeded: the first failure
	)
	for i, n := range nodes {
		v, _, err := r.attempt(ctx, cmd, c, Any(), step{target: n})
		if err != nil {
			wrapped := fmt.Errorf("respire: %s on %s: %w", name, n.addr, err)
			switch {
			case info.Response == command.ResponseOneSucceeded:
				if failed == nil {
					failed = wrapped
				}
				continue
			case i > 0:
				return resp.Value{}, partlyRan(wrapped, err)
			}
			return resp.Value{}, wrapped
		}
		if err := acc.add(info.Response, v); err != nil {
			return resp.Value{}, fmt.Errorf("respire: %s on %s: cannot combine its reply: %w", name, n.addr, err)
		}
	}
	if acc.n == 0 && failed != nil {
		return resp.Value{}, failed
	}
	return acc.result(), nil
}

// commandName is the command's name as a user writes it, for errors: "CONFIG SET".
// It is a copy: the entry is reached through the caller's command, whose arguments
// must not escape (Do would then allocate them on every call).
func commandName(info *command.Info) string {
	name := []byte(info.Name)
	for i, c := range name {
		if c == '|' {
			name[i] = ' '
		}
	}
	return string(bytes.ToUpper(name))
}

// merger combines the replies of a fan-out by a response policy.
type merger struct {
	n      int        // replies added
	first  resp.Value // the first reply, which the result takes its kind from
	num    int64      // the integer replies' aggregate, when summed
	summed bool       // num holds the result
	joined bool       // elems hold the result's elements
	elems  []resp.Value
}

// add combines reply v by the policy p. Replies that are not what the policy combines
// (an array where integers are summed, say) are an error.
func (a *merger) add(p command.ResponsePolicy, v resp.Value) error {
	a.n++
	if a.n == 1 {
		a.first = v
	}
	switch p {
	case command.ResponseDefault:
		if !nested(v) {
			return nil // a reply that is not an aggregate: any one stands for all
		}
		if v.Kind() != a.first.Kind() {
			return fmt.Errorf("a %v reply after a %v one", v.Kind(), a.first.Kind())
		}
		elems, _ := v.Array()
		a.elems = append(a.elems, elems...)
		a.joined = true
	case command.ResponseAggLogicalAnd, command.ResponseAggLogicalOr,
		command.ResponseAggMin, command.ResponseAggMax, command.ResponseAggSum:
		if v.Kind() != resp.KindInteger {
			elems, err := v.Array()
			if err != nil {
				return err
			}
			return a.addElems(p, elems)
		}
		n, _ := v.Int()
		if a.n == 1 {
			a.num, a.summed = n, true
			return nil
		}
		if !a.summed {
			return fmt.Errorf("an integer reply after a %v one", a.first.Kind())
		}
		a.num = aggregate(p, a.num, n)
	}
	return nil
}

// addElems combines an array reply of integers element by element (SCRIPT EXISTS).
func (a *merger) addElems(p command.ResponsePolicy, elems []resp.Value) error {
	if a.n == 1 {
		a.elems, a.joined = append([]resp.Value(nil), elems...), true
		return nil
	}
	if !a.joined || len(elems) != len(a.elems) {
		return fmt.Errorf("%d elements after %d", len(elems), len(a.elems))
	}
	for i, e := range elems {
		x, err := a.elems[i].Int()
		if err != nil {
			return err
		}
		y, err := e.Int()
		if err != nil {
			return err
		}
		a.elems[i] = resp.Integer(aggregate(p, x, y))
	}
	return nil
}

// aggregate combines two integers by an aggregating policy.
func aggregate(p command.ResponsePolicy, x, y int64) int64 {
	switch p {
	case command.ResponseAggLogicalAnd:
		if x != 0 && y != 0 {
			return 1
		}
		return 0
	case command.ResponseAggLogicalOr:
		if x != 0 || y != 0 {
			return 1
		}
		return 0
	case command.ResponseAggMin:
		return min(x, y)
	case command.ResponseAggMax:
		return max(x, y)
	}
	return x + y
}

// nested reports whether v is an aggregate reply, which the default policy
// concatenates.
func nested(v resp.Value) bool {
	switch v.Kind() {
	case resp.KindArray, resp.KindSet, resp.KindMap:
		return true
	}
	return false
}

// result is the combined reply: an aggregated integer; an aggregate of the kind the
// first reply had, with the combined elements; or, for replies that are all alike (OK,
// a SHA), the first.
func (a *merger) result() resp.Value {
	switch {
	case a.summed:
		return resp.Integer(a.num)
	case !a.joined:
		return a.first
	}
	switch a.first.Kind() {
	case resp.KindSet:
		return resp.Set(a.elems...)
	case resp.KindMap:
		return resp.Map(a.elems...)
	}
	return resp.Array(a.elems...)
}
