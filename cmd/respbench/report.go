package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// figures are what one participant measured in one run, or the medians over rounds.
// Latencies are in nanoseconds. The pointer fields are absent where they do not apply:
// redis-benchmark reports neither p99.9 nor anything about the client process.
type figures struct {
	OpsPerSec   float64  `json:"ops_per_sec"`
	Ops         int64    `json:"ops"`
	Seconds     float64  `json:"seconds"`
	P50         float64  `json:"p50_ns"`
	P99         float64  `json:"p99_ns"`
	P999        *float64 `json:"p999_ns,omitempty"`
	AllocsPerOp *float64 `json:"allocs_per_op,omitempty"`
	BytesPerOp  *float64 `json:"bytes_per_op,omitempty"`
	CPUPerOp    *float64 `json:"cpu_ns_per_op,omitempty"`
	// ServerCPUPerOp is the server's CPU (INFO cpu, user + sys) per operation over the
	// window; absent on a cluster and for servers respbench does not address.
	ServerCPUPerOp *float64 `json:"server_cpu_ns_per_op,omitempty"`
	// LittleOpsPerSec is, for redis-benchmark, the rate its connections and pipeline
	// depth sustain at its own p50 (Little's law), the check on its ops/s.
	LittleOpsPerSec *float64 `json:"little_ops_per_sec,omitempty"`
	Errors          int64    `json:"errors"`
	FirstError      string   `json:"first_error,omitempty"`
	// Overlaps counts acquisitions that found another holder (lock-contended only); a
	// correct lock keeps it at zero.
	Overlaps *int64 `json:"overlaps,omitempty"`
	// Acquisitions and AcquisitionsPerSec count the cycles that took a permit
	// (semaphore only; its ops are every cycle, taken or not).
	Acquisitions       *int64   `json:"acquisitions,omitempty"`
	AcquisitionsPerSec *float64 `json:"acquisitions_per_sec,omitempty"`
	// MaxOccupancy is the most permits the harness saw held at once, and OverCapacity
	// the acquisitions that found the semaphore full (semaphore only); a correct
	// semaphore keeps OverCapacity at zero.
	MaxOccupancy *int64 `json:"max_occupancy,omitempty"`
	OverCapacity *int64 `json:"over_capacity,omitempty"`
}

// participantResult is one participant's figures in one scenario.
type participantResult struct {
	Client    string    `json:"client"`
	Respire   bool      `json:"respire,omitempty"`
	Reference bool      `json:"reference,omitempty"` // redis-benchmark, the server-side reference
	Rounds    []figures `json:"rounds"`
	Median    figures   `json:"median"`
}

// ratio compares Respire's median ops/s with the best peer's.
type ratio struct {
	BestPeer string  `json:"best_peer"`
	Value    float64 `json:"respire_over_best_peer"`
}

type scenarioResult struct {
	Name       string              `json:"name"`
	Kind       string              `json:"kind"`
	Title      string              `json:"title"`
	Latency    string              `json:"latency"`
	Goroutines int                 `json:"goroutines"`
	OpsPerCall int                 `json:"ops_per_call"`
	Capacity   int                 `json:"capacity,omitempty"` // semaphore permits
	Peerless   string              `json:"peerless,omitempty"` // why no peer takes part
	Skipped    string              `json:"skipped,omitempty"`
	Results    []participantResult `json:"results,omitempty"`
	Ratio      *ratio              `json:"ratio,omitempty"`
	// Limit names the reference row every other row is divided by in the table's
	// "of limit" column; Limits has every library's ratio to every reference row.
	Limit  string       `json:"limit,omitempty"`
	Limits []limitRatio `json:"limits,omitempty"`
}

// limitRatio is one row's median ops/s over a reference row's.
type limitRatio struct {
	Client    string  `json:"client"`
	Reference string  `json:"reference"`
	Value     float64 `json:"ratio"`
}

// limitRatios divides every library row's median ops/s by every reference row's.
func limitRatios(results []participantResult) []limitRatio {
	var out []limitRatio
	for _, ref := range results {
		if !ref.Reference || ref.Median.OpsPerSec <= 0 {
			continue
		}
		for _, r := range results {
			if !r.Reference {
				out = append(out, limitRatio{Client: r.Client, Reference: ref.Client, Value: r.Median.OpsPerSec / ref.Median.OpsPerSec})
			}
		}
	}
	return out
}

