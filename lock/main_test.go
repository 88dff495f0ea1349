package lock

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/respire/respire/test/testserver"
)

// TestMain starts one server for the runnable examples (tests start their own) and
// checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) {
	code := testserver.RunMain(m, testserver.Config{}, func(s *testserver.Server) {
		os.Setenv("REDIS_URL", "redis://"+s.Addr())
	})
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
