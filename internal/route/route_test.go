package route

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/pool"
	"github.com/respire/respire/resp"
)

const (
	nodeA = "10.0.0.1:7000"
	nodeB = "10.0.0.2:7000"
)

// twoMasters answers the topology commands of a cluster whose slots are split
// between nodeA (0-8191) and nodeB (8192-16383), and hands every other command to h.
// Once moved is set, nodeB serves slot moved too: the topology tells what a MOVED
// said.
func twoMasters(moved *atomic.Int32, h func(addr string, args []string) string) func(addr string, args []string) string {
	return func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			if r[0] != '*' {
				return r
			}
			return twoMastersSlots(int(moved.Load()))
		}
		return h(addr, args)
	}
}

// twoMastersSlots is the CLUSTER SLOTS reply of twoMasters, with slot on nodeB when
// it is not -1.
func twoMastersSlots(slot int) string {
	type span struct {
		first, last int
		node        string
	}
	spans := []span{{0, 8191, nodeA}, {8192, 16383, nodeB}}
	if slot >= 0 && slot <= 8191 {
		spans = []span{{0, slot - 1, nodeA}, {slot, slot, nodeB}, {slot + 1, 8191, nodeA}, {8192, 16383, nodeB}}
	}
	var b strings.Builder
	n := 0
	for _, sp := range spans {
		if sp.first > sp.last {
			continue
		}
		host, port, _ := net.SplitHostPort(sp.node)
		fmt.Fprintf(&b, "*3\r\n:%d\r\n:%d\r\n*3\r\n$%d\r\n%s\r\n:%s\r\n$1\r\n%c\r\n", sp.first, sp.last, len(host), host, port, sp.node[7])
		n++
	}
	return fmt.Sprintf("*%d\r\n", n) + b.String()
}

// notMoved is a twoMasters topology that never changes.
// movedToB is a handler of two masters on which nodeA answers each command with a
// MOVED of slot to nodeB, and the topology then says so, while nodeB answers reply.
func movedToB(slot int, reply string) func(addr string, args []string) string {
	moved := notMoved()
	return twoMasters(moved, func(addr string, args []string) string {
		if addr == nodeA {
			moved.Store(int32(slot))
			return fmt.Sprintf("-MOVED %d %s\r\n", slot, nodeB)
		}
		return reply
	})
}

func notMoved() *atomic.Int32 {
	var m atomic.Int32
	m.Store(-1)
	return &m
}

// get is the Cmd of GET key.
func get(key string) *Cmd {
	args := []any{"GET", key}
	info, _ := command.LookupArgs(args)
	return &Cmd{Args: args, Info: info}
}

// inBubble runs f in a synctest bubble with a Cluster router on the fake nodes that
// handle serves, closing both before the bubble ends. Package conn keeps the channels
// of finished calls in a sync.Pool, and a channel made in one bubble must not be used
// in another: two collections before and after empty the pool.
func inBubble(t *testing.T, handle func(addr string, args []string) string, f func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes)) {
	inBubbleWith(t, handle, nil, f)
}

// inBubbleWith is inBubble with the router's options changed by adjust.
func inBubbleWith(t *testing.T, handle func(addr string, args []string) string, adjust func(*Options), f func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes)) {
	synctest.Test(t, func(t *testing.T) {
		nodes := newFakeNodes(t, handle)
		defer nodes.close()
		o := nodes.options()
		if adjust != nil {
			adjust(&o)
		}
		r, err := NewCluster(t.Context(), []string{nodeA}, o)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		// A deadline in the bubble's time: a loop that does not end fails the test
		// when its pauses reach it, instead of spinning for ever.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		f(t, ctx, r, nodes)
	})
}

// withoutTopology leaves out the topology reads a background refresh makes.
func withoutTopology(cmds []string) []string {
	return slices.DeleteFunc(cmds, func(c string) bool { return strings.HasPrefix(c, "CLUSTER ") })
}

