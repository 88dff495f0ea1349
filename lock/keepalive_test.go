package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/conn"
)

// The keep-alive's schedule follows the lease as it stands, on the bubble's clock.
func TestKeepAliveSchedule(t *testing.T) {
	const lease = 10 * time.Second
	ctx := context.Background()
	cases := []struct {
		name string
		// script runs with the lock acquired at 0 and starts a keep-alive; it returns
		// when the keep-alive should renew first (and every half lease from then).
		script func(t *testing.T, mu *Lock) (firstRenewal time.Duration)
		manual int // renewals the script makes itself, before the keep-alive's first
	}{{
		// A keep-alive started with less than half the lease left renews at once:
		// waiting half a lease from its start would be past the expiry.
		name: "started late renews at once",
		script: func(t *testing.T, mu *Lock) time.Duration {
			time.Sleep(7 * time.Second)
			if _, err := mu.KeepAlive(ctx); err != nil {
				t.Fatal(err)
			}
			return 7 * time.Second
		},
	}, {
		name: "started early renews at half the lease",
		script: func(t *testing.T, mu *Lock) time.Duration {
			time.Sleep(2 * time.Second)
			if _, err := mu.KeepAlive(ctx); err != nil {
				t.Fatal(err)
			}
			return lease / 2
		},
	}, {
		// A longer lease set by hand moves the next renewal (and the expiry deadline,
		// which would otherwise end the context at the old one) to half a lease
		// before its end.
		name: "ResetExpiry longer moves both",
		script: func(t *testing.T, mu *Lock) time.Duration {
			if _, err := mu.KeepAlive(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if ok, err := mu.ResetExpiry(ctx, time.Minute); !ok || err != nil {
				t.Fatal(ok, err)
			}
			return time.Second + time.Minute - lease/2
		},
		manual: 1,
	}, {
		// A shorter one leaves less than half a lease: the keep-alive renews at once.
		name: "ResetExpiry shorter renews at once",
		script: func(t *testing.T, mu *Lock) time.Duration {
			if _, err := mu.KeepAlive(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			if ok, err := mu.ResetExpiry(ctx, 3*time.Second); !ok || err != nil {
				t.Fatal(ok, err)
			}
			return time.Second
		},
		manual: 1,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, c := fakeClient(t)
				start := time.Now()
				mu, err := New(c).Acquire(ctx, "ka", lease)
				if err != nil {
					t.Fatal(err)
				}
				first := tc.script(t, mu)
				// Three renewals' worth of time: the keep-alive renews at first, then
				// every half lease, and its context never ends.
				time.Sleep(first + lease + lease/4 - time.Since(start))
				synctest.Wait()
				work := mu.KeepAliveContext()
				if work.Err() != nil {
					t.Fatalf("the keep-alive's context ended: %v", context.Cause(work))
				}
				got := f.Renewals()[tc.manual:]
				want := []time.Duration{first, first + lease/2, first + lease}
				if len(got) != len(want) {
					t.Fatalf("renewals at %v, want at %v", since(start, got), want)
				}
				for i := range want {
					if at := got[i].Sub(start); at != want[i] {
						t.Fatalf("renewals at %v, want at %v", since(start, got), want)
					}
				}
				if out, err := mu.Release(ctx); out != Released || err != nil {
					t.Fatal(out, err)
				}
				if !errors.Is(context.Cause(work), ErrReleased) {
					t.Fatalf("cause after release %v", context.Cause(work))
				}
			})
		})
	}
}

func since(start time.Time, ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(start)
	}
	return out
}

