package lock

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/backoff"
)

// scriptJitter makes ExponentialRetry's pause its ceiling for the test's duration.
func scriptJitter(t *testing.T) {
	saved := backoff.Jitter
	backoff.Jitter = func(n time.Duration) time.Duration { return n }
	t.Cleanup(func() { backoff.Jitter = saved })
}

func TestRetryStrategyDelay(t *testing.T) {
	if d := FixedRetry(30 * time.Millisecond).Delay(7); d != 30*time.Millisecond {
		t.Fatal(d)
	}
	// Full jitter stays within [0, ceiling].
	s := ExponentialRetry(10*time.Millisecond, 100*time.Millisecond)
	for n := 1; n < 200; n++ {
		if d := s.Delay(n); d < 0 || d > 100*time.Millisecond {
			t.Fatalf("retry %d paused %v", n, d)
		}
	}
	scriptJitter(t)
	// A retry number below 1 is the first retry's, not a panic (Issue #28).
	for _, n := range []int{0, -1} {
		if d := s.Delay(n); d != 10*time.Millisecond {
			t.Fatalf("retry %d: ceiling %v, want the first retry's, 10ms", n, d)
		}
	}
	want := []time.Duration{10, 20, 40, 80, 100, 100}
	for i, w := range want {
		if d := s.Delay(i + 1); d != w*time.Millisecond {
			t.Fatalf("retry %d: ceiling %v, want %v", i+1, d, w*time.Millisecond)
		}
	}
	// No overflow however long the wait.
	huge := ExponentialRetry(time.Nanosecond, time.Hour)
	for _, n := range []int{62, 63, 64, 1000} {
		if d := huge.Delay(n); d != time.Hour {
			t.Fatalf("retry %d: %v", n, d)
		}
	}
}

func TestRetryOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
	}{
		{"zero strategy", WithRetry(RetryStrategy{})},
		{"fixed zero", WithRetry(FixedRetry(0))},
		{"fixed negative", WithRetryEvery(-time.Second)},
		{"exponential zero base", WithRetry(ExponentialRetry(0, time.Second))},
		{"exponential cap below base", WithRetry(ExponentialRetry(time.Second, time.Millisecond))},
		{"zero attempts", WithMaxAttempts(0)},
		{"negative attempts", WithMaxAttempts(-2)},
		{"negative wait", WithWait(-time.Second)},
		{"nil option", nil},
	} {
		if _, err := buildOptions([]Option{tc.opt}); !errors.Is(err, ErrInvalidArg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	l := New(nil)
	if _, _, err := l.TryAcquire(context.Background(), "k", time.Second, WithMaxAttempts(0)); !errors.Is(err, ErrInvalidArg) {
		t.Fatal(err)
	}
}

// tries is a scripted acquisition: it records when each try ran and answers from
// replies (the last reply repeats).
type tries struct {
	at      []time.Duration
	start   time.Time
	replies []func() (bool, error)
}

func (s *tries) try(context.Context) (bool, error) {
	s.at = append(s.at, time.Since(s.start))
	r := s.replies[min(len(s.at)-1, len(s.replies)-1)]
	return r()
}

func held() (bool, error)     { return false, nil }
func acquired() (bool, error) { return true, nil }
func unsent() (bool, error)   { return false, &conn.CallError{Err: io.EOF} }
func written() (bool, error)  { return false, &conn.CallError{Written: true, Err: io.EOF} }

func opts(t *testing.T, o ...Option) *acquireOptions {
	t.Helper()
	v, err := buildOptions(o)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}

func TestWaitLoopFixedPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &tries{start: time.Now(), replies: []func() (bool, error){held}}
		ok, err := waitLoop(t.Context(), opts(t, WithWait(time.Second), WithRetryEvery(100*time.Millisecond)), nil, 0, plain(s.try), nil, handoffKey{})
		if ok || err != nil {
			t.Fatal(ok, err)
		}
		for i, at := range s.at {
			if want := time.Duration(i+1) * 100 * time.Millisecond; at != want {
				t.Fatalf("try %d at %v, want %v", i+2, at, want)
			}
		}
		if n := len(s.at); n != 10 {
			t.Fatalf("%d retries in a 1 s budget every 100 ms", n)
		}
	})
}

