package faults

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/respire/respire/test/history"
)

// at converts a wall-clock instant (an expiry estimate) to the recorder's
// monotonic offsets.
func at(r *history.Recorder, when time.Time) time.Duration {
	return r.Now() + time.Until(when)
}

// figure is what a scenario measured: the row of the README's table.
type figure struct {
	scenario   string
	seed       uint64
	start      time.Time
	faults     int
	ops        int
	violations []history.Violation
}

// newFigure starts a scenario's figure and returns its seeded random source.
func newFigure(t testing.TB, scenario string) (*figure, *rand.Rand) {
	rng, seed := Seed(t)
	return &figure{scenario: scenario, seed: seed, start: time.Now()}, rng
}

// check adds the checker's findings to the figure.
func (f *figure) check(v []history.Violation) { f.violations = append(f.violations, v...) }

// report logs the figure in one greppable line and fails the test on any
// violation, naming each.
func (f *figure) report(t testing.TB) {
	t.Helper()
	t.Logf("FIGURE %s ops=%d faults=%d violations=%d seed=%d duration=%v",
		f.scenario, f.ops, f.faults, len(f.violations), f.seed, time.Since(f.start).Round(time.Second))
	for _, v := range f.violations {
		t.Errorf("violation: %v", v)
	}
}
