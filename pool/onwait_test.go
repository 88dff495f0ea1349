package pool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// waitRecord is one call of Options.OnWait.
type waitRecord struct {
	wait time.Duration
	err  error
}

// waitRecorder collects OnWait calls; OnWait may run on any Get's goroutine.
type waitRecorder struct {
	mu    sync.Mutex
	calls []waitRecord
}

func (r *waitRecorder) onWait(wait time.Duration, err error) {
	r.mu.Lock()
	r.calls = append(r.calls, waitRecord{wait, err})
	r.mu.Unlock()
}

func (r *waitRecorder) all() []waitRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]waitRecord(nil), r.calls...)
}

// OnWait is called once per Get that waited, with the time until it was granted a
// connection or a slot (not the dial that follows) and the error it gave up with; never
// for a Get that did not wait. Under synctest the durations are exact.
func TestOnWait(t *testing.T) {
	const after = 30 * time.Millisecond
	cases := []struct {
		name string
		// free ends the wait of a Get queued behind held, after the test slept for
		// after; ctx, when set, is the waiting Get's.
		free     func(p *Pool[*fakeConn], held *fakeConn)
		ctx      func() (context.Context, context.CancelFunc)
		wantWait time.Duration
		wantErr  []error // what the waiting Get's error matches; none: it got a connection
	}{
		{
			name:     "connection returned",
			free:     func(p *Pool[*fakeConn], held *fakeConn) { p.Put(held) },
			wantWait: after,
		},
		{
			name:     "slot freed, dial not counted",
			free:     func(p *Pool[*fakeConn], held *fakeConn) { p.Discard(held) },
			wantWait: after,
		},
		{
			name: "context deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Millisecond)
			},
			wantWait: 10 * time.Millisecond,
			wantErr:  []error{ErrExhausted, context.DeadlineExceeded},
		},
		{
			name:     "pool closed",
			free:     func(p *Pool[*fakeConn], held *fakeConn) { p.Close() },
			wantWait: after,
			wantErr:  []error{ErrClosed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &waitRecorder{}
				p, d := newTestPool(t, Options[*fakeConn]{Size: 1, OnWait: rec.onWait})
				held := mustGet(t, p) // dialled: no wait
				p.Put(held)
				held = mustGet(t, p) // idle: no wait
				if got := rec.all(); len(got) != 0 {
					t.Fatalf("OnWait called for checkouts that did not wait: %v", got)
				}
				// A dial that takes time, which the wait must not include.
				d.setHook(func(context.Context, int) error { time.Sleep(time.Second); return nil })

				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				defer cancel()
				done := make(chan error, 1)
				go func() {
					c, err := p.Get(ctx)
					if err == nil {
						p.Put(c)
					}
					done <- err
				}()
				synctest.Wait()
				if tc.free != nil {
					time.Sleep(after)
					tc.free(p, held)
				}
				err := <-done
				if tc.free == nil {
					p.Put(held)
				}
				if len(tc.wantErr) == 0 && err != nil {
					t.Fatalf("waiting Get: %v", err)
				}
				for _, want := range tc.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("waiting Get's error %v does not match %v", err, want)
					}
				}
				got := rec.all()
				if len(got) != 1 {
					t.Fatalf("OnWait called %d times, want once: %v", len(got), got)
				}
				if got[0].wait != tc.wantWait {
					t.Errorf("OnWait wait = %v, want %v", got[0].wait, tc.wantWait)
				}
				if got[0].err != err {
					t.Errorf("OnWait err = %v, want the Get's %v", got[0].err, err)
				}
			})
		})
	}
}

// A Get whose context has already ended returns at once, without waiting, and OnWait
// is not called.
func TestOnWaitNotCalledForEndedContext(t *testing.T) {
	rec := &waitRecorder{}
	p, _ := newTestPool(t, Options[*fakeConn]{Size: 1, OnWait: rec.onWait})
	held := mustGet(t, p)
	defer p.Put(held)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with an ended context: %v, want context.Canceled", err)
	}
	if got := rec.all(); len(got) != 0 {
		t.Errorf("OnWait called for a Get that did not wait: %v", got)
	}
}
