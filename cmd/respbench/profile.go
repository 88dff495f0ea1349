package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
)

// A target missed is explained by where the time goes (issue #28), and the figures
// that say so must come from the windows the table reports, not from a benchmark
// set up apart: -cpuprofile and -trace record each measured window of the scenarios
// (never a warm-up, nor -sweep's windows) of every participant, to files named after
// the scenario, the participant (names are file-safe) and the round, for `go tool
// pprof` and `go tool trace` (whose -pprof=sched shows how long woken goroutines
// waited for a CPU). Both cover this process alone, whichever client it runs; a
// redis-benchmark row's files show respbench idling. Recording costs the process
// time (a trace most, with many goroutines), so a recorded run's figures are for
// reading the recordings beside, not for the README's table.

// windowRecorder starts the recordings of one measured window.
type windowRecorder struct {
	cpuDir, traceDir string
	note             func(format string, a ...any) // a file that cannot be written is noted, not fatal
}

// start begins recording the window of participant in round (from 1) of scenario and
// returns what ends it. Without -cpuprofile and -trace it does nothing.
func (w windowRecorder) start(scenario, participant string, round int) (stop func()) {
	name := fmt.Sprintf("%s-%s-r%d", scenario, participant, round)
	stopCPU := w.record("-cpuprofile", w.cpuDir, name+".pprof", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := w.record("-trace", w.traceDir, name+".trace", trace.Start, trace.Stop)
	return func() { stopCPU(); stopTrace() }
}

// record starts one recording (begin, end) into name under dir, unless dir is empty,
// and returns what ends it.
func (w windowRecorder) record(flag, dir, name string, begin func(io.Writer) error, end func()) (stop func()) {
	if dir == "" {
		return func() {}
	}
	f, err := w.create(dir, name)
	if err != nil {
		return func() {}
	}
	if err := begin(f); err != nil {
		// Another recording of this process is on (go test -cpuprofile): no empty
		// file is left to pass for a recording of the window.
		w.note("respbench: %s %s: %v", flag, f.Name(), err)
		f.Close()
		os.Remove(f.Name())
		return func() {}
	}
	return func() { end(); w.close(f) }
}

func (w windowRecorder) create(dir, name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		w.note("respbench: %v", err)
	}
	return f, err
}

func (w windowRecorder) close(f *os.File) {
	if err := f.Close(); err != nil {
		w.note("respbench: %v", err)
	}
}
