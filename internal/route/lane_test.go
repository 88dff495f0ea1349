package route

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A lock lane is a connection of its own beside the shared one, the same each time;
// DoOn follows a MOVED from it to the lock lane of the node the redirection names and
// returns that connection, and a closed router's lanes fail with ErrClosed.
func TestLockLaneFollowsRedirections(t *testing.T) {
	slot := keySlot("", "k") // on nodeA in the topology
	handle := movedToB(slot, "$1\r\nv\r\n")
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		shared, err := r.LaneConn(ctx, Slot(slot), SharedLane)
		if err != nil {
			t.Fatal(err)
		}
		lane, err := r.LaneConn(ctx, Slot(slot), LockLane)
		if err != nil {
			t.Fatal(err)
		}
		if lane == shared || lane.Addr() != nodeA {
			t.Fatalf("lock lane %p to %s, shared %p: want another connection to %s", lane, lane.Addr(), shared, nodeA)
		}
		if again, err := r.LaneConn(ctx, Slot(slot), LockLane); err != nil || again != lane {
			t.Fatalf("a second look-up gave %p (%v), want the same lane %p", again, err, lane)
		}
		v, last, err := r.DoOn(ctx, lane, get("k"), LockLane)
		if s, _ := v.Text(); err != nil || s != "v" {
			t.Fatalf("DoOn = %v, %v; want v", v, err)
		}
		if b := laneOf(r, nodeB); b == nil || b.cur.Load() != last {
			t.Errorf("the reply came on %v, want the lock lane of %s", last, nodeB)
		}

		r.Close()
		if _, err := r.LaneConn(ctx, Slot(slot), LockLane); !errors.Is(err, ErrClosed) {
			t.Errorf("the lock lane of a closed router: %v, want ErrClosed", err)
		}
	})
}

// A command with a deadline (conn.CallOptions.Deadline) that a Cluster answers
// TRYAGAIN stops retrying at the deadline, as under a context with it: the backoff
// between its tries ends there too, and the error matches context.DeadlineExceeded.
func TestDoOnDeadlineBoundsRetries(t *testing.T) {
	handle := func(addr string, args []string) string {
		if r, ok := clusterTopology(nodeA, args); ok {
			return r
		}
		return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
	}
	inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
		slot := keySlot("", "k")
		lane, err := r.LaneConn(ctx, Slot(slot), LockLane)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		by := start.Add(backoff(1) + backoff(2)/2) // in the second backoff
		cmd := get("k")
		cmd.Options.Deadline = by
		_, _, err = r.DoOn(context.Background(), lane, cmd, LockLane)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want one matching context.DeadlineExceeded", err)
		}
		if now := time.Now(); now.After(by) {
			t.Errorf("DoOn returned %v after the deadline", now.Sub(by))
		}
		if n := nodes.count(nodeA, "GET k"); n != 2 {
			t.Errorf("GET sent %d times, want 2 (before the deadline)", n)
		}
	})
}
