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

// TestSmoke runs the whole command with -quick against its embedded server for one data,
// one lock and the cache scenario and checks that the JSON has every figure of every
// participant.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs redis-server and every client for a few seconds")
	}
	for _, bin := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed: %s", bin, installHint)
		}
	}
	chartPath := filepath.Join(t.TempDir(), "out.png")
	rep, stdout := runReport(t, "-quick", "-scenarios", "get-seq,lock-contended,cached-get", "-chart", chartPath)
	if st, err := os.Stat(chartPath); err != nil || st.Size() == 0 {
		t.Errorf("chart: %v", err)
	}

	var lockNames, cachedNames []string
	for _, c := range clientSpecs {
		if c.openCached != nil {
			cachedNames = append(cachedNames, c.name)
		}
	}
	dataNames := append(dataRows("get-seq"), referenceName)
	cachedNames = append(cachedNames, mapLimitSpec.name)
	for _, l := range lockerSpecs() {
		if !l.reference { // the reference rows sit out contention
			lockNames = append(lockNames, l.name)
		}
	}
	checkRows(t, rep, map[string][]string{"get-seq": dataNames, "lock-contended": lockNames, "cached-get": cachedNames})
	for _, sc := range rep.Scenarios {
		for _, r := range sc.Results {
			if len(r.Rounds) != rep.Rounds {
				t.Errorf("%s/%s: %d rounds, want %d", sc.Name, r.Client, len(r.Rounds), rep.Rounds)
			}
			for i, f := range r.Rounds {
				checkFigures(t, fmt.Sprintf("%s/%s round %d", sc.Name, r.Client, i+1), sc.Name, f, r.Reference)
			}
		}
		if (sc.Name == "get-seq" || sc.Name == "cached-get") && (sc.Ratio == nil || sc.Ratio.Value <= 0) {
			t.Errorf("%s: no ratio of Respire to the best peer: %+v", sc.Name, sc.Ratio)
		}
	}
	if !strings.Contains(stdout, "== lock-contended") {
		t.Errorf("table lacks lock-contended:\n%s", stdout)
	}
}

// TestTypedRowsSmoke runs the scenarios that have a respire-typed row beside the plain
// respire one, and get-seq, which has none, one short round each (about a second, so
// under -short too): every typed row has to run without an error, the pipeline of keys
// spread over the slots included.
func TestTypedRowsSmoke(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: %s", installHint)
	}
	clients := []string{"respire", "respire-typed"}
	rep, _ := runReport(t, "-quick", "-rounds", "1", "-clients", strings.Join(clients, ","),
		"-scenarios", "get-seq,get-par,pipeline,pipeline-spread")
	checkRows(t, rep, map[string][]string{"get-seq": {"respire"}, "get-par": clients, "pipeline": clients, "pipeline-spread": clients})
}

// checkRows fails unless the report has the scenarios of want, each with the
// participants want lists in that order and every median figure of each.
func checkRows(t *testing.T, rep report, want map[string][]string) {
	t.Helper()
	if len(rep.Scenarios) != len(want) {
		t.Fatalf("%d scenarios in the JSON, want %d", len(rep.Scenarios), len(want))
	}
	for _, sc := range rep.Scenarios {
		var got []string
		for _, r := range sc.Results {
			got = append(got, r.Client)
			checkFigures(t, sc.Name+"/"+r.Client, sc.Name, r.Median, r.Reference)
		}
		if !slices.Equal(got, want[sc.Name]) {
			t.Errorf("%s: participants %v, want %v", sc.Name, got, want[sc.Name])
		}
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

// dataRows lists the client configurations that run the data scenario named, in the
// order they are reported.
func dataRows(name string) []string {
	sc := scenarios[slices.IndexFunc(scenarios, func(s *scenario) bool { return s.name == name })]
	var out []string
	for _, c := range clientSpecs {
		if c.open != nil && c.takesPart(sc) {
			out = append(out, c.name)
		}
	}
	return out
}

// runReport runs the command with args and a JSON report, fails the test unless it
// exits cleanly, and returns the report and the table it printed.
func runReport(t *testing.T, args ...string) (report, string) {
	t.Helper()
	jsonPath := filepath.Join(t.TempDir(), "out.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(args, "-json", jsonPath), &stdout, &stderr)
	if code != exitOK {
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
	return rep, stdout.String()
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

// TestClusterSmoke runs every participant of one data, one lock and the cache scenario
// with -cluster against the cluster respbench starts itself.
func TestClusterSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node cluster and every client for a few seconds")
	}
	rep, stdout := runReport(t, "-cluster", "-quick", "-rounds", "1", "-scenarios", "get-par,lock,cached-get")
	if !rep.Server.Cluster || len(splitAddrs(rep.Server.Addr)) != clusterMasters {
		t.Fatalf("server %+v: want the three seeds of a cluster", rep.Server)
	}
	for _, sc := range rep.Scenarios {
		if len(sc.Results) == 0 {
			t.Errorf("%s: no participant ran (%s)", sc.Name, sc.Skipped)
		}
		for _, r := range sc.Results {
			checkFigures(t, sc.Name+"/"+r.Client, sc.Name, r.Median, r.Reference)
		}
	}
	if !strings.Contains(stdout, "cluster 127.0.0.1:") {
		t.Errorf("the table does not say it measured a cluster:\n%s", stdout)
	}
}

// TestCoordinationSmoke runs the semaphore and redlock scenarios, one short round each,
// as -short (make test) does too: they are the only scenarios that start servers of
// their own, so a broken start or stop shows here rather than in a full run. It checks
// every participant's figures, that the semaphore's permits overlapped without ever
// exceeding its capacity, and that the table says why the semaphore has no peer.
func TestCoordinationSmoke(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed: %s", installHint)
	}
	rep, stdout := runReport(t, "-quick", "-rounds", "1", "-scenarios", "semaphore,redlock")
	var semNames, redlockNames []string
	for _, s := range semaphoreSpecs {
		semNames = append(semNames, s.name)
	}
	for _, l := range redlockSpecs {
		redlockNames = append(redlockNames, l.name)
	}
	checkRows(t, rep, map[string][]string{"semaphore": semNames, "redlock": redlockNames})
	for _, sc := range rep.Scenarios {
		if sc.Name != "semaphore" {
			continue
		}
		for _, r := range sc.Results {
			m := r.Median
			switch {
			case m.Acquisitions == nil || *m.Acquisitions <= 0 || m.AcquisitionsPerSec == nil || *m.AcquisitionsPerSec > m.OpsPerSec:
				t.Errorf("%s: acquisitions %v (%v/s) of %v cycles/s", r.Client, m.Acquisitions, m.AcquisitionsPerSec, m.OpsPerSec)
			case m.OverCapacity == nil || *m.OverCapacity != 0:
				t.Errorf("%s: %v acquisitions over capacity, want 0", r.Client, m.OverCapacity)
			case m.MaxOccupancy == nil || *m.MaxOccupancy < 1 || *m.MaxOccupancy > int64(sc.Capacity):
				t.Errorf("%s: at most %v permits held, want 1 to %d", r.Client, m.MaxOccupancy, sc.Capacity)
			}
		}
	}
	if sc := rep.Scenarios[1]; sc.Name != "redlock" || sc.Ratio == nil || sc.Ratio.Value <= 0 {
		t.Errorf("redlock: no ratio of Respire to the best peer: %+v", sc)
	}
	if !strings.Contains(stdout, "no peer: no Go library offers a Redis semaphore") {
		t.Errorf("the table does not say why the semaphore has no peer:\n%s", stdout)
	}
}
