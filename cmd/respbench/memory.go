package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// The memory figures: what a client holds idle, per connection it keeps, with 1,000
// commands in flight, and after a burst of large values once it has been idle a while
// (a client whose buffers grew for 1 MiB replies should give them back). Heap is the
// live Go heap after a collection (runtime.MemStats.HeapAlloc), RSS the process's
// resident set (/proc/self/statm; 0 elsewhere) after freed memory went back to the OS; each is the change from before the
// client was opened, so the harness's own memory is not counted.

// memoryClients are the configurations measured.
var memoryClients = []string{"respire", "go-redis", "rueidis"}

const (
	memInFlight      = 1000
	memBurstBytes    = 1 << 20
	memBurstWorkers  = 64
	memBurstDuration = 500 * time.Millisecond
	// memSettle is how long the client stays idle after the burst before it is
	// measured again.
	memSettle = 2 * time.Second
)

// memoryResult is one client's memory figures, in bytes.
type memoryResult struct {
	Client          string  `json:"client"`
	Conns           int64   `json:"conns"` // connections the server counted for the idle client
	IdleHeap        int64   `json:"idle_heap"`
	IdleRSS         int64   `json:"idle_rss"`
	HeapPerConn     float64 `json:"heap_per_conn"`
	InFlightHeap    int64   `json:"in_flight_heap"`
	InFlightRSS     int64   `json:"in_flight_rss"`
	AfterBurstHeap  int64   `json:"after_burst_heap"`  // right after the burst
	AfterSettleHeap int64   `json:"after_settle_heap"` // after memSettle idle
	AfterSettleRSS  int64   `json:"after_settle_rss"`
}

// rss returns the process's resident set in bytes, or 0 where it cannot be read.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// liveHeap collects, returns freed memory to the OS (so that RSS follows the heap)
// and returns the live heap.
func liveHeap() int64 {
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// serverClients returns the server's connected_clients.
func (b *bench) serverClients(ctx context.Context) int64 {
	s, err := b.info(ctx, "clients")
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(infoField(s, "connected_clients"), 10, 64)
	return n
}

// runMemory measures every memory client in turn.
func (b *bench) runMemory(ctx context.Context) ([]memoryResult, error) {
	burstKey := keyPrefix + "memory:burst"
	if _, err := b.admin.Do(ctx, "SET", burstKey, strings.Repeat("m", memBurstBytes)); err != nil {
		return nil, fmt.Errorf("respbench: memory: %w", err)
	}
	var out []memoryResult
	for _, spec := range clientSpecs {
		if !slices.Contains(memoryClients, spec.name) || !b.selected(spec.name) || spec.open == nil {
			continue
		}
		b.prog.step("memory " + spec.name)
		r, err := b.memoryOf(ctx, spec, burstKey)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) memoryOf(ctx context.Context, spec clientSpec, burstKey string) (memoryResult, error) {
	r := memoryResult{Client: spec.name}
	conns0, heap0, rss0 := b.serverClients(ctx), liveHeap(), rss()
	c, err := spec.open(ctx, b.ep)
	if err != nil {
		return r, fmt.Errorf("respbench: memory: open %s: %w", spec.name, err)
	}
	defer c.close()
	if _, err := c.get(ctx, getKey); err != nil {
		return r, fmt.Errorf("respbench: memory: %s: %w", spec.name, err)
	}
	r.IdleHeap, r.IdleRSS = liveHeap()-heap0, rss()-rss0
	r.Conns = b.serverClients(ctx) - conns0
	if r.Conns > 0 {
		r.HeapPerConn = float64(r.IdleHeap) / float64(r.Conns)
	}

	// 1,000 goroutines, each with one GET in flight at a time, measured while they run.
	r.InFlightHeap, r.InFlightRSS = loadWhile(ctx, memInFlight, func(ctx context.Context) {
		c.get(ctx, getKey)
	}, 300*time.Millisecond, func() (int64, int64) { return liveHeap() - heap0, rss() - rss0 })

	loadWhile(ctx, memBurstWorkers, func(ctx context.Context) { c.get(ctx, burstKey) }, memBurstDuration, func() (int64, int64) { return 0, 0 })
	r.AfterBurstHeap = liveHeap() - heap0
	// Idle, with a small command now and then, as a quiet application would be.
	for deadline := time.Now().Add(memSettle); time.Now().Before(deadline) && ctx.Err() == nil; {
		c.get(ctx, getKey)
		time.Sleep(100 * time.Millisecond)
	}
	r.AfterSettleHeap, r.AfterSettleRSS = liveHeap()-heap0, rss()-rss0
	return r, nil
}

// loadWhile runs call in a loop on n goroutines, takes sample after d while they still
// run, then stops them and returns the sample.
func loadWhile(ctx context.Context, n int, call func(ctx context.Context), d time.Duration, sample func() (int64, int64)) (int64, int64) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				call(ctx)
			}
		})
	}
	time.Sleep(d)
	h, s := sample()
	stop.Store(true)
	wg.Wait()
	return h, s
}

// writeMemoryTable prints the memory figures.
func writeMemoryTable(w io.Writer, rs []memoryResult) {
	fmt.Fprintf(w, "\n== memory: live heap and RSS the client adds (idle; per connection; %d GETs in flight; after %d goroutines read %s values, then after %v idle)\n",
		memInFlight, memBurstWorkers, fmtBytes(memBurstBytes), memSettle)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "   client\tconns\tidle heap\tidle RSS\theap/conn\tin-flight heap\tin-flight RSS\tafter burst\tafter idle\tRSS after idle\t\n")
	for _, r := range rs {
		fmt.Fprintf(tw, "   %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Client, r.Conns,
			fmtSize(float64(r.IdleHeap)), fmtSize(float64(r.IdleRSS)), fmtSize(r.HeapPerConn),
			fmtSize(float64(r.InFlightHeap)), fmtSize(float64(r.InFlightRSS)),
			fmtSize(float64(r.AfterBurstHeap)), fmtSize(float64(r.AfterSettleHeap)), fmtSize(float64(r.AfterSettleRSS)))
	}
	tw.Flush()
	fmt.Fprintln(w, "   RSS is the whole process's and moves with the Go runtime's own returns to the OS; heap is the figure to compare")
}

// fmtSize prints bytes with a binary unit: 812 B, 35.2 KiB, 1.10 MiB.
func fmtSize(v float64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	switch {
	case v >= 1<<20:
		return sign + sig3(v/(1<<20)) + " MiB"
	case v >= 1<<10:
		return sign + sig3(v/(1<<10)) + " KiB"
	}
	return fmt.Sprintf("%s%.0f B", sign, v)
}
