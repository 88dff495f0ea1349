package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Durations of -quick, a smoke test rather than a measurement.
const (
	quickDuration = 100 * time.Millisecond
	quickWarmup   = 20 * time.Millisecond
)

// config is the command line, checked.
type config struct {
	addr      string
	serverBin string // -server: the redis-server binary to start; empty for the PATH's
	cluster   bool
	duration  time.Duration
	warmup    time.Duration
	rounds    int
	clients   []string // selected participant names, in the order of allNames
	scenarios []string // selected scenario names, in table order
	lockRetry time.Duration
	jsonPath  string
	chartPath string
	quick     bool
	// sweep adds the cost curves (sweep.go), memory the memory figures (memory.go).
	sweep          bool
	sweepDuration  time.Duration
	sweepRounds    int
	sweepChartPath string
	memory         bool
	// tablePath, if set, also gets the printed table.
	tablePath string
	// cpuProfileDir and traceDir, if set, get a CPU profile and an execution trace of
	// every measured window (profile.go).
	cpuProfileDir string
	traceDir      string
}

// errUsage marks a command line that cannot run; the flag package has printed why.
var errUsage = errors.New("respbench: bad usage")

// parseFlags reads the command line. names lists every client, locker and reference
// that -clients may name; scenarioNames every scenario -scenarios may name.
func parseFlags(args []string, stderr io.Writer, names, scenarioNames []string) (config, error) {
	var (
		cfg       config
		clients   string
		scenarios string
	)
	fs := flag.NewFlagSet("respbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "", "`host:port` of an existing server, or with -cluster comma-separated seed nodes (default: start a redis-server, or a cluster, on free loopback ports)")
	fs.StringVar(&cfg.serverBin, "server", "", "`path` of the redis-server binary to start (default: redis-server on the PATH), e.g. a newer generation's for its lock commands")
	fs.BoolVar(&cfg.cluster, "cluster", false, "benchmark against a Redis Cluster: the -addr seeds, or one of 3 masters it starts itself")
	fs.DurationVar(&cfg.duration, "duration", 2*time.Second, "length of each measured window")
	fs.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "warm-up before each measured window")
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds per scenario; medians are reported (single rounds move by ±20% on a small machine)")
	fs.StringVar(&clients, "clients", "", "comma-separated `names` of clients, lockers and references to run (default all): "+strings.Join(names, ","))
	fs.StringVar(&scenarios, "scenarios", "", "comma-separated `names` of scenarios to run (default all): "+strings.Join(scenarioNames, ","))
	fs.DurationVar(&cfg.lockRetry, "lock-retry", time.Millisecond, "retry interval of lock libraries that poll (redislock, redsync) under contention")
	fs.StringVar(&cfg.jsonPath, "json", "", "write every figure, per round and median, to this `file`")
	fs.StringVar(&cfg.chartPath, "chart", "", "write a bar chart of ops/s to this `file` (.png or .svg)")
	fs.BoolVar(&cfg.sweep, "sweep", false, "also measure ops/s, p50/p99 and client CPU per GET against goroutines (1 to 1,024) and value size (16 B to 1 MiB) for "+strings.Join(sweepClients, ", "))
	fs.DurationVar(&cfg.sweepDuration, "sweep-duration", sweepDefaultDuration, "length of each -sweep window")
	fs.IntVar(&cfg.sweepRounds, "sweep-rounds", sweepDefaultRounds, "interleaved rounds per -sweep point; medians are reported")
	fs.StringVar(&cfg.sweepChartPath, "sweep-chart", "", "write -sweep's curves to this `file` (.png or .svg)")
	fs.BoolVar(&cfg.memory, "memory", false, "also measure the heap and RSS of "+strings.Join(memoryClients, ", ")+": idle, per connection, 1,000 commands in flight, after a burst of 1 MiB values")
	fs.StringVar(&cfg.tablePath, "table", "", "also write the printed table to this `file`")
	fs.StringVar(&cfg.cpuProfileDir, "cpuprofile", "", "write a CPU profile of every measured scenario window (scenario, participant, round; not -sweep's) into this `directory`, for go tool pprof; recording slows the run")
	fs.StringVar(&cfg.traceDir, "trace", "", "write an execution trace of every measured scenario window into this `directory`, for go tool trace (-pprof=sched: how long woken goroutines waited for a CPU); tracing slows the run")
	fs.BoolVar(&cfg.quick, "quick", false, fmt.Sprintf("smoke test: %v windows after %v warm-ups unless -duration/-warmup are given", quickDuration, quickWarmup))
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: respbench [flags]\n\nRuns Respire side by side with go-redis, rueidis and the lock libraries built on them, against one redis-server.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, errUsage
	}
	bad := func(format string, a ...any) (config, error) {
		fmt.Fprintf(stderr, "respbench: "+format+"\n", a...)
		fs.Usage()
		return cfg, errUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if cfg.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			cfg.duration = quickDuration
		}
		if !set["warmup"] {
			cfg.warmup = quickWarmup
		}
		if !set["sweep-duration"] {
			cfg.sweepDuration = quickDuration
		}
		if !set["sweep-rounds"] {
			cfg.sweepRounds = 1
		}
	}
	if cfg.serverBin != "" && cfg.addr != "" {
		return bad("-server names a binary to start and -addr a server already running: give one")
	}
	if !cfg.cluster && strings.Contains(cfg.addr, ",") {
		return bad("-addr lists several nodes: add -cluster for a Redis Cluster")
	}
	if cfg.duration <= 0 {
		return bad("-duration must be positive")
	}
	if cfg.warmup < 0 {
		return bad("-warmup must not be negative")
	}
	if cfg.rounds < 1 {
		return bad("-rounds must be at least 1")
	}
	if cfg.lockRetry <= 0 {
		return bad("-lock-retry must be positive")
	}
	if ext := chartFormat(cfg.chartPath); cfg.chartPath != "" && ext == "" {
		return bad("-chart must name a .png or .svg file")
	}
	if ext := chartFormat(cfg.sweepChartPath); cfg.sweepChartPath != "" && ext == "" {
		return bad("-sweep-chart must name a .png or .svg file")
	}
	if cfg.sweepChartPath != "" && !cfg.sweep {
		return bad("-sweep-chart needs -sweep")
	}
	if cfg.sweepDuration <= 0 || cfg.sweepRounds < 1 {
		return bad("-sweep-duration must be positive and -sweep-rounds at least 1")
	}
	var err error
	if cfg.clients, err = selectNames(names, clients); err != nil {
		return bad("-clients: %v", err)
	}
	if cfg.scenarios, err = selectNames(scenarioNames, scenarios); err != nil {
		return bad("-scenarios: %v", err)
	}
	return cfg, nil
}

// selectNames returns the names of all that a comma-separated filter lists, in the
// order of all. An empty filter selects all; a name not in all is an error.
func selectNames(all []string, filter string) ([]string, error) {
	if strings.TrimSpace(filter) == "" {
		return slices.Clone(all), nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(filter, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("unknown name %q (known: %s)", name, strings.Join(all, ", "))
		}
		want[name] = true
	}
	var out []string
	for _, name := range all {
		if want[name] {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("selects nothing")
	}
	return out, nil
}
