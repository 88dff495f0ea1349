package testserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine, such as a process reaper,
// outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testContext bounds one command of a test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fakeTB records Fatalf, Errorf and Logf instead of acting on them, so a test
// can assert the failure messages the harness gives, and the cleanups the
// harness registers are run by runCleanups (and at the latest when the real
// test ends).
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	failed   bool
	fatals   []string
	logs     []string
	cleanups []func()
}

func newFakeTB(t *testing.T) *fakeTB {
	f := &fakeTB{TB: t}
	t.Cleanup(f.runCleanups)
	return f
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Errorf(format string, args ...any) { f.Fatalf(format, args...) }

func (f *fakeTB) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// runCleanups runs the recorded cleanups last first, once.
func (f *fakeTB) runCleanups() {
	f.mu.Lock()
	fns := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// fatal returns the recorded Fatalf messages joined, failing if there are none.
func (f *fakeTB) fatal(t *testing.T) string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fatals) == 0 {
		t.Fatal("the harness did not call Fatalf")
	}
	return strings.Join(f.fatals, "\n")
}
