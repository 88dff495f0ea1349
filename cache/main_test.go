package cache

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind: a cache's
// catch-up and invalidation paths must not outlive the test that started them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
