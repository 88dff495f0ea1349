package cluster

import (
	"context"
	"sync"
	"time"
)

// Refresher runs a topology refresh in the background: every Interval, and soon after
// Trigger. Triggers coalesce: however many arrive while a refresh is pending or
// running, they cause at most one more refresh, so a burst of redirections costs one
// CLUSTER SHARDS, not one per redirection.
type Refresher struct {
	fn       func(ctx context.Context) error
	interval time.Duration
	minGap   time.Duration

	mu   sync.Mutex
	next *round // the refresh the next round will serve; nil when none is wanted
	wake chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// round is one refresh that callers of Refresh wait for.
type round struct {
	done chan struct{}
	err  error
}

// RefresherOptions configure NewRefresher.
type RefresherOptions struct {
	// Interval between periodic refreshes; zero disables them.
	Interval time.Duration
	// MinGap is the least time between the start of one refresh and the next, so that a
	// cluster in trouble (a node down, every command failing) is not asked for its
	// topology in a tight loop.
	MinGap time.Duration
}

// NewRefresher starts the goroutine that calls fn, with a context that Close cancels.
// fn is never called concurrently with itself.
func NewRefresher(fn func(ctx context.Context) error, o RefresherOptions) *Refresher {
	r := &Refresher{
		fn:       fn,
		interval: o.Interval,
		minGap:   o.MinGap,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r
}

// Trigger asks for a refresh soon and returns at once.
func (r *Refresher) Trigger() { r.want() }

// Refresh asks for a refresh and waits until one that started after the call has
// finished, or ctx ends. It returns that refresh's error.
func (r *Refresher) Refresh(ctx context.Context) error {
	rd := r.want()
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-r.done:
		return context.Canceled
	}
}

func (r *Refresher) want() *round {
	r.mu.Lock()
	rd := r.next
	if rd == nil {
		rd = &round{done: make(chan struct{})}
		r.next = rd
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return rd
}

func (r *Refresher) run() {
	defer close(r.done)
	var tick <-chan time.Time
	if r.interval > 0 {
		t := time.NewTicker(r.interval)
		defer t.Stop()
		tick = t.C
	}
	var last time.Time
	for {
		select {
		case <-r.ctx.Done():
			r.finish(context.Canceled)
			return
		case <-r.wake:
		case <-tick:
		}
		if wait := r.minGap - time.Since(last); !last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-r.ctx.Done():
				t.Stop()
				r.finish(context.Canceled)
				return
			case <-t.C:
			}
		}
		r.mu.Lock()
		rd := r.next
		r.next = nil
		r.mu.Unlock()
		last = time.Now()
		err := r.fn(r.ctx)
		if rd != nil {
			rd.err = err
			close(rd.done)
		}
	}
}

// finish ends a round nobody will run.
func (r *Refresher) finish(err error) {
	r.mu.Lock()
	rd := r.next
	r.next = nil
	r.mu.Unlock()
	if rd != nil {
		rd.err = err
		close(rd.done)
	}
}

// Close stops the goroutine, cancelling a refresh in progress, and waits for it.
func (r *Refresher) Close() {
	r.cancel()
	<-r.done
}
