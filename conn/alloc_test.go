package conn

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/respire/respire/internal/testkit"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// TestAllocBudget holds the hot paths to their allocation budgets, per command, beyond
// the value returned: a single GET allocates nothing of its own (its 16-byte value
// comes out of the reader's shared chunk), and a batch of 100 allocates its result
// slice once.
func TestAllocBudget(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates on its own")
	}
	srv := testserver.Start(t, testserver.Config{})
	c, err := Dial(context.Background(), srv.Addr(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmds := make([][]any, 100)
	var payload []byte
	for i := range cmds {
		key := "alloc:" + strconv.Itoa(i)
		if _, err := c.Do(context.Background(), "SET", key, strings.Repeat("v", 16)); err != nil {
			t.Fatal(err)
		}
		cmds[i] = []any{"GET", key}
		payload, _ = resp.AppendCommand(payload, "GET", key)
	}
	getPayload, _ := resp.AppendCommand(nil, "GET", "alloc:0")
	other := dialT(t, srv.Addr(), Options{})
	reused := [2][]Result{make([]Result, 0, 100), make([]Result, 0, 100)}
	startBoth := func(ctx context.Context, results *[2][]Result) error {
		var pend [2]Pending
		for i, cn := range []*Conn{c, other} {
			var err error
			if pend[i], err = cn.StartEncoded(ctx, 100, payload, results[i]); err != nil {
				return err
			}
		}
		for i := range pend {
			if _, err := pend[i].Wait(); err != nil {
				return err
			}
		}
		return nil
	}
	// A connection idle for a while peeks at its socket before the next command
	// (lockForEnqueue): made to look idle since long ago, without waiting.
	idle := func() {
		c.mu.Lock()
		c.r.idleSince = 1
		c.mu.Unlock()
	}
	tests := []struct {
		name     string
		commands int
		budget   float64 // allocations per command, the returned value's share included
		run      func() error
	}{
		{"GET", 1, 0.1, func() error { _, err := c.Do(context.Background(), "GET", "alloc:0"); return err }},
		{"GET cancellable", 1, 0.1, func() error { _, err := c.Do(cancellable, "GET", "alloc:0"); return err }},
		{"GET after an idle spell", 1, 0.1, func() error { idle(); _, err := c.Do(context.Background(), "GET", "alloc:0"); return err }},
		{"GET with a deadline", 1, 0.1, func() error {
			_, err := c.DoWith(context.Background(), CallOptions{Deadline: time.Now().Add(time.Minute)}, "GET", "alloc:0")
			return err
		}},
		// Behind a batch the reader goroutine reads, the caller waits for it with a
		// timer for its deadline, which the connection reuses.
		{"GET with a deadline behind a batch", 2, 0.1, func() error {
			p, err := c.StartEncoded(context.Background(), 1, getPayload, reused[0])
			if err != nil {
				return err
			}
			_, err = c.DoWith(context.Background(), CallOptions{Deadline: time.Now().Add(time.Minute)}, "GET", "alloc:0")
			if _, werr := p.Wait(); werr != nil {
				return werr
			}
			return err
		}},
		{"DoMulti 100 GETs", 100, 0.05, func() error { _, err := c.DoMulti(cancellable, cmds...); return err }},
		{"DoEncoded 100 GETs", 100, 0.05, func() error { _, err := c.DoEncoded(cancellable, 100, payload); return err }},
		{"StartEncoded 100 GETs on two connections", 200, 0.05, func() error { return startBoth(context.Background(), &[2][]Result{}) }},
		{"StartEncoded 100 GETs on two connections, cancellable", 200, 0.05, func() error { return startBoth(cancellable, &[2][]Result{}) }},
		// The results go into the caller's slices: nothing is allocated but the values.
		{"StartEncoded 100 GETs on two connections, results reused", 200, 0.001, func() error { return startBoth(context.Background(), &reused) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runErr error
			allocs := testing.AllocsPerRun(200, func() {
				if err := tt.run(); err != nil {
					runErr = err
				}
			})
			if runErr != nil {
				t.Fatal(runErr)
			}
			if per := allocs / float64(tt.commands); per > tt.budget {
				t.Errorf("%.3f allocations per command, budget %.2f", per, tt.budget)
			}
		})
	}
}
