package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// referenceName is the participant that runs redis-benchmark, the server-side
// reference of the data scenarios.
const referenceName = "redis-benchmark"

// errNoBenchmarkBinary means redis-benchmark (redis-tools) is not installed.
var errNoBenchmarkBinary = errors.New("respbench: redis-benchmark not found in PATH")

// calibrationCalls is the number of calls (pipelines of -P commands) of the first,
// calibrating run; the measured runs are sized from the latest rate.
const calibrationCalls = 2000

// maxSizingRuns bounds the runs of one measurement: a run shorter than the window is
// run again, larger, because redis-benchmark's rate grows with its run's length.
const maxSizingRuns = 4

// referenceRunner runs redis-benchmark with a scenario's arguments. It has no time
// limit flag, so the runner sizes each run (-n) from the rate of the last one, and
// repeats a run that ended before the window did.
type referenceRunner struct {
	bin  string
	host string
	port string
	args []string
	rate float64 // requests per second of the last run; 0 before the first
}

func newReferenceRunner(addr string, args []string) (*referenceRunner, error) {
	bin, err := exec.LookPath("redis-benchmark")
	if err != nil {
		return nil, errNoBenchmarkBinary
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("respbench: -addr %q: %w", addr, err)
	}
	return &referenceRunner{bin: bin, host: host, port: port, args: args}, nil
}

// pipelineDepth returns the -P of the arguments.
func (r *referenceRunner) pipelineDepth() int { return r.intArg("-P") }

// run runs redis-benchmark for at least d and returns its figures: requests/s and the
// latency percentiles it prints (per request; with -P a request waits for its whole
// pipeline). Client-side allocation and CPU figures do not apply.
func (r *referenceRunner) run(ctx context.Context, d time.Duration) (figures, error) {
	if r.rate == 0 {
		if _, err := r.runN(ctx, calibrationCalls*r.pipelineDepth()); err != nil {
			return figures{}, err
		}
	}
	var f figures
	var err error
	for range maxSizingRuns {
		// 10% over the window, so a run sized from a slightly faster rate still fills it.
		n := max(int(r.rate*d.Seconds()*1.1), r.pipelineDepth())
		if f, err = r.runN(ctx, n); err != nil || f.Seconds >= d.Seconds() {
			break
		}
	}
	return f, err
}

// clients returns the -c of the arguments.
func (r *referenceRunner) clients() int { return r.intArg("-c") }

// intArg returns the value of a positive integer flag of the arguments, 1 when absent.
func (r *referenceRunner) intArg(flag string) int {
	if i := slices.Index(r.args, flag); i >= 0 && i+1 < len(r.args) {
		if p, err := strconv.Atoi(r.args[i+1]); err == nil && p > 0 {
			return p
		}
	}
	return 1
}

// littleRate is the rate that clients connections keeping depth requests in flight,
// each answered after p50, sustain (Little's law): redis-benchmark's own figure should
// be near it, or its rate or its latencies are not what they seem.
func littleRate(clients, depth int, p50 time.Duration) float64 {
	if p50 <= 0 {
		return 0
	}
	return float64(clients*depth) / p50.Seconds()
}

func (r *referenceRunner) runN(ctx context.Context, n int) (figures, error) {
	args := append([]string{"-h", r.host, "-p", r.port, "-n", strconv.Itoa(n), "--csv"}, r.args...)
	cmd := exec.CommandContext(ctx, r.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return figures{}, fmt.Errorf("respbench: redis-benchmark %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	elapsed := time.Since(start)
	f, err := parseBenchmarkCSV(stdout.Bytes())
	if err != nil {
		return figures{}, err
	}
	f.Ops = int64(n)
	f.Seconds = elapsed.Seconds()
	if f.OpsPerSec > 0 {
		r.rate = f.OpsPerSec
	}
	f.LittleOpsPerSec = ptr(littleRate(r.clients(), r.pipelineDepth(), time.Duration(f.P50)))
	return f, nil
}

// parseBenchmarkCSV reads the one test of redis-benchmark --csv output:
//
//	"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
//	"GET","27359.78","0.026","0.008","0.023","0.055","0.087","5.103"
func parseBenchmarkCSV(out []byte) (figures, error) {
	records, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return figures{}, fmt.Errorf("respbench: redis-benchmark output: %w", err)
	}
	if len(records) < 2 {
		return figures{}, fmt.Errorf("respbench: redis-benchmark printed no result: %q", out)
	}
	header, row := records[0], records[1]
	field := func(name string) (float64, error) {
		i := slices.Index(header, name)
		if i < 0 || i >= len(row) {
			return 0, fmt.Errorf("respbench: redis-benchmark output has no %q column", name)
		}
		v, err := strconv.ParseFloat(row[i], 64)
		if err != nil {
			return 0, fmt.Errorf("respbench: redis-benchmark %s: %w", name, err)
		}
		return v, nil
	}
	var f figures
	const msToNS = 1e6
	if f.OpsPerSec, err = field("rps"); err != nil {
		return figures{}, err
	}
	p50, err := field("p50_latency_ms")
	if err != nil {
		return figures{}, err
	}
	p99, err := field("p99_latency_ms")
	if err != nil {
		return figures{}, err
	}
	f.P50, f.P99 = p50*msToNS, p99*msToNS
	return f, nil
}
