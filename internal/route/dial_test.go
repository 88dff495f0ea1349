package route

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

// unreachable dials the fake nodes until refuse is set, then a loopback port nothing
// listens on any more, as a server that went away leaves it.
type unreachable struct {
	nodes  *fakeNodes
	closed string // the address of a closed listener
	refuse atomic.Bool
}

func newUnreachable(t *testing.T, nodes *fakeNodes) *unreachable {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &unreachable{nodes: nodes, closed: ln.Addr().String()}
	ln.Close()
	return u
}

func (u *unreachable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if u.refuse.Load() {
		var d net.Dialer
		return d.DialContext(ctx, network, u.closed)
	}
	return u.nodes.dial(ctx, network, addr)
}

// A command whose connection cannot be dialled again was never sent, and its error
// says so, on every router (a Sentinel replica too) and every path: the shared connection (one command, a
// write, a batch), a dedicated connection and a blocking command.
func TestDialFailureIsNotSent(t *testing.T) {
	fakeCluster := func(t *testing.T) (*fakeNodes, *unreachable, Options) {
		nodes := newFakeNodes(t, func(addr string, args []string) string {
			if r, ok := clusterTopology(nodeA, args); ok {
				return r
			}
			return "+OK\r\n"
		})
		u := newUnreachable(t, nodes)
		o := nodes.options()
		o.Conn.Dialer = u.dial
		return nodes, u, o
	}
	deployments := []struct {
		name string
		open func(t *testing.T) (*Router, *fakeNodes, *unreachable, error)
	}{
		{"standalone", func(t *testing.T) (*Router, *fakeNodes, *unreachable, error) {
			nodes, u, o := fakeCluster(t)
			r, err := NewStandalone(nodeA, o)
			return r, nodes, u, err
		}},
		{"cluster", func(t *testing.T) (*Router, *fakeNodes, *unreachable, error) {
			nodes, u, o := fakeCluster(t)
			r, err := NewCluster(t.Context(), []string{nodeA}, o)
			return r, nodes, u, err
		}},
		{"sentinel", func(t *testing.T) (*Router, *fakeNodes, *unreachable, error) {
			r, sr, nodes := newSentinelForTest(t)
			u := newUnreachable(t, nodes)
			sr.o.Conn.Dialer = u.dial
			sr.switchTo(masterA)
			sr.setReplicas([]string{replicaR}) // reads try the replica first
			return r, nodes, u, nil
		}},
	}
	cmd := func(args ...any) *Cmd {
		info, _ := command.LookupArgs(args)
		return &Cmd{Args: args, Info: info}
	}
	steps := []struct {
		name string
		run  func(ctx context.Context, r *Router) error
	}{
		{"read", func(ctx context.Context, r *Router) error { _, _, err := r.Do(ctx, get("k"), &Call{}); return err }},
		{"write", func(ctx context.Context, r *Router) error {
			_, _, err := r.Do(ctx, cmd("SET", "k", "v"), &Call{})
			return err
		}},
		{"batch", func(ctx context.Context, r *Router) error {
			p := r.NewPlan()
			defer p.Release()
			for _, c := range []*Cmd{cmd("SET", "k", "v"), get("k")} {
				if err := p.Add(c.Info, "", nil, c.Args); err != nil {
					return err
				}
			}
			_, _, err := r.DoPlan(ctx, p)
			return err
		}},
		{"dedicated", func(ctx context.Context, r *Router) error { _, err := r.Dedicated(ctx, Any()); return err }},
		{"blocking", func(ctx context.Context, r *Router) error {
			c := cmd("BLPOP", "k", 1)
			c.Options.Blocking = true
			_, _, err := r.Do(ctx, c, &Call{})
			return err
		}},
	}
	for _, d := range deployments {
		t.Run(d.name, func(t *testing.T) {
			r, nodes, u, err := d.open(t)
			defer nodes.close()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := t.Context()
			if _, _, err := r.Do(ctx, get("k"), &Call{}); err != nil {
				t.Fatal(err)
			}
			// The server goes away: its connections break and no dial reaches it.
			u.refuse.Store(true)
			nodes.close()
			for _, s := range steps {
				if err := s.run(ctx, r); !errors.Is(err, conn.ErrNotSent) {
					t.Errorf("%s with the server unreachable: %v; want an error matching conn.ErrNotSent", s.name, err)
				}
			}
		})
	}
}
