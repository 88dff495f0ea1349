package lock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// An acquisition whose reply comes when the lease has no time left for work (at or
// after the safe deadline: start + TTL less a twentieth) is not held: it is reported
// not acquired and its key is given back, not left for its TTL; one just in time is
// held. The fake server runs each SET NX on arrival and holds its reply back, on the
// bubble's clock.
func TestAcquisitionReplyPastValidity(t *testing.T) {
	const lease = 10 * time.Second
	margin := lease / 20
	cases := []struct {
		name      string
		delay     time.Duration
		wantOK    bool
		wantAfter bool // the key still holds a lease after TryAcquire returns
	}{
		{name: "at once", delay: 0, wantOK: true, wantAfter: true},
		{name: "just in time", delay: lease - margin - time.Millisecond, wantOK: true, wantAfter: true},
		{name: "at the safe deadline", delay: lease - margin, wantOK: false},
		{name: "at the TTL", delay: lease, wantOK: false},
		{name: "past the TTL", delay: 2 * lease, wantOK: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f, c := fakeClient(t)
				f.slowSets = []time.Duration{tc.delay}
				mu, ok, err := New(c).TryAcquire(context.Background(), "late", lease)
				if err != nil || ok != tc.wantOK {
					t.Fatalf("TryAcquire with the reply %v late: ok %v, err %v; want ok %v, no error", tc.delay, ok, err, tc.wantOK)
				}
				if ok && (mu.Expired() || mu.RemainingEstimate() != lease-tc.delay) {
					t.Fatalf("held with %v left (expired %v); want %v", mu.RemainingEstimate(), mu.Expired(), lease-tc.delay)
				}
				if !ok && mu != nil {
					t.Fatalf("a handle %p with ok false", mu)
				}
				if held := f.held("late"); held != tc.wantAfter {
					t.Fatalf("key held after TryAcquire: %v; want %v", held, tc.wantAfter)
				}
				mu.Close()
			})
		})
	}
}

// Acquire reports a late reply as ErrNotAcquired; a wait goes on after it with a fresh
// token, and takes the lock once a reply comes in time.
func TestLateAcquisitionWaitsOn(t *testing.T) {
	const lease = 10 * time.Second
	synctest.Test(t, func(t *testing.T) {
		f, c := fakeClient(t)
		locks := New(c)
		f.slowSets = []time.Duration{lease}
		if _, err := locks.Acquire(context.Background(), "late", lease); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("Acquire with its reply a lease late: %v; want ErrNotAcquired", err)
		}
		f.slowSets = []time.Duration{lease, 0}
		mu, ok, err := locks.TryAcquire(context.Background(), "late", lease, WithWait(3*lease), WithRetryEvery(time.Second))
		if err != nil || !ok {
			t.Fatalf("waiting past a late reply: ok %v, err %v", ok, err)
		}
		defer mu.Close()
		f.mu.Lock()
		tokens := f.setsNX[1:]
		f.mu.Unlock()
		if len(tokens) != 2 || tokens[0] == tokens[1] || mu.Token().b != tokens[1] {
			t.Fatalf("tokens of the wait's acquisitions %q, handle's %q; want two different, the handle's last", tokens, mu.Token().b)
		}
	})
}
