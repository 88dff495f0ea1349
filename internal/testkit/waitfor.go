package testkit

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// Wait is how long WaitFor polls before it fails the test: long enough for a loaded
// machine running many packages' tests at once, short enough that a test that will
// never see its condition fails rather than hanging until the test binary's timeout.
const Wait = 10 * time.Second

// Cond is a condition WaitFor polls: a func() bool that reports whether it holds, or a
// func() error that returns nil when it holds and otherwise says what it saw, which
// the failure then shows.
type Cond interface {
	func() bool | func() error
}

// WaitFor polls cond until it holds, and fails the test, naming what it waited for,
// if it does not within Wait. It is how a test waits for something to happen instead
// of sleeping for a guess of how long that takes.
func WaitFor[C Cond](tb testing.TB, what string, cond C) {
	tb.Helper()
	WaitWithin(tb, Wait, what, cond)
}

// WaitWithin is WaitFor with a deadline of d, for a test whose condition must come
// within a bound the behaviour promises (a renewal within a lease).
func WaitWithin[C Cond](tb testing.TB, d time.Duration, what string, cond C) {
	tb.Helper()
	check := func() error {
		switch c := any(cond).(type) {
		case func() bool:
			if !c() {
				return errNotYet
			}
			return nil
		case func() error:
			return c()
		}
		panic(fmt.Sprintf("testkit: condition of type %T", cond))
	}
	deadline := time.Now().Add(d)
	// The first polls come quickly, so that a condition a goroutine is about to meet
	// costs no more than a few scheduler turns (tests loop over it hundreds of times);
	// later ones back off so that a long wait does not busy the machine.
	pause := 20 * time.Microsecond
	for {
		err := check()
		if err == nil {
			return
		}
		if !time.Now().Before(deadline) {
			if err == errNotYet {
				tb.Fatalf("waited %v for %s", d, what)
			}
			tb.Fatalf("waited %v for %s: %v", d, what, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 5*time.Millisecond)
	}
}

var errNotYet = errors.New("testkit: not yet")
