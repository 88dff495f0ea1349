package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 1000, 20}, 20}, // one outlier round does not move it
	} {
		in := slices.Clone(tc.in)
		if got := median(in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered its argument: %v", in)
		}
	}
}

func TestMedianFigures(t *testing.T) {
	rounds := []figures{
		{OpsPerSec: 100, Ops: 300, P50: 10, P99: 50, P999: ptr(90.0), AllocsPerOp: ptr(1.0), Errors: 1, FirstError: "boom", Overlaps: ptr(int64(0))},
		{OpsPerSec: 300, Ops: 900, P50: 30, P99: 70, P999: ptr(99.0), AllocsPerOp: ptr(3.0), Overlaps: ptr(int64(2))},
		{OpsPerSec: 200, Ops: 600, P50: 20, P99: 60, AllocsPerOp: ptr(2.0), Errors: 2, Overlaps: ptr(int64(1))},
	}
	m := medianFigures(rounds)
	if m.OpsPerSec != 200 || m.Ops != 600 || m.P50 != 20 || m.P99 != 60 {
		t.Errorf("medians = %+v, want ops/s 200, ops 600, p50 20, p99 60", m)
	}
	if m.P999 == nil || *m.P999 != 94.5 {
		t.Errorf("p99.9 median over the rounds that have one = %v, want 94.5", m.P999)
	}
	if m.AllocsPerOp == nil || *m.AllocsPerOp != 2 {
		t.Errorf("allocs/op = %v, want 2", m.AllocsPerOp)
	}
	if m.BytesPerOp != nil || m.CPUPerOp != nil {
		t.Errorf("figures no round has are present: bytes %v, cpu %v", m.BytesPerOp, m.CPUPerOp)
	}
	if m.Errors != 3 || m.FirstError != "boom" {
		t.Errorf("errors = %d %q, want the total 3 and the first error", m.Errors, m.FirstError)
	}
	if m.Overlaps == nil || *m.Overlaps != 3 {
		t.Errorf("overlaps = %v, want the total 3", m.Overlaps)
	}
}

// TestMedianSemaphoreFigures checks the semaphore's own figures over rounds: medians
// of the acquisitions, the highest occupancy, and the total over capacity, so one bad
// round is not hidden by two good ones.
func TestMedianSemaphoreFigures(t *testing.T) {
	rounds := []figures{
		{Acquisitions: ptr(int64(10)), AcquisitionsPerSec: ptr(100.0), MaxOccupancy: ptr(int64(3)), OverCapacity: ptr(int64(0))},
		{Acquisitions: ptr(int64(30)), AcquisitionsPerSec: ptr(300.0), MaxOccupancy: ptr(int64(5)), OverCapacity: ptr(int64(1))},
		{Acquisitions: ptr(int64(20)), AcquisitionsPerSec: ptr(200.0), MaxOccupancy: ptr(int64(4)), OverCapacity: ptr(int64(0))},
	}
	m := medianFigures(rounds)
	if m.Acquisitions == nil || *m.Acquisitions != 20 || m.AcquisitionsPerSec == nil || *m.AcquisitionsPerSec != 200 {
		t.Errorf("acquisitions = %v (%v/s), want the medians 20 (200/s)", m.Acquisitions, m.AcquisitionsPerSec)
	}
	if m.MaxOccupancy == nil || *m.MaxOccupancy != 5 {
		t.Errorf("max occupancy = %v, want the highest 5", m.MaxOccupancy)
	}
	if m.OverCapacity == nil || *m.OverCapacity != 1 {
		t.Errorf("over capacity = %v, want the total 1", m.OverCapacity)
	}
	if m := medianFigures([]figures{{OpsPerSec: 1}}); m.Acquisitions != nil || m.MaxOccupancy != nil || m.OverCapacity != nil {
		t.Errorf("semaphore figures on a run without them: %+v", m)
	}
}

func TestRespireRatio(t *testing.T) {
	res := func(name string, ops float64) participantResult {
		return participantResult{Client: name, Respire: name == "respire", Reference: name == referenceName, Median: figures{OpsPerSec: ops}}
	}
	r := respireRatio([]participantResult{
		res("respire", 150), res("go-redis", 100), res("rueidis", 120), res(referenceName, 1000),
	})
	if r == nil || r.BestPeer != "rueidis" || r.Value != 1.25 {
		t.Errorf("ratio = %+v, want 1.25 against rueidis (the reference is no peer)", r)
	}
	if r := respireRatio([]participantResult{res("go-redis", 100), res("rueidis", 120)}); r != nil {
		t.Errorf("ratio without Respire = %+v, want none", r)
	}
	if r := respireRatio([]participantResult{res("respire", 100), res(referenceName, 120)}); r != nil {
		t.Errorf("ratio without a peer = %+v, want none", r)
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtRate(0), "0"},
		{fmtRate(950), "950"},
		{fmtRate(25_340), "25.3k"},
		{fmtRate(1_934_000), "1.93M"},
		{fmtNS(850), "850ns"},
		{fmtNS(38_120), "38.1µs"},
		{fmtNS(1_204_000), "1.20ms"},
		{fmtNS(2.5e9), "2.50s"},
		{fmtOptNS(nil), "-"},
		{fmtAxisRate(0), "0"},
		{fmtAxisRate(2500), "2.5k"},
		{fmtAxisRate(250_000), "250k"},
		{fmtAxisRate(1_200_000), "1.2M"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	rep := &report{Rounds: 3, Duration: "1s", Warmup: "100ms", Scenarios: []scenarioResult{
		{Name: "get-seq", Kind: "data", Title: "t", Latency: "per GET", Results: []participantResult{
			{Client: "respire", Respire: true, Median: figures{OpsPerSec: 2000, AllocsPerOp: ptr(1.0)}},
			{Client: referenceName, Reference: true, Median: figures{OpsPerSec: 3000}},
		}},
		{Name: "lock", Kind: "lock", Results: []participantResult{{Client: "redislock", Median: figures{OpsPerSec: 10, Errors: 2, FirstError: "x"}}}},
		{Name: "cached-get", Kind: "cache", Skipped: "no selected client takes part"},
	}}
	var b bytes.Buffer
	writeTable(&b, rep)
	out := b.String()
	for _, want := range []string{
		"redis-benchmark (ref)", "2.00k", "n/a (Respire or every peer is missing from this run)",
		"redislock: 2 errors, first: x", "skipped: no selected client takes part",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