func TestWaitLoopExponentialAndCap(t *testing.T) {
	scriptJitter(t)
	synctest.Test(t, func(t *testing.T) {
		s := &tries{start: time.Now(), replies: []func() (bool, error){held, held, held, acquired}}
		o := opts(t, WithWait(time.Minute), WithRetry(ExponentialRetry(10*time.Millisecond, 25*time.Millisecond)))
		ok, err := waitLoop(t.Context(), o, nil, 0, plain(s.try), nil, handoffKey{})
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		// Pauses 10, 20, then capped at 25 ms.
		want := []time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 55 * time.Millisecond, 80 * time.Millisecond}
		if len(s.at) != len(want) {
			t.Fatal(s.at)
		}
		for i := range want {
			if s.at[i] != want[i] {
				t.Fatalf("tries at %v, want %v", s.at, want)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := &tries{start: time.Now(), replies: []func() (bool, error){held}}
		o := opts(t, WithWait(time.Hour), WithMaxAttempts(3), WithRetryEvery(time.Second))
		ok, err := waitLoop(t.Context(), o, nil, 0, plain(s.try), nil, handoffKey{})
		if ok || err != nil || len(s.at) != 2 { // 3 attempts: the first and two retries
			t.Fatalf("%v %v after %d retries", ok, err, len(s.at))
		}
		if time.Since(s.start) != 2*time.Second {
			t.Fatalf("gave up after %v", time.Since(s.start))
		}
	})
}

func TestWaitLoopRetriesNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A first try that was not sent, then another, then success.
		s := &tries{start: time.Now(), replies: []func() (bool, error){unsent, acquired}}
		_, first := unsent()
		ok, err := waitLoop(t.Context(), opts(t, WithWait(time.Second), WithRetryEvery(10*time.Millisecond)), first, 0, plain(s.try), nil, handoffKey{})
		if !ok || err != nil || len(s.at) != 2 {
			t.Fatal(ok, err, s.at)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// Never sent within the budget: the error says so, rather than "held".
		s := &tries{start: time.Now(), replies: []func() (bool, error){unsent}}
		_, first := unsent()
		ok, err := waitLoop(t.Context(), opts(t, WithWait(100*time.Millisecond), WithRetryEvery(10*time.Millisecond)), first, 0, plain(s.try), nil, handoffKey{})
		if ok || !errors.Is(err, conn.ErrNotSent) {
			t.Fatal(ok, err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A try that may have run is never repeated.
		s := &tries{start: time.Now(), replies: []func() (bool, error){written}}
		ok, err := waitLoop(t.Context(), opts(t, WithWait(time.Second)), nil, 0, plain(s.try), nil, handoffKey{})
		if ok || !errors.Is(err, conn.ErrOutcomeUnknown) || len(s.at) != 1 {
			t.Fatal(ok, err, s.at)
		}
	})
}

// fakeWatch is a key watch the test fires.
type fakeWatch struct {
	fired   chan struct{}
	stopped bool
}

func (w *fakeWatch) Wait(ctx context.Context, limit time.Duration) error {
	tm := time.NewTimer(limit)
	defer tm.Stop()
	select {
	case <-w.fired:
	case <-tm.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

func (w *fakeWatch) Stop() { w.stopped = true }

func TestWaitLoopWokenByWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWatch{fired: make(chan struct{})}
		armed := 0
		watch := func(context.Context, keyWatch) (keyWatch, error) { armed++; return w, nil }
		s := &tries{start: time.Now(), replies: []func() (bool, error){acquired}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ok, err := waitLoop(t.Context(), opts(t, WithWait(time.Minute), WithRetryEvery(10*time.Millisecond)), nil, 0, plain(s.try), watch, handoffKey{})
			if !ok || err != nil {
				t.Error(ok, err)
			}
		}()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if len(s.at) != 0 || armed != 1 {
			t.Fatalf("polled while watching: %d tries, %d watches", len(s.at), armed)
		}
		close(w.fired)
		<-done
		if len(s.at) != 1 || s.at[0] != 30*time.Second || !w.stopped {
			t.Fatal(s.at, w.stopped)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// Tracking unavailable: the wait polls with the strategy instead.
		watch := func(context.Context, keyWatch) (keyWatch, error) { return nil, errors.New("no tracking") }
		s := &tries{start: time.Now(), replies: []func() (bool, error){held, acquired}}
		ok, err := waitLoop(t.Context(), opts(t, WithWait(time.Minute), WithRetryEvery(10*time.Millisecond)), nil, 0, plain(s.try), watch, handoffKey{})
		if !ok || err != nil || s.at[0] != 10*time.Millisecond {
			t.Fatal(ok, err, s.at)
		}
	})
}

func TestWaitLoopCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		s := &tries{start: time.Now(), replies: []func() (bool, error){held}}
		ok, err := waitLoop(ctx, opts(t, WithWait(time.Hour), WithRetryEvery(time.Second)), nil, 0, plain(s.try), nil, handoffKey{})
		if ok || !errors.Is(err, context.DeadlineExceeded) || time.Since(s.start) != 150*time.Millisecond {
			t.Fatal(ok, err, time.Since(s.start))
		}
	})
}

// A held try's retryIn (the soonest a holder's entry can expire unseen by a key watch)
// bounds the pause before the next try, whether the wait polls or watches.
func TestWaitLoopRetryInBoundsThePause(t *testing.T) {
	for _, watching := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			s := &tries{start: time.Now(), replies: []func() (bool, error){held, acquired}}
			try := func(ctx context.Context) (bool, time.Duration, error) {
				ok, err := s.try(ctx)
				return ok, 30 * time.Millisecond, err
			}
			var watch watchFunc
			if watching {
				watch = func(context.Context, keyWatch) (keyWatch, error) {
					return &fakeWatch{fired: make(chan struct{})}, nil // never fires
				}
			}
			o := opts(t, WithWait(time.Minute), WithRetryEvery(time.Second))
			// The first try, made before the loop, found it held with 30 ms to go.
			ok, err := waitLoop(t.Context(), o, nil, 30*time.Millisecond, try, watch, handoffKey{})
			if !ok || err != nil {
				t.Fatal(ok, err)
			}
			if want := []time.Duration{30 * time.Millisecond, 60 * time.Millisecond}; !slices.Equal(s.at, want) {
				t.Fatalf("watching %v: tries at %v, want %v", watching, s.at, want)
			}
		})
	}
}
