package resp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the codec starts
// none, and a test helper that does must stop it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
