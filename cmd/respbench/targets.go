package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The performance targets Respire is held to (issue #28), checked against the figures
// of the run that just ended, so that a run's table ends with its own verdict rather
// than leaving the reader to find each ratio. A target whose rows are not in the run
// (a scenario left out with -scenarios, the sweep without -sweep, a standalone target
// on a cluster) is reported as not measured, never as met.

// goal is one target: what it asks, and how to read it off a report.
type goal struct {
	name    string
	want    string
	cluster bool // measured on a cluster run (-cluster), not on one server
	delex   bool // measured on one server that has DELEX (Redis 8.4 and later)
	lua     bool // measured on one server without DELEX: the release is the Lua script
	// check returns what the run measured, whether that meets the target, and false
	// for measured when the run lacks the rows.
	check func(rep *report) (got string, met, measured bool)
}

// targetResult is one goal's verdict in a run, for the JSON report.
type targetResult struct {
	Name     string `json:"name"`
	Want     string `json:"want"`
	Got      string `json:"got,omitempty"`
	Met      bool   `json:"met"`
	Measured bool   `json:"measured"`
}

var goals = []goal{
	{name: "sequential GET", want: "≥ 2× best peer and ≥ 2× redis-benchmark", check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "get-seq", 2), refRatio(rep, "get-seq", "respire", "redis-benchmark", 2))
	}},
	{name: "parallel GET ×64", want: "≥ 1.3× best peer", check: func(rep *report) (string, bool, bool) {
		return peerRatio(rep, "get-par", 1.3).verdict()
	}},
	{name: "parallel SET 1 KiB ×64", want: "≥ 1.3× best peer", check: func(rep *report) (string, bool, bool) {
		return peerRatio(rep, "set-par", 1.3).verdict()
	}},
	{name: "parallel GET ×1,024", want: "≥ 1.3× best peer (sweep)", check: func(rep *report) (string, bool, bool) {
		return sweepRatio(rep, 1024, 1.3).verdict()
	}},
	{name: "pipeline of 100 GETs", want: "≥ 1.3× best peer and ≥ 0.9× redis-benchmark", check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "pipeline", 1.3), refRatio(rep, "pipeline", "respire", "redis-benchmark", 0.9))
	}},
	{name: "lock acquire+release ×16 with Lua", want: "≥ 1.5× best peer and ≥ 0.75× two dependent GETs", lua: true, check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "lock", 1.5), refRatio(rep, "lock", "respire-lock", "ref-two-gets", 0.75))
	}},
	{name: "lock acquire+release ×16 with DELEX", want: "≥ 1.5× best peer and ≥ 0.85× two dependent GETs", delex: true, check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "lock", 1.5), refRatio(rep, "lock", "respire-lock", "ref-two-gets", 0.85))
	}},
	{name: "lock hand-off ×16 on one key", want: "≥ 1.5× best peer", check: func(rep *report) (string, bool, bool) {
		return peerRatio(rep, "lock-contended", 1.5).verdict()
	}},
	{name: "cached GET ×64", want: "≥ 1.3× best peer, ≥ 0.6× a map lookup, p99 ≤ 5 µs", check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "cached-get", 1.3), refRatio(rep, "cached-get", "respire", "ref-map-lookup", 0.6), p99Within(rep, "cached-get", "respire", 5000))
	}},
	{name: "Redlock over 3 servers", want: "≥ 1.3× best peer, ≤ 10 allocations a cycle", check: func(rep *report) (string, bool, bool) {
		return both(peerRatio(rep, "redlock", 1.3), allocsWithin(rep, "redlock", "respire-redlock", 10))
	}},
	{name: "fenced-lock cycle", want: "≤ 3 allocations (TryAcquire+Release)", check: func(rep *report) (string, bool, bool) {
		return allocsWithin(rep, "lock", "respire-fenced-try", 3).verdict()
	}},
	{name: "semaphore cycle", want: "≤ 3 allocations", check: func(rep *report) (string, bool, bool) {
		return allocsWithin(rep, "semaphore", "respire-semaphore", 3).verdict()
	}},
	{name: "typed commands", want: "≥ 0.95× Do in get-par and pipeline", check: func(rep *report) (string, bool, bool) {
		return both(refRatio(rep, "get-par", "respire-typed", "respire", 0.95), refRatio(rep, "pipeline", "respire-typed", "respire", 0.95))
	}},
	{name: "CPU per GET 64 → 1,024 goroutines", want: "flat (within 5%) or falling", check: func(rep *report) (string, bool, bool) {
		return sweepCPUGrowth(rep, 64, 1024, 1.05).verdict()
	}},
	{name: "Cluster parallel GET ×64", want: "≥ 1.2× best peer", cluster: true, check: func(rep *report) (string, bool, bool) {
		return peerRatio(rep, "get-par", 1.2).verdict()
	}},
	{name: "Cluster pipeline over three masters", want: "≥ 1.1× best peer", cluster: true, check: func(rep *report) (string, bool, bool) {
		return peerRatio(rep, "pipeline-spread", 1.1).verdict()
	}},
	{name: "Cluster typed commands", want: "≥ 0.95× Do in get-par and pipeline-spread", cluster: true, check: func(rep *report) (string, bool, bool) {
		return both(refRatio(rep, "get-par", "respire-typed", "respire", 0.95), refRatio(rep, "pipeline-spread", "respire-typed", "respire", 0.95))
	}},
}

