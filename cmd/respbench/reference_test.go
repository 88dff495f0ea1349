package main

import (
	"math"
	"testing"
	"time"
)

func TestParseBenchmarkCSV(t *testing.T) {
	out := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"GET","27359.78","0.026","0.008","0.023","0.055","0.087","5.103"
`)
	f, err := parseBenchmarkCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.OpsPerSec != 27359.78 || f.P50 != 23000 || f.P99 != 87000 {
		t.Errorf("figures = %+v, want 27359.78 ops/s, p50 23µs, p99 87µs", f)
	}
	if f.P999 != nil || f.AllocsPerOp != nil || f.CPUPerOp != nil {
		t.Errorf("client-side figures present for the reference: %+v", f)
	}
	for _, bad := range []string{"", `"test","rps"` + "\n", `"test","x"` + "\n" + `"GET","1"` + "\n", `"test","rps"` + "\n" + `"GET","fast"` + "\n"} {
		if _, err := parseBenchmarkCSV([]byte(bad)); err == nil {
			t.Errorf("parseBenchmarkCSV(%q) succeeded", bad)
		}
	}
}

func TestReferencePipelineDepth(t *testing.T) {
	for _, sc := range scenarios {
		if sc.benchArgs == nil {
			continue
		}
		r := &referenceRunner{args: sc.benchArgs}
		want := 1
		if sc.name == "pipeline" {
			want = pipelineDepth
		}
		if got := r.pipelineDepth(); got != want {
			t.Errorf("%s: -P %d, want %d", sc.name, got, want)
		}
	}
}

func TestLittleRate(t *testing.T) {
	for _, tc := range []struct {
		clients, depth int
		p50            time.Duration
		want           float64
	}{
		{1, 1, 100 * time.Microsecond, 10_000},
		{64, 1, time.Millisecond, 64_000},
		{1, 100, 50 * time.Microsecond, 2_000_000},
		{1, 1, 0, 0},
	} {
		if got := littleRate(tc.clients, tc.depth, tc.p50); math.Abs(got-tc.want) > 1e-6*tc.want {
			t.Errorf("littleRate(%d, %d, %v) = %v, want %v", tc.clients, tc.depth, tc.p50, got, tc.want)
		}
	}
}