// TRYAGAIN is retried MaxClusterRetries times after a doubling backoff, then returned
// wrapped in ErrTooManyRedirects, as WATCH's is: the waits add up to exactly the
// schedule, in the bubble's time.
func TestClusterTryAgainBackoff(t *testing.T) {
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			return r
		}
		return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
	}
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		start := time.Now()
		_, _, err := r.Do(ctx, get("k"), &Call{})
		elapsed := time.Since(start)
		var se *resp.ServerError
		if !errors.As(err, &se) || se.Code != "TRYAGAIN" || !errors.Is(err, ErrTooManyRedirects) {
			t.Fatalf("err = %v, want ErrTooManyRedirects wrapping the last TRYAGAIN", err)
		}
		if n := nodes.count(nodeA, "GET k"); n != MaxClusterRetries+1 {
			t.Errorf("GET sent %d times, want %d (one try and every retry)", n, MaxClusterRetries+1)
		}
		var want time.Duration
		for i := 1; i <= MaxClusterRetries; i++ {
			want += backoff(i)
		}
		if elapsed != want {
			t.Errorf("the retries took %v, want %v", elapsed, want)
		}
	})
}

// Nodes that send a command back and forth are followed MaxRedirects times, with a
// growing pause after the second hop, and then the caller gets ErrTooManyRedirects
// wrapping the last MOVED, never the MOVED alone.
func TestClusterRedirectLoopEnds(t *testing.T) {
	slot := keySlot("", "k")
	handle := twoMasters(notMoved(), func(addr string, args []string) string {
		other := nodeB
		if addr == nodeB {
			other = nodeA
		}
		return fmt.Sprintf("-MOVED %d %s\r\n", slot, other)
	})
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		start := time.Now()
		_, _, err := r.Do(ctx, get("k"), &Call{})
		elapsed := time.Since(start)
		if !errors.Is(err, ErrTooManyRedirects) {
			t.Fatalf("err = %v, want ErrTooManyRedirects", err)
		}
		if n := nodes.count(nodeA, "GET k") + nodes.count(nodeB, "GET k"); n != MaxRedirects+1 {
			t.Errorf("GET sent %d times, want %d", n, MaxRedirects+1)
		}
		var want time.Duration
		for hop := 3; hop <= MaxRedirects; hop++ {
			want += time.Duration(hop) * 2 * time.Millisecond
		}
		if elapsed != want {
			t.Errorf("the redirections took %v, want %v", elapsed, want)
		}
	})
}

// MOVED updates the slot table and the command runs on the new owner; ASK sends it
// once, after ASKING in the same batch, to the importing node, and changes nothing.
func TestClusterRedirections(t *testing.T) {
	slot := keySlot("", "k") // on nodeA in the topology
	for _, tt := range []struct {
		name      string
		redirect  string
		owner     string // the slot's owner in the table afterwards
		onB       []string
		viaCalled bool
	}{
		{"moved", "MOVED", nodeB, []string{"GET k"}, false},
		{"ask", "ASK", nodeA, []string{"ASKING", "GET k"}, false},
		{"moved on the lock lane", "MOVED", nodeB, []string{"GET k"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			moved := notMoved()
			handle := twoMasters(moved, func(addr string, args []string) string {
				switch {
				case addr == nodeA:
					if tt.redirect == "MOVED" {
						moved.Store(int32(slot))
					}
					return fmt.Sprintf("-%s %d %s\r\n", tt.redirect, slot, nodeB)
				case args[0] == "ASKING":
					return "+OK\r\n"
				}
				return "$1\r\nv\r\n"
			})
			inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
				call := &Call{}
				if tt.viaCalled {
					call.lane = LockLane
				}
				v, cn, err := r.Do(ctx, get("k"), call)
				if s, _ := v.Text(); err != nil || s != "v" {
					t.Fatalf("Do = %v, %v; want v", v, err)
				}
				if cn == nil || cn.Addr() != nodeB {
					t.Errorf("the reply came on %v, want a connection to %s", cn, nodeB)
				}
				if got := r.Inspect().SlotOwner(slot); got != tt.owner {
					t.Errorf("the table gives slot %d to %s, want %s", slot, got, tt.owner)
				}
				if got := withoutTopology(nodes.seen(nodeB)); fmt.Sprint(got) != fmt.Sprint(tt.onB) {
					t.Errorf("%s received %q, want %q", nodeB, got, tt.onB)
				}
				if tt.viaCalled {
					// Both attempts went on lock lanes: the owner in the table's, then
					// the node MOVED named.
					a, b := laneOf(r, nodeA), laneOf(r, nodeB)
					if a == nil || b == nil || b.cur.Load() != cn {
						t.Errorf("the attempts went on lanes %v and %v, want the lock lanes of %s and %s, the reply on %s's", a, b, nodeA, nodeB, nodeB)
					}
				}
			})
		})
	}
}

