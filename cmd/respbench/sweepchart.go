package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The sweep chart: four panels, ops/s and client CPU per GET against goroutines, ops/s
// and p99 against the value's size, each on log-log axes (both axes span orders of
// magnitude), one line per client.

var sweepColors = []color.Color{colorRespire, colorPeer, color.RGBA{R: 0x4c, G: 0x9a, B: 0x4c, A: 0xff}, colorReference}

// sweepPanel is one panel: y of every client's points on axis.
func sweepPanel(points []sweepPoint, axis, title, xLabel, yLabel string, y func(f figures) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xLabel, yLabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	var names []string
	byClient := map[string]plotter.XYs{}
	for _, pt := range points {
		v := y(pt.Median)
		if pt.Axis != axis || v <= 0 {
			continue
		}
		if _, ok := byClient[pt.Client]; !ok {
			names = append(names, pt.Client)
		}
		byClient[pt.Client] = append(byClient[pt.Client], plotter.XY{X: float64(pt.X), Y: v})
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no %s points", axis)
	}
	for i, name := range names {
		l, s, err := plotter.NewLinePoints(byClient[name])
		if err != nil {
			return nil, err
		}
		c := sweepColors[i%len(sweepColors)]
		l.Color, s.Color = c, c
		l.Width = vg.Points(2)
		p.Add(l, s)
		p.Legend.Add(name, l, s)
	}
	p.Legend.Top = true
	return p, nil
}

// writeSweepChart draws rep's sweep into path.
func writeSweepChart(path string, rep *report) error {
	if len(rep.Sweep) == 0 {
		return fmt.Errorf("respbench: sweep chart: the sweep did not run")
	}
	ops := func(f figures) float64 { return f.OpsPerSec }
	cpu := func(f figures) float64 { return valueOr(f.CPUPerOp, 0) / 1e3 }
	p99 := func(f figures) float64 { return f.P99 / 1e3 }
	size := fmt.Sprintf("value bytes (%d goroutines)", sweepSizeGoroutines)
	specs := []struct {
		axis, title, x, y string
		get               func(figures) float64
	}{
		{"goroutines", "GET ops/s against goroutines (16-byte value)", "goroutines", "ops/s", ops},
		{"goroutines", "client CPU per GET against goroutines", "goroutines", "µs of CPU per GET", cpu},
		{"value_bytes", "GET ops/s against value size", size, "ops/s", ops},
		{"value_bytes", "GET p99 against value size", size, "p99 (µs)", p99},
	}
	grid := [][]*plot.Plot{make([]*plot.Plot, 2), make([]*plot.Plot, 2)}
	for i, s := range specs {
		p, err := sweepPanel(rep.Sweep, s.axis, s.title, s.x, s.y, s.get)
		if err != nil {
			return fmt.Errorf("respbench: sweep chart: %w", err)
		}
		grid[i/2][i%2] = p
	}
	h := header{
		title: "respbench -sweep: cost curves (log-log)",
		sub: fmt.Sprintf("median of %d rounds of %s per point; %s, %d CPUs, %s",
			rep.SweepRounds, rep.SweepDuration, serverName(rep), rep.NumCPU, rep.GoVersion),
	}
	return drawGrid(path, h, grid, chartHeader+2*chartRowHeight*1.3)
}
