package main

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// workerFunc is one step of a load goroutine: it runs one call (a GET, a pipeline, an
// acquire and release) and records what the scenario measures into h. It returns how
// many operations the call counts for. A step that returns (0, nil) did no work (a
// lock that was not acquired this time) and is not an error.
type workerFunc func(ctx context.Context, h *histogram) (ops int, err error)

// timed wraps a call into a workerFunc that records the call's duration.
func timed(opsPerCall int, call func(ctx context.Context) error) workerFunc {
	return func(ctx context.Context, h *histogram) (int, error) {
		start := time.Now()
		if err := call(ctx); err != nil {
			return 0, err
		}
		h.record(time.Since(start))
		return opsPerCall, nil
	}
}

// load describes one measured run: goroutines each running their workerFunc in a loop
// until the window ends.
type load struct {
	goroutines int
	newWorker  func(i int) workerFunc
	// cancelAtStop ends the context of calls still running when the window closes.
	// Lock waiters need it; data calls are left to finish, so no connection is left
	// with an abandoned reply.
	cancelAtStop bool
	// finish, if set, adds the load's own figures after the run.
	finish func(f *figures)
}

// sample is what one run measured, before it is turned into figures.
type sample struct {
	ops      int64
	errors   int64
	firstErr error
	elapsed  time.Duration
	hist     *histogram
	mallocs  uint64
	bytes    uint64
	cpu      time.Duration
}

// stuckGrace is how long calls still running when a window closes may take to return
// before their context is cancelled.
var stuckGrace = 5 * time.Second

var errStuck = errors.New("a call was still running 5 s after the window closed; its context was cancelled")

// waitWithin waits for wg, for at most d, and reports whether it finished.
func waitWithin(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// measure runs l for d and returns what it measured. The goroutines and their
// histograms are created before the window opens, and the garbage collector runs just
// before it, so the allocation and CPU deltas are those of the calls.
func measure(ctx context.Context, l load, d time.Duration) sample {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	hists := make([]*histogram, l.goroutines)
	workers := make([]workerFunc, l.goroutines)
	for i := range l.goroutines {
		hists[i] = newHistogram()
		workers[i] = l.newWorker(i)
	}
	var (
		stop     atomic.Bool
		ops      atomic.Int64
		errs     atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for i := range l.goroutines {
		wg.Add(1)
		go func(w workerFunc, h *histogram) {
			defer wg.Done()
			<-start
			var n int64
			for !stop.Load() {
				k, err := w(runCtx, h)
				if err != nil {
					if runCtx.Err() != nil {
						break
					}
					errs.Add(1)
					errOnce.Do(func() { firstErr = err })
					continue
				}
				n += int64(k)
			}
			ops.Add(n)
		}(workers[i], hists[i])
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := processCPU()
	t0 := time.Now()
	close(start)

	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	if l.cancelAtStop {
		cancel()
	}
	if !waitWithin(&wg, stuckGrace) {
		// A call that outlives the window by this much is stuck (rueidislock's wait
		// has been seen to miss its key's release and sleep for good): its context
		// ends, and the round says so instead of hanging the run.
		cancel()
		wg.Wait()
		errs.Add(1)
		errOnce.Do(func() { firstErr = errStuck })
	}
	elapsed := time.Since(t0)
	cpu := processCPU() - cpuBefore
	runtime.ReadMemStats(&after)

	merged := newHistogram()
	for _, h := range hists {
		merged.merge(h)
	}
	return sample{
		ops:      ops.Load(),
		errors:   errs.Load(),
		firstErr: firstErr,
		elapsed:  elapsed,
		hist:     merged,
		mallocs:  after.Mallocs - before.Mallocs,
		bytes:    after.TotalAlloc - before.TotalAlloc,
		cpu:      cpu,
	}
}

// figures turns a sample into the reported figures.
func (s sample) figures() figures {
	f := figures{
		Ops:     s.ops,
		Seconds: s.elapsed.Seconds(),
		Errors:  s.errors,
	}
	if s.elapsed > 0 {
		f.OpsPerSec = float64(s.ops) / s.elapsed.Seconds()
	}
	if s.hist.count() > 0 {
		f.P50 = durationNS(s.hist.quantile(0.50))
		f.P99 = durationNS(s.hist.quantile(0.99))
		f.P999 = ptr(durationNS(s.hist.quantile(0.999)))
	}
	if s.ops > 0 {
		ops := float64(s.ops)
		f.AllocsPerOp = ptr(float64(s.mallocs) / ops)
		f.BytesPerOp = ptr(float64(s.bytes) / ops)
		f.CPUPerOp = ptr(float64(s.cpu.Nanoseconds()) / ops)
	}
	return f
}

func durationNS(d time.Duration) float64 { return float64(d.Nanoseconds()) }

func ptr[T any](v T) *T { return &v }