// limitOf returns the median ops/s of the scenario's limit row, or 0 without one.
func (sc scenarioResult) limitOf() float64 {
	for _, r := range sc.Results {
		if r.Reference && r.Client == sc.Limit {
			return r.Median.OpsPerSec
		}
	}
	return 0
}

type serverInfo struct {
	Addr     string `json:"addr"` // comma-separated seeds for a cluster
	Version  string `json:"version,omitempty"`
	Embedded bool   `json:"embedded"`
	Cluster  bool   `json:"cluster,omitempty"`
}

type lockerNote struct {
	Name  string `json:"name"`
	Retry string `json:"retry"`
}

// report is everything one run of respbench measured.
type report struct {
	Started    time.Time        `json:"started"`
	Server     serverInfo       `json:"server"`
	GoVersion  string           `json:"go_version"`
	OS         string           `json:"os"`
	Arch       string           `json:"arch"`
	NumCPU     int              `json:"num_cpu"`
	GOMAXPROCS int              `json:"gomaxprocs"`
	Duration   string           `json:"duration"`
	Warmup     string           `json:"warmup"`
	Rounds     int              `json:"rounds"`
	LockRetry  string           `json:"lock_retry"`
	Clients    []string         `json:"clients"`
	Lockers    []lockerNote     `json:"lockers,omitempty"`
	Notes      []string         `json:"notes,omitempty"`
	Scenarios  []scenarioResult `json:"scenarios"`
	Sweep      []sweepPoint     `json:"sweep,omitempty"`
	// SweepDuration and SweepRounds are the sweep's windows; empty without -sweep.
	SweepDuration string         `json:"sweep_duration,omitempty"`
	SweepRounds   int            `json:"sweep_rounds,omitempty"`
	Memory        []memoryResult `json:"memory,omitempty"`
	// Targets is the verdict of every performance target of the run's kind
	// (targets.go), read off the figures above.
	Targets []targetResult `json:"targets,omitempty"`
}

// median returns the median of xs (the mean of the middle two for an even count), or
// 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// medianFigures returns the median of every figure over rounds. Errors, overlaps and
// acquisitions over capacity are totals instead, a single one matters, and the maximum
// occupancy is the highest of the rounds'.
func medianFigures(rounds []figures) figures {
	of := func(get func(f figures) float64) float64 {
		xs := make([]float64, len(rounds))
		for i, f := range rounds {
			xs[i] = get(f)
		}
		return median(xs)
	}
	ofOpt := func(get func(f figures) *float64) *float64 {
		var xs []float64
		for _, f := range rounds {
			if v := get(f); v != nil {
				xs = append(xs, *v)
			}
		}
		if len(xs) == 0 {
			return nil
		}
		return ptr(median(xs))
	}
	m := figures{
		OpsPerSec:   of(func(f figures) float64 { return f.OpsPerSec }),
		Ops:         int64(math.Round(of(func(f figures) float64 { return float64(f.Ops) }))),
		Seconds:     of(func(f figures) float64 { return f.Seconds }),
		P50:         of(func(f figures) float64 { return f.P50 }),
		P99:         of(func(f figures) float64 { return f.P99 }),
		P999:        ofOpt(func(f figures) *float64 { return f.P999 }),
		AllocsPerOp: ofOpt(func(f figures) *float64 { return f.AllocsPerOp }),
		BytesPerOp:  ofOpt(func(f figures) *float64 { return f.BytesPerOp }),
		CPUPerOp:    ofOpt(func(f figures) *float64 { return f.CPUPerOp }),

		ServerCPUPerOp: ofOpt(func(f figures) *float64 { return f.ServerCPUPerOp }),

		LittleOpsPerSec: ofOpt(func(f figures) *float64 { return f.LittleOpsPerSec }),

		AcquisitionsPerSec: ofOpt(func(f figures) *float64 { return f.AcquisitionsPerSec }),
	}
	if a := ofOpt(func(f figures) *float64 { return intFigure(f.Acquisitions) }); a != nil {
		m.Acquisitions = ptr(int64(math.Round(*a)))
	}
	for _, f := range rounds {
		m.Errors += f.Errors
		if m.FirstError == "" {
			m.FirstError = f.FirstError
		}
		if f.Overlaps != nil {
			m.Overlaps = ptr(*f.Overlaps + valueOr(m.Overlaps, 0))
		}
		if f.OverCapacity != nil {
			m.OverCapacity = ptr(*f.OverCapacity + valueOr(m.OverCapacity, 0))
		}
		if f.MaxOccupancy != nil {
			m.MaxOccupancy = ptr(max(*f.MaxOccupancy, valueOr(m.MaxOccupancy, 0)))
		}
	}
	return m
}

