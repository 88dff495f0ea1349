package route

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/respire/respire/resp"
)

// WATCH's redirections go through the loop every command's do: the same budgets and
// backoff, a topology refresh after CLUSTERDOWN, and an ASK waited out on the slot's
// owner (the transaction could not run on the importing node), never followed.
func TestClusterWatchFollowsLikeDo(t *testing.T) {
	slot := keySlot("", "k")
	var retries time.Duration // the backoff schedule of every TRYAGAIN retry
	for i := 1; i <= MaxClusterRetries; i++ {
		retries += backoff(i)
	}
	tests := []struct {
		name string
		// reply answers the n-th WATCH (from 1) that addr received; moved is set
		// to the slot when the topology gives it to nodeB.
		reply   func(addr string, n int32, moved *atomic.Int32) string
		wantErr func(error) bool // nil: Watch succeeds
		wantOn  string           // the node of the connection Watch returns
		// sends by node; elapsed is the time Watch took in the bubble.
		wantA, wantB int
		elapsed      time.Duration
		refreshed    bool // a topology read follows WATCH's reply
	}{
		{
			name: "TRYAGAIN retried within its budget",
			reply: func(string, int32, *atomic.Int32) string {
				return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
			},
			wantErr: func(err error) bool { return errors.Is(err, ErrTooManyRedirects) && isCode("TRYAGAIN")(err) },
			wantA:   MaxClusterRetries + 1, elapsed: retries,
		},
		{
			name: "ASK waited out within the retry budget",
			reply: func(string, int32, *atomic.Int32) string {
				return fmt.Sprintf("-ASK %d %s\r\n", slot, nodeB)
			},
			wantErr: func(err error) bool { return errors.Is(err, ErrTooManyRedirects) && isCode("ASK")(err) },
			wantA:   MaxClusterRetries + 1, elapsed: retries,
		},
		{
			name: "ASK, then MOVED when the migration ends",
			reply: func(addr string, n int32, moved *atomic.Int32) string {
				switch {
				case addr == nodeB:
					return "+OK\r\n"
				case n == 1:
					return fmt.Sprintf("-ASK %d %s\r\n", slot, nodeB)
				}
				moved.Store(int32(slot))
				return fmt.Sprintf("-MOVED %d %s\r\n", slot, nodeB)
			},
			wantOn: nodeB, wantA: 2, wantB: 1, elapsed: backoff(1), refreshed: true,
		},
		{
			name: "CLUSTERDOWN refreshes the topology",
			reply: func(_ string, n int32, _ *atomic.Int32) string {
				if n == 1 {
					return "-CLUSTERDOWN The cluster is down\r\n"
				}
				return "+OK\r\n"
			},
			wantOn: nodeA, wantA: 2, elapsed: backoff(1), refreshed: true,
		},
		{
			name: "CLUSTERDOWN past its budget",
			reply: func(string, int32, *atomic.Int32) string {
				return "-CLUSTERDOWN The cluster is down\r\n"
			},
			wantErr: func(err error) bool { return errors.Is(err, ErrTooManyRedirects) && isCode("CLUSTERDOWN")(err) },
			wantA:   MaxClusterRetries + 1, elapsed: retries, refreshed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved := notMoved()
			var sent [2]atomic.Int32
			handle := twoMasters(moved, func(addr string, args []string) string {
				i := 0
				if addr == nodeB {
					i = 1
				}
				return tt.reply(addr, sent[i].Add(1), moved)
			})
			inBubble(t, handle, func(t *testing.T, ctx context.Context, r *Router, nodes *fakeNodes) {
				reads := r.Inspect().TopologyReads()
				start := time.Now()
				cn, err := r.Watch(ctx, Slot(slot), []any{"WATCH", "k"})
				elapsed := time.Since(start)
				switch {
				case tt.wantErr != nil:
					if !tt.wantErr(err) || cn != nil {
						t.Fatalf("Watch = %v, %v; want no connection and the error", cn, err)
					}
				case err != nil:
					t.Fatal(err)
				default:
					defer r.Release(cn, true)
					if cn.Addr() != tt.wantOn {
						t.Errorf("WATCH ran on %s, want %s", cn.Addr(), tt.wantOn)
					}
				}
				if elapsed != tt.elapsed {
					t.Errorf("Watch took %v, want %v", elapsed, tt.elapsed)
				}
				if a, b := nodes.count(nodeA, "WATCH k"), nodes.count(nodeB, "WATCH k"); a != tt.wantA || b != tt.wantB {
					t.Errorf("WATCH sent %d times to %s and %d to %s, want %d and %d", a, nodeA, b, nodeB, tt.wantA, tt.wantB)
				}
				if n := nodes.count(nodeB, "ASKING"); n != 0 {
					t.Errorf("ASKING sent %d times: an ASK was followed", n)
				}
				// Past the refresher's least gap, in the bubble's time.
				time.Sleep(time.Second)
				if got := r.Inspect().TopologyReads() > reads; got != tt.refreshed {
					t.Errorf("topology read after WATCH: %v, want %v", got, tt.refreshed)
				}
			})
		})
	}
}

// isCode matches an error that wraps a server error reply with code.
func isCode(code string) func(error) bool {
	return func(err error) bool {
		var se *resp.ServerError
		return errors.As(err, &se) && se.Code == code
	}
}
