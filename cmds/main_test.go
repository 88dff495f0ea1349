package cmds

import (
	"testing"

	"github.com/respire/respire/test/testserver"
)

// TestMain starts one server for the runnable examples (tests start their own) and
// checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { testserver.ExamplesMain(m) }
