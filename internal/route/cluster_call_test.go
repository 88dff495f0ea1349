package route

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/command"
)

// oneShard answers the topology of a cluster with one shard: master nodeA, replica
// nodeB (Redis 6: no CLUSTER SHARDS); ok is false for other commands.
func oneShard(args []string) (string, bool) {
	if len(args) == 2 && args[0] == "CLUSTER" {
		if args[1] == "SHARDS" {
			return "-ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.\r\n", true
		}
		return "*1\r\n*4\r\n:0\r\n:16383\r\n*3\r\n$8\r\n10.0.0.1\r\n:7000\r\n$1\r\na\r\n*3\r\n$8\r\n10.0.0.2\r\n:7000\r\n$1\r\nb\r\n", true
	}
	return "", false
}

// With replica reads on, a read that the replica answers TRYAGAIN is retried on a
// replica, not on the master.
func TestClusterReplicaReadRetryStaysOnReplica(t *testing.T) {
	var tries atomic.Int32
	handle := func(addr string, args []string) string {
		if r, ok := oneShard(args); ok {
			return r
		}
		if args[0] == "READONLY" {
			return "+OK\r\n"
		}
		if addr == nodeB && tries.Add(1) == 1 {
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
		}
		return "$1\r\nv\r\n"
	}
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(t, handle)
		defer nodes.close()
		o := nodes.options()
		o.ReplicaReads = true
		r, err := NewCluster(t.Context(), []string{nodeA}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		v, cn, err := r.Do(t.Context(), get("k"), &Call{})
		if s, _ := v.Text(); err != nil || s != "v" {
			t.Fatalf("GET = %v, %v", v, err)
		}
		if cn.Addr() != nodeB {
			t.Errorf("the retry went to %s, want the replica %s", cn.Addr(), nodeB)
		}
		if got := nodes.count(nodeA, "GET k"); got != 0 {
			t.Errorf("the master saw %d GETs, want 0", got)
		}
		if got := nodes.count(nodeB, "GET k"); got != 2 {
			t.Errorf("the replica saw %d GETs, want 2", got)
		}
	})
}

// A master that left the cluster after Masters named it is not dialled again for its
// SCAN: the call fails as not sent, and the router does not know the node again.
func TestClusterScanOfRemovedNodeIsNotSent(t *testing.T) {
	var onlyA atomic.Bool
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			if r[0] != '*' || onlyA.Load() {
				return r
			}
			return twoMastersSlots(-1)
		}
		return "*2\r\n$1\r\n0\r\n*0\r\n"
	}
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		ms, err := r.Masters(ctx)
		if err != nil || len(ms) != 2 || ms[1].Addr != nodeB {
			t.Fatalf("Masters = %v, %v; want %s and %s", ms, err, nodeA, nodeB)
		}
		onlyA.Store(true)
		if err := r.Resolve(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Inspect().Node(nodeB); ok {
			t.Fatalf("%s still known after it left", nodeB)
		}
		_, _, err = r.Do(ctx, &Cmd{Args: []any{"SCAN", "0"}}, &Call{Addr: nodeB})
		if !errors.Is(err, conn.ErrNotSent) || !errors.Is(err, ErrClosed) {
			t.Errorf("SCAN on a node that left: %v; want ErrNotSent and ErrClosed", err)
		}
		if _, ok := r.Inspect().Node(nodeB); ok {
			t.Errorf("%s known again after its SCAN", nodeB)
		}
		if got := withoutTopology(nodes.seen(nodeB)); len(got) > 0 {
			t.Errorf("%s, which left the cluster, saw %q", nodeB, got)
		}
	})
}

