package main

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call stuck past the window (one that waits on something other than the stop flag)
// has its context cancelled after the grace, and the round reports it instead of
// hanging the whole run.
func TestMeasureEndsAStuckCall(t *testing.T) {
	defer func(g time.Duration) { stuckGrace = g }(stuckGrace)
	stuckGrace = 50 * time.Millisecond
	l := load{goroutines: 2, newWorker: func(i int) workerFunc {
		return func(ctx context.Context, h *histogram) (int, error) {
			if i == 0 {
				<-ctx.Done() // stuck until its context ends
				return 0, ctx.Err()
			}
			time.Sleep(time.Millisecond)
			return 1, nil
		}
	}}
	s := measure(context.Background(), l, 20*time.Millisecond)
	if !errors.Is(s.firstErr, errStuck) || s.errors != 1 {
		t.Fatalf("stuck call: errors %d, first %v; want 1 and errStuck", s.errors, s.firstErr)
	}
	if s.ops == 0 {
		t.Fatal("the call that was not stuck counted nothing")
	}
}
