package coordination

import (
	"context"
	"sync"
)

// turn lets one caller at a time through, as a channel of capacity one would, without
// allocating one per handle: the channel a waiter sleeps on is made only when a caller
// finds the turn taken, which a handle released once never does. The zero value is a
// free turn.
type turn struct {
	mu    sync.Mutex
	taken bool
	freed chan struct{} // closed when the turn is given back; nil while nobody waits
}

// take waits for the turn, until ctx ends (its cause).
func (t *turn) take(ctx context.Context) error {
	for {
		t.mu.Lock()
		if !t.taken {
			t.taken = true
			t.mu.Unlock()
			return nil
		}
		if t.freed == nil {
			t.freed = make(chan struct{})
		}
		freed := t.freed
		t.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// give gives the turn back and wakes whoever waits for it; one of them takes it.
func (t *turn) give() {
	t.mu.Lock()
	t.taken = false
	freed := t.freed
	t.freed = nil
	t.mu.Unlock()
	if freed != nil {
		close(freed)
	}
}