// A command for a node that cannot be dialled dials it once, as its attempt: the
// failure says not sent, but a second dial at once would fail the same way.
func TestClusterUnreachableNodeIsDialledOnce(t *testing.T) {
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			return r
		}
		return "+OK\r\n"
	}
	blpop := &Cmd{Args: []any{"BLPOP", "k", 1}, Options: conn.CallOptions{Blocking: true}}
	steps := []struct {
		name string
		cmd  *Cmd
	}{
		{"shared", get("k")},
		{"dedicated", blpop},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				nodes := newFakeNodes(t, handle)
				defer nodes.close()
				var refuse atomic.Bool
				var dials atomic.Int32
				o := nodes.options()
				o.Conn.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
					if refuse.Load() {
						dials.Add(1)
						return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
					}
					return nodes.dial(ctx, network, addr)
				}
				r, err := NewCluster(t.Context(), []string{nodeA}, o)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				ctx := t.Context()
				if _, _, err := r.Do(ctx, get("k"), &Call{}); err != nil {
					t.Fatal(err)
				}
				refuse.Store(true)
				nodes.close()
				// A connection that breaks while idle is found broken by the next
				// command, here a warm-up, whose retry makes the first failed dial.
				// Then a refresh, which fails, so that the one the next failure asks
				// for waits out the gap in the bubble's time, dialling nothing meanwhile.
				r.Do(ctx, get("k"), &Call{})
				if err := r.Resolve(ctx); err == nil {
					t.Fatal("the topology was read from no server")
				}
				dials.Store(0)
				_, _, err = r.Do(ctx, st.cmd, &Call{})
				if !errors.Is(err, conn.ErrNotSent) {
					t.Errorf("%s on an unreachable node: %v; want ErrNotSent", st.name, err)
				}
				if got := dials.Load(); got != 1 {
					t.Errorf("%s on an unreachable node dialled it %d times, want 1", st.name, got)
				}
			})
		})
	}
}

// A batch split over nodeA and nodeB, or a FLUSHALL fanned out to both, fails when
// nodeB cannot be dialled; nodeA's part ran, so the error says the outcome is unknown
// and does not say not sent, which would let a caller send it all again.
func TestClusterPartlyRunIsOutcomeUnknown(t *testing.T) {
	keyOn := func(lo, hi int) string {
		for i := 0; ; i++ {
			k := fmt.Sprintf("k%d", i)
			if s := keySlot("", k); s >= lo && s <= hi {
				return k
			}
		}
	}
	kA, kB := keyOn(0, 8191), keyOn(8192, 16383)
	handle := twoMasters(notMoved(), func(addr string, args []string) string { return "+OK\r\n" })
	flushall := func() *Cmd {
		args := []any{"FLUSHALL"}
		info, _ := command.LookupArgs(args)
		return &Cmd{Args: args, Info: info}
	}
	steps := []struct {
		name string
		run  func(ctx context.Context, r *Router) error
	}{
		{"batch", func(ctx context.Context, r *Router) error {
			p := r.NewPlan()
			defer p.Release()
			for _, c := range []*Cmd{get(kA), get(kB)} {
				if err := p.Add(c.Info, "", nil, c.Args); err != nil {
					return err
				}
			}
			_, _, err := r.DoPlan(ctx, p)
			return err
		}},
		{"fanout", func(ctx context.Context, r *Router) error {
			_, _, err := r.Do(ctx, flushall(), &Call{Fanout: true})
			return err
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			refuseB := func(o *Options) {
				dial := o.Conn.Dialer
				o.Conn.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
					if addr == nodeB {
						return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
					}
					return dial(ctx, network, addr)
				}
			}
			inBubbleWith(t, handle, refuseB, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
				err := st.run(ctx, r)
				if !errors.Is(err, conn.ErrOutcomeUnknown) || errors.Is(err, conn.ErrNotSent) || !conn.WasWritten(err) {
					t.Errorf("%s with %s ran and %s refused: %v; want ErrOutcomeUnknown (written), not ErrNotSent", st.name, nodeA, nodeB, err)
				}
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("%s: %v; want the refused dial matchable", st.name, err)
				}
				if len(withoutTopology(nodes.seen(nodeA))) == 0 {
					t.Errorf("%s: %s saw nothing", st.name, nodeA)
				}
			})
		})
	}
}
