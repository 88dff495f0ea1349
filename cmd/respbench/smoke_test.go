package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The main job's tests run every scenario with every participant, then the sweep and
// the memory figures, for -quick's short windows and one round, against servers
// respbench starts itself. They are not skipped by -short: make test runs them, so the
// main job (make bench) cannot break without a test failing.

// TestMainJob runs what make bench runs, with the Makefile's flags (its output files in
// a temporary directory), and checks every figure of every participant of every
// scenario, the sweep, the memory figures and the files written.
func TestMainJob(t *testing.T) {
	for _, bin := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: %s", bin, installHint)
		}
	}
	dir := t.TempDir()
	out := func(name string) string { return filepath.Join(dir, name) }
	// The flags of the Makefile's bench target, then BENCHFLAGS.
	args := []string{"-sweep", "-memory", "-json", out("respbench.json"), "-table", out("respbench.txt"),
		"-chart", out("respbench.png"), "-sweep-chart", out("respbench-sweep.png"),
		"-quick", "-rounds", "1"}
	rep, stdout := runReport(t, args, out("respbench.json"))
	for _, name := range []string{"respbench.png", "respbench-sweep.png"} {
		if st, err := os.Stat(out(name)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	if table, err := os.ReadFile(out("respbench.txt")); err != nil || !bytes.Equal(table, stdout) {
		t.Errorf("the table file differs from what was printed (%v)", err)
	}
	checkScenarios(t, rep, false)
	for _, sc := range rep.Scenarios {
		if (sc.Name == "get-seq" || sc.Name == "cached-get" || sc.Name == "redlock") && (sc.Ratio == nil || sc.Ratio.Value <= 0) {
			t.Errorf("%s: no ratio of Respire to the best peer: %+v", sc.Name, sc.Ratio)
		}
	}
	// Every target of a run on one server is read off make bench's own run: a
	// scenario or row renamed without its target would leave it unmeasured.
	if len(rep.Targets) == 0 {
		t.Error("the report has no targets")
	}
	for _, tr := range rep.Targets {
		// The DELEX target is for the Redis 8 run; this one is on the PATH's server.
		if !tr.Measured && !(strings.Contains(tr.Name, "DELEX") && !hasDelex(rep.Server.Version)) {
			t.Errorf("target %q is not measured by make bench: %s", tr.Name, tr.Got)
		}
	}
	for _, want := range []string{"== lock-contended", "no peer: no Go library offers a Redis semaphore", "targets (issue #28), read off this run:"} {
		if !bytes.Contains(stdout, []byte(want)) {
			t.Errorf("the table lacks %q:\n%s", want, stdout)
		}
	}

	if want := (len(sweepGoroutines) + len(sweepSizes)) * len(sweepClients); len(rep.Sweep) != want {
		t.Errorf("%d sweep points, want %d", len(rep.Sweep), want)
	}
	for _, p := range rep.Sweep {
		if f := p.Median; f.Errors != 0 || f.OpsPerSec <= 0 || f.CPUPerOp == nil {
			t.Errorf("sweep %s=%d %s: %+v", p.Axis, p.X, p.Client, f)
		}
	}
	var memNames []string
	for _, m := range rep.Memory {
		memNames = append(memNames, m.Client)
		if m.Conns <= 0 {
			t.Errorf("memory %s: %d connections counted", m.Client, m.Conns)
		}
	}
	if !slices.Equal(memNames, memoryClients) {
		t.Errorf("memory figures of %v, want %v", memNames, memoryClients)
	}
}

// TestMainJobCluster runs every scenario with every participant in its cluster mode
// against the three-master cluster respbench starts itself.
func TestMainJobCluster(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: %s", installHint)
	}
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	rep, stdout := runReport(t, []string{"-cluster", "-quick", "-rounds", "1", "-json", jsonPath}, jsonPath)
	if !rep.Server.Cluster || len(splitAddrs(rep.Server.Addr)) != clusterMasters {
		t.Fatalf("server %+v: want the three seeds of a cluster", rep.Server)
	}
	checkScenarios(t, rep, true)
	if len(rep.Targets) == 0 {
		t.Error("the cluster report has no targets")
	}
	for _, tr := range rep.Targets {
		if !tr.Measured {
			t.Errorf("cluster target %q is not measured: %s", tr.Name, tr.Got)
		}
	}
	if !bytes.Contains(stdout, []byte("cluster 127.0.0.1:")) {
		t.Errorf("the table does not say it measured a cluster:\n%s", stdout)
	}
}

// runReport runs the command with args, which write the JSON report to jsonPath, and
// returns the report and the printed table.
func runReport(t *testing.T, args []string, jsonPath string) (report, []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, stdout.Bytes()
}

