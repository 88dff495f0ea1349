package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// row is a participant with the given median ops/s, for building reports.
func row(client string, respire, reference bool, ops float64) participantResult {
	return participantResult{Client: client, Respire: respire, Reference: reference, Median: figures{OpsPerSec: ops}}
}

func targetNamed(t *testing.T, targets []targetResult, name string) targetResult {
	t.Helper()
	for _, tr := range targets {
		if tr.Name == name {
			return tr
		}
	}
	t.Fatalf("no target %q in %+v", name, targets)
	return targetResult{}
}

func TestCheckTargets(t *testing.T) {
	getPar := scenarioResult{Name: "get-par", Results: []participantResult{
		row("respire", true, false, 130), row("respire-typed", true, false, 120), row("rueidis", false, false, 100),
	}}
	getPar.Ratio = respireRatio(getPar.Results)
	setPar := scenarioResult{Name: "set-par", Results: []participantResult{row("respire", true, false, 129), row("rueidis", false, false, 100)}}
	setPar.Ratio = respireRatio(setPar.Results)
	seq := scenarioResult{Name: "get-seq", Results: []participantResult{
		row("respire", true, false, 300), row("go-redis", false, false, 100), row("redis-benchmark", false, true, 200),
	}}
	seq.Ratio = respireRatio(seq.Results)
	redlock := scenarioResult{Name: "redlock", Results: []participantResult{
		{Client: "respire-redlock", Respire: true, Median: figures{OpsPerSec: 140, AllocsPerOp: ptr(6.0)}},
		row("redsync-rueidis-3", false, false, 100),
	}}
	redlock.Ratio = respireRatio(redlock.Results)
	skipped := scenarioResult{Name: "pipeline", Skipped: "not on this server"}
	// The process-wide count adds hundredths: read to the table's one decimal.
	lockRows := scenarioResult{Name: "lock", Results: []participantResult{
		{Client: "respire-fenced-try", Respire: true, Median: figures{OpsPerSec: 10, AllocsPerOp: ptr(3.04)}},
	}}
	sem := scenarioResult{Name: "semaphore", Results: []participantResult{
		{Client: "respire-semaphore", Respire: true, Median: figures{OpsPerSec: 10, AllocsPerOp: ptr(3.06)}},
	}}
	rep := &report{
		Clients:   participantNames(),
		Scenarios: []scenarioResult{getPar, setPar, seq, redlock, skipped, lockRows, sem},
		Sweep: []sweepPoint{
			{Axis: "goroutines", X: 64, Client: "respire", Respire: true, Median: figures{OpsPerSec: 100, CPUPerOp: ptr(2000.0)}},
			{Axis: "goroutines", X: 1024, Client: "respire", Respire: true, Median: figures{OpsPerSec: 140, CPUPerOp: ptr(2200.0)}},
			{Axis: "goroutines", X: 1024, Client: "rueidis", Median: figures{OpsPerSec: 100}},
			{Axis: "goroutines", X: 1024, Client: "go-redis-autopipe", Median: figures{OpsPerSec: 120}},
			{Axis: "goroutines", X: 1024, Client: "rueidis-flush20us", Median: figures{OpsPerSec: 110}},
		},
	}
	targets := checkTargets(rep)
	for _, tc := range []struct {
		name          string
		met, measured bool
		got           string
	}{
		{"parallel GET ×64", true, true, "1.30× rueidis"},
		{"parallel SET 1 KiB ×64", false, true, "1.29× rueidis"},
		// 3× the best peer but only 1.5× redis-benchmark: both are asked.
		{"sequential GET", false, true, "3.00× go-redis; 1.50× redis-benchmark"},
		{"Redlock over 3 servers", true, true, "1.40× redsync-rueidis-3; 6.0 allocs/cycle"},
		{"parallel GET ×1,024", false, true, "1.17× go-redis-autopipe"},
		{"CPU per GET 64 → 1,024 goroutines", false, true, "2.00µs → 2.20µs (1.10×)"},
		// Typed get-par is 0.92× Do, and the pipeline rows are missing.
		{"typed commands", false, false, "0.92× respire; not in this run"},
		{"pipeline of 100 GETs", false, false, "not in this run; not in this run"},
		{"fenced-lock cycle", true, true, "3.0 allocs/cycle"},
		{"semaphore cycle", false, true, "3.1 allocs/cycle"},
		{"cached GET ×64", false, false, "not in this run; not in this run; not in this run"},
	} {
		got := targetNamed(t, targets, tc.name)
		if got.Met != tc.met || got.Measured != tc.measured || got.Got != tc.got {
			t.Errorf("%s: met %v measured %v got %q, want %v %v %q", tc.name, got.Met, got.Measured, got.Got, tc.met, tc.measured, tc.got)
		}
	}
	for _, tr := range targets {
		if strings.HasPrefix(tr.Name, "Cluster") {
			t.Errorf("a run on one server reports the target %q", tr.Name)
		}
	}
	// A server without DELEX lists the DELEX target as not measured, and judges the
	// Lua one; one with DELEX the other way round.
	if got := targetNamed(t, targets, "lock acquire+release ×16 with DELEX"); got.Measured || got.Met {
		t.Errorf("DELEX target on a server without DELEX: %+v", got)
	}
	rep.Server.Version = "8.6.3"
	for _, tr := range checkTargets(rep) {
		if strings.Contains(tr.Name, "Lua") {
			t.Errorf("a run on Redis 8.6 reports the target %q", tr.Name)
		}
	}
	targetNamed(t, checkTargets(rep), "lock acquire+release ×16 with DELEX")
	rep.Server.Version = ""
	for v, want := range map[string]bool{"8.4.0": true, "8.2.1": false, "9.0.0": true, "7.2.4": false, "": false} {
		if hasDelex(v) != want {
			t.Errorf("hasDelex(%q) = %v", v, !want)
		}
	}

	// A ratio read off a run without every peer is no ratio to the best peer.
	rep.Clients = []string{"respire", "go-redis"}
	if got := targetNamed(t, checkTargets(rep), "parallel GET ×64"); got.Measured || got.Met {
		t.Errorf("get-par with a -clients selection: %+v", got)
	}
	rep.Clients = participantNames()
	failed := getPar
	failed.Results = append(slices.Clone(getPar.Results), row("go-redis", false, false, 0))
	rep.Scenarios[0] = failed
	if got := targetNamed(t, checkTargets(rep), "parallel GET ×64"); got.Measured || !strings.Contains(got.Got, "go-redis has no figures") {
		t.Errorf("get-par with a peer without figures: %+v", got)
	}
	rep.Scenarios[0] = getPar
	sweep := rep.Sweep
	rep.Sweep = sweep[:len(sweep)-1] // no rueidis-flush20us point
	if got := targetNamed(t, checkTargets(rep), "parallel GET ×1,024"); got.Measured {
		t.Errorf("the 1,024 point without one of the sweep's peers: %+v", got)
	}
	rep.Sweep = sweep
	for v, want := range map[float64]string{1.295: "1.295×", 1.3: "1.30×", 1.2: "1.20×", 1.31: "1.31×"} {
		if got := fmtRatio(v, 1.3); got != want {
			t.Errorf("fmtRatio(%v, 1.3) = %q, want %q", v, got, want)
		}
	}

	rep.Server.Cluster = true
	clusterTargets := checkTargets(rep)
	if got := targetNamed(t, clusterTargets, "Cluster parallel GET ×64"); !got.Met || !got.Measured {
		t.Errorf("cluster get-par at 1.30× against a 1.2× target: %+v", got)
	}
	if got := targetNamed(t, clusterTargets, "Cluster pipeline over three masters"); got.Met || got.Measured {
		t.Errorf("cluster pipeline-spread, not in the run: %+v", got)
	}
	for _, tr := range clusterTargets {
		if tr.Name == "parallel GET ×64" {
			t.Errorf("a cluster run reports the standalone target %q", tr.Name)
		}
	}

	var b bytes.Buffer
	writeTargets(&b, targets)
	out := b.String()
	for _, want := range []string{
		"   met    parallel GET ×64: want ≥ 1.3× best peer; got 1.30× rueidis\n",
		"   missed parallel SET 1 KiB ×64:",
		"not measured in this run (their scenarios or the sweep left out): ",
		"pipeline of 100 GETs, ",
		"measured targets met",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("targets table lacks %q:\n%s", want, out)
		}
	}
}
