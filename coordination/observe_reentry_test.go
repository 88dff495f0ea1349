package coordination

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/lock"
	"github.com/respire/respire/observe"
	"github.com/respire/respire/test/testserver"
)

// deadlockBound is how long a call that takes milliseconds may run before a test calls
// it deadlocked: a failure detector far above any machine's pause, not a measure of
// speed.
const deadlockBound = 30 * time.Second

// returns fails t unless f returns within deadlockBound.
func returns(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(deadlockBound):
		t.Fatalf("%s has not returned after %v: deadlocked on its own observer", what, deadlockBound)
	}
}

// reentered is a lease as the re-entry test drives it.
type reentered struct {
	renew     func(context.Context, time.Duration) (bool, error)
	remaining func() time.Duration // a state accessor, which takes the handle's mutex
	release   func(context.Context) error
	breakIt   func() // takes the lease away on a quorum of servers
}

// entryLease is a permit or a read/write lease.
type entryLease interface {
	ResetExpiry(context.Context, time.Duration) (bool, error)
	RemainingEstimate() time.Duration
	Release(context.Context) (lock.ReleaseOutcome, error)
	Token() lock.Token
}

// reenteredEntry acquires, with acquire, an entry whose field in key has the prefix
// field, on a server of its own.
func reenteredEntry(t *testing.T, rec *recorder, key, field string, acquire func(*Coordinator) (entryLease, bool, error)) reentered {
	srv := testserver.Start(t, testserver.Config{})
	l, ok, err := acquire(New(observedClient(t, srv, rec, false)))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	return reentered{
		renew: l.ResetExpiry, remaining: l.RemainingEstimate,
		release: func(ctx context.Context) error { _, err := l.Release(ctx); return err },
		breakIt: func() { srv.Do(t, "HDEL", key, field+string(l.Token().Bytes())) },
	}
}

// An observer may call back into the lease an event is about: read its state from any
// event, or release it from the release's own. No event is sent while the handle holds
// its mutex or its release turn, so neither deadlocks nor waits for the caller's
// context; each call still reports its events in order, and the loss once.
func TestObserverCallsBackIntoTheLease(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		start func(t *testing.T, rec *recorder) reentered
	}{{
		name: "permit",
		start: func(t *testing.T, rec *recorder) reentered {
			return reenteredEntry(t, rec, "re:sem", "p:", func(co *Coordinator) (entryLease, bool, error) {
				return co.Semaphore("re:sem", 1).TryAcquire(ctx, time.Minute)
			})
		},
	}, {
		name: "write lease",
		start: func(t *testing.T, rec *recorder) reentered {
			return reenteredEntry(t, rec, "re:rw", "w:", func(co *Coordinator) (entryLease, bool, error) {
				return co.TryAcquireWriteLock(ctx, "re:rw", time.Minute)
			})
		},
	}, {
		// Package lock's handle, which sent its events unlocked already.
		name: "fenced lock",
		start: func(t *testing.T, rec *recorder) reentered {
			srv := testserver.Start(t, testserver.Config{})
			fl, ok, err := New(observedClient(t, srv, rec, false)).TryAcquireFencedLock(ctx, "{re}:lease", "{re}:fence", time.Minute)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			return reentered{
				renew: fl.ResetExpiry, remaining: fl.RemainingEstimate,
				release: func(ctx context.Context) error { _, err := fl.Release(ctx); return err },
				breakIt: func() { srv.Do(t, "DEL", "{re}:lease") },
			}
		},
	}, {
		name: "redlock",
		start: func(t *testing.T, rec *recorder) reentered {
			srvs := make([]*testserver.Server, 3)
			clients := make([]*respire.Client, 3)
			for i := range srvs {
				srvs[i] = testserver.Start(t, testserver.Config{})
				clients[i] = observedClient(t, srvs[i], rec, false)
			}
			rl, ok, err := newGroup(t, clients).TryAcquire(ctx, "re:rl", 30*time.Second)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			return reentered{
				renew:     rl.ResetExpiry,
				remaining: rl.RemainingEstimate,
				release:   func(ctx context.Context) error { _, err := rl.Release(ctx); return err },
				breakIt: func() {
					srvs[0].Do(t, "DEL", "re:rl")
					srvs[1].Do(t, "DEL", "re:rl")
				},
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			l := tc.start(t, rec)
			rec.take()
			// Every event reads the lease's state; the first release's event releases it
			// again, as an observer cleaning up might.
			releasedAgain := false
			rec.onLock(func(e observe.Lock) {
				l.remaining()
				if e.Kind == observe.LockReleased && !releasedAgain {
					releasedAgain = true
					if err := l.release(ctx); err != nil {
						t.Errorf("the observer's release: %v", err)
					}
				}
			})

			returns(t, "a renewal", func() {
				if ok, err := l.renew(ctx, 30*time.Second); !ok || err != nil {
					t.Errorf("renewal: %v %v", ok, err)
				}
			})
			rec.want(t, "renewal", nil, 0, renewed)
			l.breakIt()
			returns(t, "a renewal that finds the lease lost", func() {
				if ok, err := l.renew(ctx, 30*time.Second); ok || err != nil {
					t.Errorf("renewal of a lost lease: %v %v", ok, err)
				}
			})
			rec.want(t, "loss", lock.ErrLeaseLost, 0, lost)
			returns(t, "a release", func() {
				if err := l.release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			})
			es := rec.take()
			if len(es) != 2 || es[0].Kind != released || es[1].Kind != released {
				t.Fatalf("release: events %v, want the release's then the observer's", es)
			}
			if !releasedAgain {
				t.Fatal("the observer was not called for the release")
			}
		})
	}
}