// After Stop, KeepAliveContext is what its doc says of a lock without keep-alive: it
// ends shortly before the expiry estimate, and until then the lock is held.
func TestKeepAliveContextAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		ctx := context.Background()
		_, c := fakeClient(t)
		start := time.Now()
		mu, ok, err := New(c).TryAcquire(ctx, "stop", lease, WithKeepAlive())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		kept := mu.KeepAliveContext()
		time.Sleep(6 * time.Second) // one renewal, at 5s: the lease ends at 15s
		mu.ka.Stop()
		if !errors.Is(context.Cause(kept), ErrKeepAliveStopped) {
			t.Fatalf("the keep-alive's context after Stop: %v", context.Cause(kept))
		}
		work := mu.KeepAliveContext()
		if work.Err() != nil {
			t.Fatalf("KeepAliveContext after Stop ended at once: %v", context.Cause(work))
		}
		deadline, ok := work.Deadline()
		if want := start.Add(5*time.Second + lease - lease/20); !ok || !deadline.Equal(want) {
			t.Fatalf("deadline %v (%v), want %v", deadline.Sub(start), ok, want.Sub(start))
		}
		time.Sleep(deadline.Sub(time.Now()))
		synctest.Wait()
		if !errors.Is(context.Cause(work), context.DeadlineExceeded) {
			t.Fatalf("at the deadline: %v", context.Cause(work))
		}
		// A new keep-alive can start while the lease lasts.
		ka, err := mu.KeepAlive(ctx)
		if err != nil || ka == nil || mu.KeepAliveContext() != ka.Context() {
			t.Fatalf("KeepAlive after Stop: %v", err)
		}
		mu.Close()
	})
}

// A release that gives up while the keep-alive's last renewal is still running leaves
// that keep-alive with the lock: no second one starts beside it, and the next release
// waits for the renewal before it deletes.
func TestReleaseThatGivesUpKeepsTheStoppingKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		ctx := context.Background()
		f, c := fakeClient(t)
		mu, err := New(c).Acquire(ctx, "ka", lease)
		if err != nil {
			t.Fatal(err)
		}
		ka, err := mu.KeepAlive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		resume := f.holdRenewals()
		time.Sleep(lease/2 + time.Millisecond) // the renewal is sent, and held
		synctest.Wait()

		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		if _, err := mu.Release(short); !errors.Is(err, conn.ErrNotSent) {
			t.Fatalf("Release behind a held renewal: %v; want not sent", err)
		}
		if again, err := mu.KeepAlive(ctx); err != nil || again != ka {
			t.Fatalf("KeepAlive while the last renewal runs: %p, %v; want the stopping one (%p)", again, err, ka)
		}
		released := make(chan error, 1)
		go func() {
			out, err := mu.Release(ctx)
			if err == nil && out != Released {
				err = fmt.Errorf("outcome %v", out)
			}
			released <- err
		}()
		synctest.Wait()
		resume()
		if err := <-released; err != nil {
			t.Fatalf("the second release: %v", err)
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrKeepAliveStopped) {
			t.Fatalf("the keep-alive's cause: %v; want ErrKeepAliveStopped, from the release that gave up", cause)
		}
		if n := len(f.Renewals()); n != 1 {
			t.Fatalf("%d renewals; want the held one alone", n)
		}
	})
}

// A keep-alive asked for while a Release is in flight starts no renewal: the delete
// is the last command of the lock, and the keep-alive's context ends with the
// release's cause before Release returns.
func TestKeepAliveDuringReleaseDoesNotRenew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 10 * time.Second
		ctx := context.Background()
		f, c := fakeClient(t)
		mu, err := New(c).Acquire(ctx, "ka-during-release", lease)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(lease/2 + time.Millisecond) // a keep-alive started now renews at once
		resumeRenewals := sync.OnceFunc(f.holdRenewals())
		defer resumeRenewals()
		resumeDeletes := f.holdDeletes()
		released := make(chan error, 1)
		go func() {
			out, err := mu.Release(ctx)
			if err == nil && out != Released {
				err = fmt.Errorf("outcome %v", out)
			}
			released <- err
		}()
		synctest.Wait() // the delete is sent, and held

		ka, err := mu.KeepAlive(ctx)
		if err != nil {
			t.Fatalf("KeepAlive during the release: %v", err)
		}
		synctest.Wait()
		resumeDeletes()
		if err := <-released; err != nil {
			t.Fatalf("Release: %v", err)
		}
		if cause := context.Cause(ka.Context()); !errors.Is(cause, ErrReleased) {
			t.Fatalf("the keep-alive's cause when Release returned: %v; want ErrReleased", cause)
		}
		resumeRenewals()
		<-ka.Done()
		synctest.Wait()
		ran := f.Ran()
		for i, name := range ran {
			if name == "DELEX" && slices.Contains(ran[i:], "SET IFEQ") {
				t.Fatalf("a renewal ran with or after the delete: %v", ran)
			}
		}
		if _, err := mu.KeepAlive(ctx); !errors.Is(err, ErrReleased) {
			t.Fatalf("KeepAlive after the release: %v", err)
		}
	})
}