// WATCH redirected by MOVED starts again on the new owner; redirected for ever, it
// ends with ErrTooManyRedirects and no connection, never a raw MOVED.
func TestClusterWatchRedirect(t *testing.T) {
	slot := keySlot("", "k")
	watch := []any{"WATCH", "k"}
	t.Run("followed", func(t *testing.T) {
		handle := movedToB(slot, "+OK\r\n")
		inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
			cn, err := r.Watch(ctx, Slot(slot), watch)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release(cn, true)
			if cn.Addr() != nodeB {
				t.Errorf("WATCH ran on %s, want %s", cn.Addr(), nodeB)
			}
		})
	})
	t.Run("endless", func(t *testing.T) {
		handle := twoMasters(notMoved(), func(addr string, args []string) string {
			other := nodeB
			if addr == nodeB {
				other = nodeA
			}
			return fmt.Sprintf("-MOVED %d %s\r\n", slot, other)
		})
		inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
			cn, err := r.Watch(ctx, Slot(slot), watch)
			if !errors.Is(err, ErrTooManyRedirects) || cn != nil {
				t.Fatalf("Watch = %v, %v; want no connection and ErrTooManyRedirects", cn, err)
			}
			if n := nodes.count(nodeA, "WATCH k") + nodes.count(nodeB, "WATCH k"); n != MaxRedirects+1 {
				t.Errorf("WATCH sent %d times, want %d", n, MaxRedirects+1)
			}
		})
	})
}

// A closed router's errors are ErrClosed, whatever layer refused: never the pool's.
func TestClosedRouterErrors(t *testing.T) {
	nodes := newFakeNodes(t, func(string, []string) string { return "+OK\r\n" })
	defer nodes.close()
	r, err := NewStandalone("10.0.0.9:6379", nodes.options())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Shared(t.Context(), Any()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"shared", func() error { _, err := r.Shared(t.Context(), Any()); return err }},
		{"dedicated", func() error { _, err := r.Dedicated(t.Context(), Any()); return err }},
		{"do", func() error { _, _, err := r.Do(t.Context(), get("k"), &Call{}); return err }},
		{"watch", func() error { _, err := r.Watch(t.Context(), Any(), []any{"WATCH", "k"}); return err }},
	} {
		err := tt.call()
		if !errors.Is(err, ErrClosed) || errors.Is(err, pool.ErrClosed) {
			t.Errorf("%s after Close: %v; want ErrClosed, not pool.ErrClosed", tt.name, err)
		}
	}
}

// The topology is read again every RefreshInterval, and once for a burst of MOVED
// replies however many callers got one (RefreshGap apart at most twice): the
// refresher's timing as the router drives it, on the bubble's clock.
func TestClusterRefreshTiming(t *testing.T) {
	slot := keySlot("", "k")
	moved := notMoved()
	handle := twoMasters(moved, func(addr string, args []string) string {
		if addr == nodeA && moved.Load() == int32(slot) {
			return fmt.Sprintf("-MOVED %d %s\r\n", slot, nodeB)
		}
		return "$1\r\nv\r\n"
	})
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		reads := r.Inspect().TopologyReads
		if n := reads(); n != 1 {
			t.Fatalf("%d topology reads at start, want 1", n)
		}
		time.Sleep(RefreshInterval - time.Millisecond)
		synctest.Wait()
		if n := reads(); n != 1 {
			t.Fatalf("%d topology reads just before the interval, want 1", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := reads(); n != 2 {
			t.Fatalf("%d topology reads after one interval, want 2", n)
		}

		// The slot moves; the table does not know yet. 20 callers get MOVED at once.
		moved.Store(int32(slot))
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				v, _, err := r.Do(ctx, get("k"), &Call{})
				if s, _ := v.Text(); err != nil || s != "v" {
					t.Errorf("GET = %v, %v", v, err)
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * RefreshGap)
		synctest.Wait()
		if n := reads() - 2; n < 1 || n > 2 {
			t.Errorf("%d topology reads after a burst of MOVED, want 1 (2 at most, RefreshGap apart)", n)
		}
		if got := r.Inspect().SlotOwner(slot); got != nodeB {
			t.Errorf("slot %d is on %s in the table, want %s", slot, got, nodeB)
		}
	})
}

// laneOf is the lock lane of the node at addr, nil when it has none.
func laneOf(r *Router, addr string) *SharedConn {
	cl := r.d.(*Cluster)
	cl.mu.Lock()
	n := cl.nodes[addr]
	cl.mu.Unlock()
	if n == nil {
		return nil
	}
	n.shared.mu.Lock()
	defer n.shared.mu.Unlock()
	return n.shared.lock
}