// intFigure converts an optional count for medianFigures.
func intFigure(p *int64) *float64 {
	if p == nil {
		return nil
	}
	return ptr(float64(*p))
}

func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// respireRatio compares Respire's median ops/s with the best peer's: a client or
// locker that is not Respire's and not the reference. It returns nil when either side
// is missing.
func respireRatio(results []participantResult) *ratio {
	var mine, best float64
	bestName := ""
	found := false
	for _, r := range results {
		switch {
		case r.Reference:
		case r.Respire:
			if !found { // the first is the default configuration
				mine, found = r.Median.OpsPerSec, true
			}
		case r.Median.OpsPerSec > best:
			best, bestName = r.Median.OpsPerSec, r.Client
		}
	}
	if !found || bestName == "" {
		return nil
	}
	return &ratio{BestPeer: bestName, Value: mine / best}
}

// writeJSON writes the report to path.
func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeTable prints the medians of every scenario as aligned tables.
func writeTable(w io.Writer, rep *report) {
	kind := "server"
	if rep.Server.Cluster {
		kind = "cluster"
	}
	fmt.Fprintf(w, "respbench: %s, %s/%s, %d CPUs (GOMAXPROCS %d); %s %s", rep.GoVersion, rep.OS, rep.Arch, rep.NumCPU, rep.GOMAXPROCS, kind, rep.Server.Addr)
	if rep.Server.Version != "" {
		fmt.Fprintf(w, " (redis %s", rep.Server.Version)
		if rep.Server.Embedded {
			fmt.Fprint(w, ", embedded")
		}
		fmt.Fprint(w, ")")
	}
	fmt.Fprintf(w, "\nmedians of %d rounds of %s after %s warm-up; CPU is this process's (the client's) alone\n", rep.Rounds, rep.Duration, rep.Warmup)
	for _, sc := range rep.Scenarios {
		fmt.Fprintf(w, "\n== %s: %s\n", sc.Name, sc.Title)
		if sc.Skipped != "" {
			fmt.Fprintf(w, "   skipped: %s\n", sc.Skipped)
			continue
		}
		fmt.Fprintf(w, "   latency: %s\n", sc.Latency)
		names := make([]string, len(sc.Results))
		width := len("client")
		for i, r := range sc.Results {
			names[i] = r.Client
			if r.Reference {
				names[i] += " (ref)"
			}
			width = max(width, len(names[i]))
		}
		// Numbers align right; the names are padded here so they stay on the left.
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		limit := sc.limitOf()
		limitHead := ""
		if limit > 0 {
			limitHead = "of limit\t"
		}
		fmt.Fprintf(tw, "   %-*s\tops/s\t%sp50\tp99\tp99.9\tallocs/op\tB/op\tCPU/op\tserver CPU/op\t\n", width, "client", limitHead)
		var notes []string
		for i, r := range sc.Results {
			m := r.Median
			limitCell := ""
			if limit > 0 {
				limitCell = fmt.Sprintf("%.2fx\t", m.OpsPerSec/limit)
			}
			fmt.Fprintf(tw, "   %-*s\t%s\t%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", width, names[i],
				fmtRate(m.OpsPerSec), limitCell, fmtNS(m.P50), fmtNS(m.P99), fmtOptNS(m.P999),
				fmtOpt(m.AllocsPerOp, 1), fmtOpt(m.BytesPerOp, 0), fmtOptNS(m.CPUPerOp), fmtOptNS(m.ServerCPUPerOp))
			if m.Errors > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d errors, first: %s", r.Client, m.Errors, m.FirstError))
			}
			if m.Overlaps != nil && *m.Overlaps > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d acquisitions found another holder", r.Client, *m.Overlaps))
			}
			if m.OverCapacity != nil && *m.OverCapacity > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d acquisitions exceeded the capacity of %d", r.Client, *m.OverCapacity, sc.Capacity))
			}
		}
		tw.Flush()
		for _, r := range sc.Results {
			// The semaphore's own figures: how many cycles took a permit, and the
			// occupancy check.
			if m := r.Median; m.AcquisitionsPerSec != nil {
				fmt.Fprintf(w, "   %s: %s acquisitions/s of %s cycles/s; at most %d of %d permits held at once\n", r.Client,
					fmtRate(*m.AcquisitionsPerSec), fmtRate(m.OpsPerSec), valueOr(m.MaxOccupancy, 0), sc.Capacity)
			}
		}
		for _, r := range sc.Results {
			if m := r.Median; m.LittleOpsPerSec != nil && *m.LittleOpsPerSec > 0 {
				check := "consistent"
				if q := m.OpsPerSec / *m.LittleOpsPerSec; q < 0.5 || q > 2 {
					check = "INCONSISTENT: its rate or its latencies are off"
				}
				fmt.Fprintf(w, "   %s: %s ops/s over runs of %.1fs; its connections x depth / its p50 give %s ops/s (%s)\n",
					r.Client, fmtRate(m.OpsPerSec), m.Seconds, fmtRate(*m.LittleOpsPerSec), check)
			}
		}
		for _, n := range notes {
			fmt.Fprintf(w, "   ! %s\n", n)
		}
		if limit > 0 {
			fmt.Fprintf(w, "   of limit: ops/s over %s (ref), the limit row\n", sc.Limit)
		}
		for _, l := range sc.Limits {
			if l.Reference != sc.Limit && isRespire(sc, l.Client) {
				fmt.Fprintf(w, "   %s / %s (ref): %.2fx ops/s\n", l.Client, l.Reference, l.Value)
			}
		}
		switch {
		case sc.Peerless != "":
			fmt.Fprintf(w, "   Respire / best peer: no peer: %s\n", sc.Peerless)
		case sc.Ratio != nil:
			fmt.Fprintf(w, "   Respire / best peer (%s): %.2fx ops/s\n", sc.Ratio.BestPeer, sc.Ratio.Value)
		default:
			fmt.Fprintln(w, "   Respire / best peer: n/a (Respire or every peer is missing from this run)")
		}
	}
	if len(rep.Sweep) > 0 {
		writeSweepTable(w, rep.Sweep)
	}
	if len(rep.Memory) > 0 {
		writeMemoryTable(w, rep.Memory)
	}
	if len(rep.Lockers) > 0 {
		fmt.Fprintln(w, "\nlock waiting:")
		for _, l := range rep.Lockers {
			fmt.Fprintf(w, "   %-17s %s\n", l.Name, l.Retry)
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w, "\nconfigurations:")
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "   %s\n", n)
		}
	}
	writeTargets(w, rep.Targets)
}