// reading is one figure read off a report against its bound.
type reading struct {
	got      string
	met      bool
	measured bool
}

func (r reading) verdict() (string, bool, bool) { return r.got, r.met, r.measured }

// both joins readings: met when every one is, measured only when every one is.
func both(rs ...reading) (string, bool, bool) {
	parts := make([]string, 0, len(rs))
	met, measured := true, true
	for _, r := range rs {
		parts = append(parts, r.got)
		met = met && r.met
		measured = measured && r.measured
	}
	return strings.Join(parts, "; "), met && measured, measured
}

var notMeasured = reading{got: "not in this run"}

func scenarioOf(rep *report, name string) *scenarioResult {
	for i := range rep.Scenarios {
		if sc := &rep.Scenarios[i]; sc.Name == name && sc.Skipped == "" {
			return sc
		}
	}
	return nil
}

func rowOf(sc *scenarioResult, client string) *participantResult {
	for i := range sc.Results {
		if sc.Results[i].Client == client && sc.Results[i].Median.OpsPerSec > 0 {
			return &sc.Results[i]
		}
	}
	return nil
}

// peerRatio is the scenario's Respire / best peer ratio against min. It is measured
// only when every peer took part: a run with a -clients selection, or one where a
// peer has no figures (it failed, or was skipped), has no best peer to speak of.
func peerRatio(rep *report, scenario string, min float64) reading {
	sc := scenarioOf(rep, scenario)
	if sc == nil || sc.Ratio == nil {
		return notMeasured
	}
	if !everyClient(rep) {
		return reading{got: "not measured: -clients left peers out"}
	}
	for _, r := range sc.Results {
		if !r.Respire && !r.Reference && r.Median.OpsPerSec <= 0 {
			return reading{got: "not measured: " + r.Client + " has no figures"}
		}
	}
	return reading{got: fmtRatio(sc.Ratio.Value, min) + " " + sc.Ratio.BestPeer, met: sc.Ratio.Value >= min, measured: true}
}

// everyClient reports whether the run selected every participant (no -clients).
func everyClient(rep *report) bool {
	return slices.Equal(rep.Clients, participantNames())
}

