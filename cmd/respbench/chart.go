package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The chart is one panel per scenario, each a horizontal bar per participant with its
// own linear ops/s axis: scenarios differ by orders of magnitude, and a shared axis
// (even a log one) would make the differences within a scenario, the point of the
// chart, hard to read.
const (
	chartCols      = 2
	chartWidth     = 16 * vg.Inch
	chartRowHeight = 3.4 * vg.Inch
	chartHeader    = 0.9 * vg.Inch
	chartDPI       = 100
)

var (
	colorRespire   = color.RGBA{R: 0xd9, G: 0x48, B: 0x1c, A: 0xff}
	colorPeer      = color.RGBA{R: 0x3d, G: 0x6f, B: 0xb0, A: 0xff}
	colorReference = color.RGBA{R: 0xa0, G: 0xa0, B: 0xa0, A: 0xff}
)

// chartFormat returns "png" or "svg" for a chart path, or "" for anything else.
func chartFormat(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		return "png"
	case ".svg":
		return "svg"
	}
	return ""
}

// writeChart draws the median ops/s of every scenario that ran into path.
func writeChart(path string, rep *report) error {
	var panels []*plot.Plot
	for _, sc := range rep.Scenarios {
		if sc.Skipped != "" || len(sc.Results) == 0 {
			continue
		}
		p, err := scenarioPanel(sc)
		if err != nil {
			return fmt.Errorf("respbench: chart %s: %w", sc.Name, err)
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return fmt.Errorf("respbench: chart: no scenario ran")
	}
	cols := min(chartCols, len(panels))
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range grid[r] {
			if i := r*cols + c; i < len(panels) {
				grid[r][c] = panels[i]
			}
		}
	}
	height := chartHeader + vg.Length(rows)*chartRowHeight
	return drawGrid(path, mainHeader(rep), grid, height)
}

// drawGrid draws the header h and the panels of grid (nil for an empty cell) into
// path, a .png or .svg file of the chart's width and the given height.
func drawGrid(path string, h header, grid [][]*plot.Plot, height vg.Length) error {
	var (
		canvas vg.CanvasWriterTo
		dc     draw.Canvas
	)
	switch chartFormat(path) {
	case "png":
		img := vgimg.NewWith(vgimg.UseWH(chartWidth, height), vgimg.UseDPI(chartDPI), vgimg.UseBackgroundColor(color.White))
		canvas, dc = vgimg.PngCanvas{Canvas: img}, draw.New(img)
	case "svg":
		svg := vgsvg.New(chartWidth, height)
		canvas, dc = svg, draw.New(svg)
	default:
		return fmt.Errorf("respbench: chart %s: not a .png or .svg file", path)
	}

	drawHeader(dc, h)
	tiles := draw.Tiles{
		Rows: len(grid), Cols: len(grid[0]),
		PadTop: chartHeader, PadBottom: 0.15 * vg.Inch,
		PadLeft: 0.15 * vg.Inch, PadRight: 0.3 * vg.Inch,
		PadX: 0.5 * vg.Inch, PadY: 0.35 * vg.Inch,
	}
	cells := plot.Align(grid, tiles, dc)
	for r := range grid {
		for c, p := range grid[r] {
			if p != nil {
				p.Draw(cells[r][c])
			}
		}
	}
	return writeCanvas(path, canvas)
}

func writeCanvas(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// header is a chart's title and the line under it.
type header struct{ title, sub string }

// mainHeader is the header of the scenario chart.
func mainHeader(rep *report) header {
	return header{
		title: "respbench: operations per second (higher is better)",
		sub: fmt.Sprintf("median of %d rounds of %s; %s, %d CPUs, %s; each panel has its own scale; grey = a reference row (redis-benchmark, ref-*)",
			rep.Rounds, rep.Duration, serverName(rep), rep.NumCPU, rep.GoVersion),
	}
}

func serverName(rep *report) string {
	if rep.Server.Version != "" {
		return "redis " + rep.Server.Version
	}
	return rep.Server.Addr
}

func drawHeader(dc draw.Canvas, h header) {
	title := text.Style{
		Font:    font.From(plot.DefaultFont, vg.Points(20)),
		Handler: plot.DefaultTextHandler,
		XAlign:  text.XCenter,
		YAlign:  text.YTop,
	}
	sub := title
	sub.Font = font.From(plot.DefaultFont, vg.Points(12))
	sub.Color = color.Gray{Y: 0x50}
	mid := dc.Min.X + (dc.Max.X-dc.Min.X)/2
	dc.FillText(title, vg.Point{X: mid, Y: dc.Max.Y - 0.15*vg.Inch}, h.title)
	dc.FillText(sub, vg.Point{X: mid, Y: dc.Max.Y - 0.5*vg.Inch}, h.sub)
}

// scenarioPanel draws one scenario: a horizontal bar per participant, Respire on top.
func scenarioPanel(sc scenarioResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = sc.Name + ": " + sc.Title
	switch {
	case sc.Peerless != "":
		// The full reason is in the table; a panel title has room for the fact.
		p.Title.Text += "\n(no peer: no Go library offers one)"
	case sc.Ratio != nil:
		p.Title.Text += fmt.Sprintf("\nRespire / best peer (%s): %.2fx", sc.Ratio.BestPeer, sc.Ratio.Value)
	default:
		p.Title.Text += "\n(no ratio: Respire or every peer is missing)"
	}
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "ops/s"
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(11)
	p.Y.Tick.Label.Font.Size = vg.Points(12)
	p.X.Tick.Marker = plot.TickerFunc(rateTicks)

	n := len(sc.Results)
	names := make([]string, n)
	barWidth := min(vg.Points(24), (chartRowHeight-1.1*vg.Inch)*0.7/vg.Length(n))
	maxRate := 0.0
	var xys plotter.XYs
	var labels []string
	for i, r := range sc.Results {
		pos := n - 1 - i // first result on top
		names[pos] = r.Client
		v := r.Median.OpsPerSec
		maxRate = math.Max(maxRate, v)
		bar, err := plotter.NewBarChart(plotter.Values{v}, barWidth)
		if err != nil {
			return nil, err
		}
		bar.Horizontal = true
		bar.XMin = float64(pos)
		bar.LineStyle.Width = 0
		switch {
		case r.Respire:
			bar.Color = colorRespire
		case r.Reference:
			bar.Color = colorReference
		default:
			bar.Color = colorPeer
		}
		p.Add(bar)
		xys = append(xys, plotter.XY{X: v, Y: float64(pos)})
		labels = append(labels, fmtRate(v))
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Font.Size = vg.Points(11)
		lbl.TextStyle[i].XAlign = text.XLeft
		lbl.TextStyle[i].YAlign = text.YCenter
	}
	lbl.Offset = vg.Point{X: vg.Points(4)}
	p.Add(lbl)
	p.NominalY(names...)
	p.X.Min = 0
	// Room on the right for the value labels.
	p.X.Max = math.Max(1, maxRate*1.18)
	return p, nil
}

// fmtAxisRate prints an axis value without trailing zeros: 0, 2.5k, 250k, 1.2M.
func fmtAxisRate(v float64) string {
	unit, div := "", 1.0
	switch {
	case v >= 1e6:
		unit, div = "M", 1e6
	case v >= 1e3:
		unit, div = "k", 1e3
	}
	return strconv.FormatFloat(v/div, 'g', 3, 64) + unit
}

// rateTicks labels an ops/s axis as 0, 250k, 500k, ...
func rateTicks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = fmtAxisRate(ticks[i].Value)
		}
	}
	return ticks
}
