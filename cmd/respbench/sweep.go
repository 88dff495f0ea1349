package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The sweep: how ops/s, latency and client CPU per command move with the number of
// goroutines (GET of a 16-byte value) and with the value's size (GET at 16
// goroutines), for Respire beside the best peers of the main table.
var (
	sweepGoroutines = []int{1, 16, 64, 256, 1024}
	sweepSizes      = []int{16, 1 << 10, 16 << 10, 256 << 10, 1 << 20}
	// sweepClients are the configurations that run it; others in -clients are left out
	// to bound its time. rueidis with its flush delay is the peer that led at 1,024
	// goroutines when issue #28 was filed.
	sweepClients = []string{"respire", "rueidis", "rueidis-flush20us", "go-redis-autopipe"}
)

// sweepSizeGoroutines is the concurrency of the value-size axis.
const sweepSizeGoroutines = 16

// sweepPoint is one client's medians at one point of one axis.
type sweepPoint struct {
	Axis       string  `json:"axis"` // "goroutines" or "value_bytes"
	X          int     `json:"x"`
	Client     string  `json:"client"`
	Respire    bool    `json:"respire,omitempty"`
	Goroutines int     `json:"goroutines"`
	ValueBytes int     `json:"value_bytes"`
	Median     figures `json:"median"`
}

// sweepKey is the key that holds the sweep's value of size n.
func sweepKey(n int) string { return keyPrefix + "sweep:" + strconv.Itoa(n) }

// runSweep measures every point for every sweep client in interleaved rounds and
// returns the medians.
func (b *bench) runSweep(ctx context.Context) ([]sweepPoint, error) {
	for _, n := range sweepSizes {
		if _, err := b.admin.Do(ctx, "SET", sweepKey(n), strings.Repeat("s", n)); err != nil {
			return nil, fmt.Errorf("respbench: sweep: store %d bytes: %w", n, err)
		}
	}
	var clients []openedClient
	for _, c := range b.data {
		for _, name := range sweepClients {
			if c.spec.name == name {
				clients = append(clients, c)
			}
		}
	}
	type point struct {
		axis             string
		goroutines, size int
	}
	var points []point
	for _, g := range sweepGoroutines {
		points = append(points, point{"goroutines", g, 16})
	}
	for _, n := range sweepSizes {
		points = append(points, point{"value_bytes", sweepSizeGoroutines, n})
	}
	var out []sweepPoint
	for _, pt := range points {
		rounds := make([][]figures, len(clients))
		for r := range b.cfg.sweepRounds {
			for k := range clients {
				i := (k + r) % len(clients)
				c := clients[i]
				b.prog.step(fmt.Sprintf("sweep %s=%d r%d %s", pt.axis, pointX(pt.axis, pt.goroutines, pt.size), r+1, c.spec.name))
				l := sweepLoad(c.client, pt.goroutines, pt.size)
				if b.cfg.warmup > 0 {
					measure(ctx, l, b.cfg.warmup/2)
				}
				s := measure(ctx, l, b.cfg.sweepDuration)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				f := s.figures()
				if s.firstErr != nil {
					f.FirstError = s.firstErr.Error()
				}
				rounds[i] = append(rounds[i], f)
			}
		}
		for i, c := range clients {
			out = append(out, sweepPoint{
				Axis: pt.axis, X: pointX(pt.axis, pt.goroutines, pt.size),
				Client: c.spec.name, Respire: c.spec.respire,
				Goroutines: pt.goroutines, ValueBytes: pt.size, Median: medianFigures(rounds[i]),
			})
		}
	}
	return out, nil
}

func pointX(axis string, goroutines, size int) int {
	if axis == "goroutines" {
		return goroutines
	}
	return size
}

// sweepSteps counts the sweep's measurements, for the progress bar.
func (b *bench) sweepSteps() int {
	if !b.cfg.sweep {
		return 0
	}
	n := 0
	for _, c := range b.data {
		for _, name := range sweepClients {
			if c.spec.name == name {
				n++
			}
		}
	}
	return n * (len(sweepGoroutines) + len(sweepSizes)) * b.cfg.sweepRounds
}

// sweepLoad is goroutines GETs of the sweep's value of size bytes.
func sweepLoad(c dataClient, goroutines, size int) load {
	key := sweepKey(size)
	return load{goroutines: goroutines, newWorker: func(int) workerFunc {
		return timed(1, func(ctx context.Context) error {
			v, err := c.get(ctx, key)
			if err == nil && len(v) != size {
				err = errShortValue
			}
			return err
		})
	}}
}

// writeSweepTable prints the sweep, one block per axis, one row per point and client.
func writeSweepTable(w io.Writer, points []sweepPoint) {
	for _, axis := range []string{"goroutines", "value_bytes"} {
		title := "== sweep: GET of a 16-byte value against goroutines"
		if axis == "value_bytes" {
			title = fmt.Sprintf("== sweep: GET at %d goroutines against the value's size", sweepSizeGoroutines)
		}
		fmt.Fprintf(w, "\n%s\n", title)
		fmt.Fprintln(w, "   medians of the -sweep rounds; vs respire: Respire's ops/s over the row's, at the same point")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "   %s\tclient\tops/s\tvs respire\tp50\tp99\tallocs/op\tCPU/op\t\n", strings.ReplaceAll(axis, "_", " "))
		mine := map[int]float64{}
		for _, p := range points {
			if p.Axis == axis && p.Respire {
				mine[p.X] = p.Median.OpsPerSec
			}
		}
		for _, p := range points {
			if p.Axis != axis {
				continue
			}
			vs := "-"
			if m := mine[p.X]; m > 0 && p.Median.OpsPerSec > 0 && !p.Respire {
				vs = fmt.Sprintf("%.2fx", m/p.Median.OpsPerSec)
			}
			x := strconv.Itoa(p.X)
			if axis == "value_bytes" {
				x = fmtBytes(p.X)
			}
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x, p.Client, fmtRate(p.Median.OpsPerSec), vs,
				fmtNS(p.Median.P50), fmtNS(p.Median.P99), fmtOpt(p.Median.AllocsPerOp, 1), fmtOptNS(p.Median.CPUPerOp))
		}
		tw.Flush()
	}
}

// fmtBytes prints a size: 16 B, 1 KiB, 1 MiB.
func fmtBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// sweepDefaultDuration and sweepDefaultRounds bound the sweep's time: 10 points of 3
// clients.
const (
	sweepDefaultDuration = time.Second
	sweepDefaultRounds   = 3
)