// checkScenarios fails unless rep has every scenario, each with every participant that
// takes part in it on this kind of server, every one with all its figures, and the
// semaphore within its capacity.
func checkScenarios(t *testing.T, rep report, cluster bool) {
	t.Helper()
	var got []string
	for _, sc := range rep.Scenarios {
		got = append(got, sc.Name)
	}
	if !slices.Equal(got, scenarioNames()) {
		t.Fatalf("scenarios %v, want %v", got, scenarioNames())
	}
	for i, sc := range rep.Scenarios {
		var names []string
		for _, r := range sc.Results {
			names = append(names, r.Client)
			if len(r.Rounds) != rep.Rounds {
				t.Errorf("%s/%s: %d rounds, want %d", sc.Name, r.Client, len(r.Rounds), rep.Rounds)
			}
			for j, f := range r.Rounds {
				checkFigures(t, fmt.Sprintf("%s/%s round %d", sc.Name, r.Client, j+1), sc.Name, f, r.Reference)
			}
			checkFigures(t, sc.Name+"/"+r.Client+" median", sc.Name, r.Median, r.Reference)
			if sc.Name == "semaphore" {
				checkSemaphore(t, r, sc.Capacity)
			}
		}
		if want := participantNamesOf(scenarios[i], cluster); !slices.Equal(names, want) {
			t.Errorf("%s: participants %v, want %v", sc.Name, names, want)
		}
	}
}

// participantNamesOf returns who takes part in sc, in the order they are reported.
func participantNamesOf(sc *scenario, cluster bool) []string {
	var out []string
	switch sc.kind {
	case kindData:
		for _, c := range clientSpecs {
			if c.takesPart(sc) {
				out = append(out, c.name)
			}
		}
		// redis-benchmark is the reference on one server, not on a cluster.
		if sc.benchArgs != nil && !cluster {
			out = append(out, referenceName)
		}
	case kindLock:
		for _, l := range lockerSpecs() {
			if (!l.reference || sc.limits) && l.takesPart(sc) {
				out = append(out, l.name)
			}
		}
	case kindCache:
		for _, c := range clientSpecs {
			if c.openCached != nil && !(cluster && c.cacheNotOnCluster) {
				out = append(out, c.name)
			}
		}
		out = append(out, mapLimitSpec.name)
	case kindSemaphore:
		for _, s := range semaphoreSpecs {
			out = append(out, s.name)
		}
	case kindRedlock:
		for _, l := range redlockSpecs {
			out = append(out, l.name)
		}
	}
	return out
}

// checkFigures fails unless f has every figure its participant reports.
func checkFigures(t *testing.T, where, scenario string, f figures, reference bool) {
	t.Helper()
	if f.Errors != 0 {
		t.Errorf("%s: %d errors, first: %s", where, f.Errors, f.FirstError)
	}
	if f.OpsPerSec <= 0 || f.Ops <= 0 || f.Seconds <= 0 || f.P50 <= 0 || f.P99 < f.P50 {
		t.Errorf("%s: figures missing: %+v", where, f)
	}
	if reference {
		return
	}
	if f.P999 == nil || *f.P999 < f.P99 || f.AllocsPerOp == nil || f.BytesPerOp == nil || f.CPUPerOp == nil || *f.CPUPerOp <= 0 {
		t.Errorf("%s: client-side figures missing: %+v", where, f)
	}
	if scenario == "lock-contended" && (f.Overlaps == nil || *f.Overlaps != 0) {
		t.Errorf("%s: overlaps = %v, want 0", where, f.Overlaps)
	}
}

// checkSemaphore fails unless the semaphore's permits were taken and never held beyond
// its capacity.
func checkSemaphore(t *testing.T, r participantResult, capacity int) {
	t.Helper()
	m := r.Median
	switch {
	case m.Acquisitions == nil || *m.Acquisitions <= 0 || m.AcquisitionsPerSec == nil || *m.AcquisitionsPerSec > m.OpsPerSec:
		t.Errorf("semaphore/%s: acquisitions %v (%v/s) of %v cycles/s", r.Client, m.Acquisitions, m.AcquisitionsPerSec, m.OpsPerSec)
	case m.OverCapacity == nil || *m.OverCapacity != 0:
		t.Errorf("semaphore/%s: %v acquisitions over capacity, want 0", r.Client, m.OverCapacity)
	case m.MaxOccupancy == nil || *m.MaxOccupancy < 1 || *m.MaxOccupancy > int64(capacity):
		t.Errorf("semaphore/%s: at most %v permits held, want 1 to %d", r.Client, m.MaxOccupancy, capacity)
	}
}

// TestClientScenarios checks that the scenarios a client configuration is limited to
// are data scenarios: a misspelt name would silently drop its row.
func TestClientScenarios(t *testing.T) {
	for _, c := range clientSpecs {
		for _, name := range c.scenarios {
			i := slices.IndexFunc(scenarios, func(s *scenario) bool { return s.name == name })
			if i < 0 || scenarios[i].kind != kindData {
				t.Errorf("%s: %q is not a data scenario", c.name, name)
			}
		}
	}
}
