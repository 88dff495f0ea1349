package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() {
	// A closed stdout (respbench | head) then fails a write instead of killing the
	// process before it stops its server.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command, returning its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr, participantNames(), scenarioNames())
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	for _, dir := range []string{cfg.cpuProfileDir, cfg.traceDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "respbench: %v\n", err)
			return exitFailed
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	ep, embedded := endpoint{addrs: splitAddrs(cfg.addr), cluster: cfg.cluster}, false
	switch {
	case len(ep.addrs) > 0:
	case cfg.cluster:
		cl, err := startCluster(ctx, cfg.serverBin)
		if errors.Is(err, errNoServerBinary) {
			fmt.Fprintf(stderr, "respbench: redis-server is not installed; install it with:\n    %s\nor point respbench at a cluster with -cluster -addr host:port,...\n", installHint)
			return exitFailed
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
		defer cl.stop()
		ep.addrs, embedded = cl.seeds(), true
	default:
		srv, err := startServer(ctx, cfg.serverBin)
		if errors.Is(err, errNoServerBinary) {
			fmt.Fprintf(stderr, "respbench: redis-server is not installed; install it with:\n    %s\nor point respbench at a server with -addr host:port\n", installHint)
			return exitFailed
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailed
		}
		defer srv.stop()
		ep.addrs, embedded = []string{srv.addr}, true
	}

	rep := newReport(cfg, ep, embedded)
	b := &bench{cfg: cfg, ep: ep, embedded: embedded, stderr: stderr}
	defer b.close()
	if err := b.open(ctx, rep); err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailed
	}
	if err := b.run(ctx, rep); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "respbench: interrupted")
			return exitInterrupted
		}
		fmt.Fprintln(stderr, err)
		return exitFailed
	}

	rep.Targets = checkTargets(rep)
	code := exitOK
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			fmt.Fprintf(stderr, "respbench: -json: %v\n", err)
			code = exitFailed
		}
	}
	if cfg.chartPath != "" {
		if err := writeChart(cfg.chartPath, rep); err != nil {
			fmt.Fprintf(stderr, "respbench: -chart: %v\n", err)
			code = exitFailed
		}
	}
	if cfg.sweepChartPath != "" {
		if err := writeSweepChart(cfg.sweepChartPath, rep); err != nil {
			fmt.Fprintf(stderr, "respbench: -sweep-chart: %v\n", err)
			code = exitFailed
		}
	}
	if cfg.tablePath != "" {
		var buf bytes.Buffer
		writeTable(&buf, rep)
		if err := os.WriteFile(cfg.tablePath, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintf(stderr, "respbench: -table: %v\n", err)
			code = exitFailed
		}
	}
	writeTable(stdout, rep)
	return code
}
