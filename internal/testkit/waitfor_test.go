package testkit

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fatalTB on a goroutine of its own, so that its Fatalf can end
// that goroutine, and returns the failure message, empty if there was none.
func run(t *testing.T, fn func(tb testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.msg
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		go func() {
			time.Sleep(time.Second)
			n.Store(1)
		}()
		if msg := run(t, func(tb testing.TB) {
			WaitFor(tb, "the flag", func() bool { return n.Load() == 1 })
		}); msg != "" {
			t.Fatal(msg)
		}
		if msg := run(t, func(tb testing.TB) {
			WaitFor(tb, "the flag", func() error { return nil })
		}); msg != "" {
			t.Fatal(msg)
		}
	})
}

func TestWaitForFailsAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		msg := run(t, func(tb testing.TB) {
			WaitFor(tb, "the flag", func() bool { return false })
		})
		if waited := time.Since(start); waited < Wait || waited > Wait+10*time.Millisecond {
			t.Errorf("failed after %v, want %v", waited, Wait)
		}
		if !strings.Contains(msg, "the flag") {
			t.Errorf("failure %q does not name what it waited for", msg)
		}
		msg = run(t, func(tb testing.TB) {
			WaitWithin(tb, time.Second, "the flag", func() error { return errors.New("still down") })
		})
		if !strings.Contains(msg, "the flag") || !strings.Contains(msg, "still down") {
			t.Errorf("failure %q does not say what it waited for and what it saw", msg)
		}
	})
}
