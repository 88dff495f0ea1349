package route

import (
	"context"
	"errors"
	"testing"
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
