package main

import (
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
	chartPath, tablePath := filepath.Join(dir, "sweep.png"), filepath.Join(dir, "table.txt")
	rep, stdout := runReport(t, "-quick", "-scenarios", "get-seq", "-clients", "respire", "-sweep", "-memory",
		"-sweep-chart", chartPath, "-table", tablePath)
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
	if err != nil || string(table) != stdout {
		t.Errorf("table file differs from what was printed (%v)", err)
	}
}