// isRespire reports whether the scenario's row named client is one of Respire's.
func isRespire(sc scenarioResult, client string) bool {
	for _, r := range sc.Results {
		if r.Client == client {
			return r.Respire
		}
	}
	return false
}

// fmtRate prints an ops/s figure with three significant digits: 950, 25.3k, 1.93M.
func fmtRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 1e6:
		return sig3(v/1e6) + "M"
	case v >= 1e3:
		return sig3(v/1e3) + "k"
	default:
		return sig3(v)
	}
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// fmtNS prints nanoseconds with a unit: 850ns, 38.1µs, 1.20ms, 2.50s.
func fmtNS(ns float64) string {
	switch {
	case ns >= 1e9:
		return sig3(ns/1e9) + "s"
	case ns >= 1e6:
		return sig3(ns/1e6) + "ms"
	case ns >= 1e3:
		return sig3(ns/1e3) + "µs"
	default:
		return fmt.Sprintf("%.0fns", ns)
	}
}

func fmtOptNS(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmtNS(*v)
}

func fmtOpt(v *float64, decimals int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, *v)
}

// participantNames lists every name -clients accepts: data clients, lockers,
// semaphores, Redlock implementations and the reference.
func participantNames() []string {
	var names []string
	for _, c := range clientSpecs {
		names = append(names, c.name)
	}
	for _, l := range lockerSpecs() {
		names = append(names, l.name)
	}
	names = append(names, mapLimitSpec.name)
	for _, s := range semaphoreSpecs {
		names = append(names, s.name)
	}
	for _, l := range redlockSpecs {
		names = append(names, l.name)
	}
	return append(names, referenceName)
}
