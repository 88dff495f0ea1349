package testserver

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// RunMain starts a server described by cfg for a whole test binary, hands it to use
// (runnable examples, which get no testing.T, read its address from there), runs the
// tests and examples with m.Run, then stops the server and returns m.Run's exit code.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testserver.RunMain(m, testserver.Config{}, setAddr)) }
func RunMain(m *testing.M, cfg Config, use func(*Server)) (code int) {
	tb := &mainTB{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(mainFatal); !ok {
				panic(r)
			}
			code = 1
		}
		tb.runCleanups()
	}()
	s := Start(tb, cfg)
	use(s)
	return m.Run()
}

// mainTB is the testing.TB that RunMain lends Start outside any test: failures are
// printed and end RunMain; cleanups run when RunMain returns. Only the methods the
// harness calls are implemented; the embedded nil TB is never reached.
type mainTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

type mainFatal struct{}

func (t *mainTB) Helper()      {}
func (t *mainTB) Name() string { return "TestMain" }

func (t *mainTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testserver: "+format+"\n", args...)
}

func (t *mainTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	t.Logf(format, args...)
}

func (t *mainTB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(mainFatal{})
}

func (t *mainTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *mainTB) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

func (t *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "testserver-main-")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *mainTB) runCleanups() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// ExamplesMain is the whole TestMain of a package with runnable examples: it starts a
// server for them, exports its URL as REDIS_URL (examples connect with
// os.Getenv("REDIS_URL")), runs the tests and examples, checks for leaked goroutines
// and exits.
func ExamplesMain(m *testing.M) { ExamplesMainN(m, 1) }

// ExamplesMainN is ExamplesMain with n independent servers, for examples that need
// several (a Redlock group's): REDIS_URL names the first, REDIS_URLS all of them,
// separated by spaces.
func ExamplesMainN(m *testing.M, n int) {
	more := &mainTB{} // the servers after the first, stopped once RunMain has returned
	code := RunMain(m, Config{}, func(s *Server) {
		urls := []string{"redis://" + s.Addr()}
		for range n - 1 {
			urls = append(urls, "redis://"+Start(more, Config{}).Addr())
		}
		os.Setenv("REDIS_URL", urls[0])
		os.Setenv("REDIS_URLS", strings.Join(urls, " "))
	})
	more.runCleanups()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