// fmtRatio prints v to two decimals, or three where two would round it up to min
// from below, so that a missed target never prints its own bound.
func fmtRatio(v, min float64) string {
	if v < min && math.Round(v*100)/100 >= min {
		return fmt.Sprintf("%.3f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// rowIn is client's row in the run's scenario, or nil when either is missing.
func rowIn(rep *report, scenario, client string) *participantResult {
	if sc := scenarioOf(rep, scenario); sc != nil {
		return rowOf(sc, client)
	}
	return nil
}

// refRatio is client's ops/s over another row's in one scenario, against min.
func refRatio(rep *report, scenario, client, ref string, min float64) reading {
	mine, theirs := rowIn(rep, scenario, client), rowIn(rep, scenario, ref)
	if mine == nil || theirs == nil {
		return notMeasured
	}
	v := mine.Median.OpsPerSec / theirs.Median.OpsPerSec
	return reading{got: fmtRatio(v, min) + " " + ref, met: v >= min, measured: true}
}

func p99Within(rep *report, scenario, client string, maxNS float64) reading {
	r := rowIn(rep, scenario, client)
	if r == nil {
		return notMeasured
	}
	return reading{got: "p99 " + fmtNS(r.Median.P99), met: r.Median.P99 <= maxNS, measured: true}
}

func allocsWithin(rep *report, scenario, client string, max float64) reading {
	r := rowIn(rep, scenario, client)
	if r == nil || r.Median.AllocsPerOp == nil {
		return notMeasured
	}
	// Read to the table's precision: the count is the whole process's over the
	// window, so the harness's and the runtime's own few allocations add hundredths.
	a := math.Round(*r.Median.AllocsPerOp*10) / 10
	return reading{got: fmt.Sprintf("%.1f allocs/cycle", a), met: a <= max, measured: true}
}

// sweepAt returns the sweep's goroutine-axis points at n goroutines.
func sweepAt(rep *report, n int) []sweepPoint {
	var out []sweepPoint
	for _, p := range rep.Sweep {
		if p.Axis == "goroutines" && p.X == n && p.Median.OpsPerSec > 0 {
			out = append(out, p)
		}
	}
	return out
}

// sweepRatio is Respire's ops/s over the best peer's at n goroutines in the sweep,
// measured only when every sweep client has its point.
func sweepRatio(rep *report, n int, min float64) reading {
	points := sweepAt(rep, n)
	for _, c := range sweepClients {
		if !slices.ContainsFunc(points, func(p sweepPoint) bool { return p.Client == c }) {
			return reading{got: "not measured: no sweep point of " + c}
		}
	}
	var mine, best float64
	bestName := ""
	for _, p := range points {
		switch {
		case p.Respire:
			mine = p.Median.OpsPerSec
		case p.Median.OpsPerSec > best:
			best, bestName = p.Median.OpsPerSec, p.Client
		}
	}
	if mine == 0 || best == 0 {
		return notMeasured
	}
	v := mine / best
	return reading{got: fmtRatio(v, min) + " " + bestName, met: v >= min, measured: true}
}

// sweepCPUGrowth is Respire's client CPU per GET at to goroutines over that at from.
func sweepCPUGrowth(rep *report, from, to int, max float64) reading {
	cpu := func(n int) float64 {
		for _, p := range sweepAt(rep, n) {
			if p.Respire && p.Median.CPUPerOp != nil {
				return *p.Median.CPUPerOp
			}
		}
		return math.NaN()
	}
	a, b := cpu(from), cpu(to)
	if math.IsNaN(a) || math.IsNaN(b) || a <= 0 {
		return notMeasured
	}
	v := b / a
	return reading{got: fmt.Sprintf("%s → %s (%.2f×)", fmtNS(a), fmtNS(b), v), met: v <= max, measured: true}
}

// hasDelex reports whether a server of version v (INFO's redis_version) has DELEX,
// which Redis added in 8.4.
func hasDelex(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 8 || major == 8 && minor >= 4
}

// checkTargets reads every goal of the run's kind (one server, one with DELEX, or a
// cluster) off rep.
func checkTargets(rep *report) []targetResult {
	var out []targetResult
	for _, g := range goals {
		delex := hasDelex(rep.Server.Version)
		switch {
		case g.cluster != rep.Server.Cluster, g.lua && delex:
			continue
		case g.delex && !delex:
			// Listed, so that a run on an older Redis 8 does not drop it silently.
			out = append(out, targetResult{Name: g.name, Want: g.want, Got: "not measured: the server has no DELEX"})
			continue
		}
		got, met, measured := g.check(rep)
		out = append(out, targetResult{Name: g.name, Want: g.want, Got: got, Met: met && measured, Measured: measured})
	}
	return out
}

// writeTargets prints the verdict of every target of the run's kind.
func writeTargets(w io.Writer, targets []targetResult) {
	if len(targets) == 0 {
		return
	}
	fmt.Fprintln(w, "\ntargets (issue #28), read off this run:")
	met, measured := 0, 0
	var unmeasured []string
	for _, t := range targets {
		if !t.Measured {
			unmeasured = append(unmeasured, t.Name)
			continue
		}
		measured++
		mark := "missed"
		if t.Met {
			mark = "met"
			met++
		}
		fmt.Fprintf(w, "   %-6s %s: want %s; got %s\n", mark, t.Name, t.Want, t.Got)
	}
	fmt.Fprintf(w, "   %d of %d measured targets met\n", met, measured)
	if len(unmeasured) > 0 {
		fmt.Fprintf(w, "   not measured in this run (their scenarios or the sweep left out): %s\n", strings.Join(unmeasured, ", "))
	}
}
