package coordination

import (
	"testing"

	"github.com/respire/respire/test/testserver"
)

// TestMain starts three servers for the runnable examples, a Redlock group's (tests
// start their own), and checks for leaked goroutines once everything has run.
func TestMain(m *testing.M) { testserver.ExamplesMainN(m, 3) }
