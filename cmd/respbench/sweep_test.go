package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestSweepAndMemory runs -sweep and -memory for Respire alone and checks that every
// point and the memory figures are in the JSON, the table file and the chart.
func TestSweepAndMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs redis-server for a few seconds")
	}
	dir := t.TempDir()
	jsonPath, chartPath, tablePath := filepath.Join(dir, "out.json"), filepath.Join(dir, "sweep.png"), filepath.Join(dir, "table.txt")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-quick", "-scenarios", "get-seq", "-clients", "respire", "-sweep", "-memory",
		"-json", jsonPath, "-sweep-chart", chartPath, "-table", tablePath}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if want := len(sweepGoroutines) + len(sweepSizes); len(rep.Sweep) != want {
		t.Errorf("%d sweep points, want %d", len(rep.Sweep), want)
	}
	for _, p := range rep.Sweep {
		if p.Median.OpsPerSec <= 0 || p.Median.CPUPerOp == nil || p.Median.Errors > 0 {
			t.Errorf("sweep point %+v", p)
		}
	}
	if len(rep.Memory) != 1 || rep.Memory[0].Client != "respire" || rep.Memory[0].Conns < 1 {
		t.Errorf("memory figures %+v", rep.Memory)
	}
	if st, err := os.Stat(chartPath); err != nil || st.Size() == 0 {
		t.Errorf("sweep chart: %v", err)
	}
	table, err := os.ReadFile(tablePath)
	if err != nil || !bytes.Equal(table, stdout.Bytes()) {
		t.Errorf("table file differs from what was printed (%v)", err)
	}
}
