//go:build unix

package cmds

import (
	"syscall"
	"testing"
	"time"
)

// cpuPerOp starts measuring the CPU time this process spends, user and system, and
// returns the function that reports it per operation as cpu-ns/op. The server is
// another process, so this is the client's own cost, which wall time on a shared
// machine hides behind the round trips.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
