package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Triggers that arrive while a refresh runs cause one more refresh, not one each.
func TestRefresherCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		r := NewRefresher(func(ctx context.Context) error {
			if calls.Add(1) == 1 {
				<-release
			}
			return nil
		}, RefresherOptions{})
		defer r.Close()
		r.Trigger()
		synctest.Wait() // the first refresh is running, blocked
		for range 100 {
			r.Trigger()
		}
		close(release)
		synctest.Wait()
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d refreshes for 101 triggers, want 2", n)
		}
	})
}

// Refresh waits for a refresh that started after it was called, and returns its error.
func TestRefreshWaitsForANewRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		started := make(chan struct{}, 10)
		proceed := make(chan struct{})
		boom := errors.New("boom")
		r := NewRefresher(func(ctx context.Context) error {
			n := calls.Add(1)
			started <- struct{}{}
			<-proceed
			if n == 2 {
				return boom
			}
			return nil
		}, RefresherOptions{})
		defer r.Close()
		r.Trigger()
		<-started // round 1 is running
		var err error
		var wg sync.WaitGroup
		wg.Go(func() { err = r.Refresh(context.Background()) })
		synctest.Wait()
		proceed <- struct{}{} // round 1 ends; the waiter must not be satisfied by it
		<-started             // round 2 starts for the waiter
		synctest.Wait()
		if err != nil {
			t.Fatalf("Refresh returned before its round ran: %v", err)
		}
		proceed <- struct{}{}
		wg.Wait()
		if !errors.Is(err, boom) || calls.Load() != 2 {
			t.Fatalf("Refresh = %v after %d rounds, want boom after 2", err, calls.Load())
		}
	})
}

func TestRefresherPeriodicAndGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var at []time.Duration
		start := time.Now()
		r := NewRefresher(func(ctx context.Context) error {
			mu.Lock()
			at = append(at, time.Since(start))
			mu.Unlock()
			return nil
		}, RefresherOptions{Interval: 10 * time.Second, MinGap: time.Second})
		defer r.Close()
		time.Sleep(35 * time.Second)
		synctest.Wait()
		mu.Lock()
		n := len(at)
		mu.Unlock()
		if n != 3 {
			t.Fatalf("%d periodic refreshes in 35s at a 10s interval, want 3", n)
		}
		// Two triggers in a row: the second waits for the gap.
		r.Trigger()
		synctest.Wait()
		r.Trigger()
		synctest.Wait()
		mu.Lock()
		if len(at) != 4 {
			t.Fatalf("%d refreshes, want 4: the second trigger must wait out the gap", len(at))
		}
		mu.Unlock()
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(at) != 5 || at[4]-at[3] < time.Second {
			t.Fatalf("refreshes at %v: want one more, a second after the last", at)
		}
	})
}

// Close cancels a refresh in progress and waiters give up.
func TestRefresherClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRefresher(func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, RefresherOptions{})
		errc := make(chan error, 1)
		go func() { errc <- r.Refresh(context.Background()) }()
		synctest.Wait()
		r.Close()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Refresh after Close: %v", err)
		}
		// A Refresh with its own deadline ends with it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := r.Refresh(ctx); !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Refresh on a closed refresher: %v", err)
		}
	})
}
