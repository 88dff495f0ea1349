package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressWidth is the number of cells of the bar.
const progressWidth = 30

// progressRefresh is how often the bar is redrawn between steps.
const progressRefresh = 250 * time.Millisecond

// progress draws a one-line bar on a terminal. Progress is by time: each step (one
// participant's warm-up and measured window) is expected to take stepTime. On
// anything but a terminal it prints a line when a scenario's round begins instead.
//
// Its methods are safe for concurrent use; it owns one goroutine between start and
// finish, which redraws the bar.
type progress struct {
	w        io.Writer
	tty      bool
	total    int
	stepTime time.Duration

	mu        sync.Mutex
	done      int
	label     string
	lastLine  string
	stepStart time.Time
	started   time.Time

	stop chan struct{}
	wg   sync.WaitGroup
}

// newProgress returns a bar for total steps of about stepTime each.
func newProgress(w io.Writer, total int, stepTime time.Duration) *progress {
	return &progress{w: w, tty: isTerminal(w), total: total, stepTime: stepTime}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// start begins redrawing.
func (p *progress) start() {
	p.started = time.Now()
	p.stepStart = p.started
	if !p.tty {
		return
	}
	p.stop = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(progressRefresh)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
}

// step marks the beginning of the next step, described by label.
func (p *progress) step(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stepStart.IsZero() && p.label != "" {
		p.done++
	}
	p.label = label
	p.stepStart = time.Now()
	if p.tty {
		p.draw()
	}
}

// note prints a line above the bar (or just a line without a terminal).
func (p *progress) note(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, format+"\n", a...)
	if p.tty {
		p.draw()
	}
}

// finish stops redrawing and clears the bar.
func (p *progress) finish() {
	if p.stop != nil {
		close(p.stop)
		p.wg.Wait()
		p.stop = nil
	}
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// draw renders the bar; p.mu is held.
func (p *progress) draw() {
	frac := 0.0
	if p.total > 0 {
		inStep := 0.0
		if p.stepTime > 0 {
			inStep = min(1, float64(time.Since(p.stepStart))/float64(p.stepTime))
		}
		frac = min(1, (float64(p.done)+inStep)/float64(p.total))
	}
	cells := int(frac * progressWidth)
	remaining := time.Duration(float64(p.total-p.done)*float64(p.stepTime)) - time.Since(p.stepStart)
	line := fmt.Sprintf("[%s%s] %3.0f%%  %d/%d  %s  ~%s left",
		strings.Repeat("#", cells), strings.Repeat("-", progressWidth-cells),
		frac*100, min(p.done+1, p.total), p.total, p.label, max(0, remaining).Round(time.Second))
	if line != p.lastLine {
		fmt.Fprint(p.w, "\r\033[K"+line)
		p.lastLine = line
	}
}

// milestone prints a line without a terminal, where there is no bar to show progress;
// on a terminal the bar says it already.
func (p *progress) milestone(format string, a ...any) {
	if p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", a...)
}
