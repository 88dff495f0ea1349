package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// scenarioKind says what a scenario's participants are.
type scenarioKind uint8

const (
	kindData      scenarioKind = iota // data clients (and redis-benchmark)
	kindLock                          // lock libraries
	kindCache                         // clients with a client-side cache
	kindSemaphore                     // counting semaphores (Respire's alone: no Go peer has one)
	kindRedlock                       // Redlock over three independent servers respbench starts
)

func (k scenarioKind) String() string {
	switch k {
	case kindData:
		return "data"
	case kindLock:
		return "lock"
	case kindCache:
		return "cache"
	case kindSemaphore:
		return "semaphore"
	case kindRedlock:
		return "redlock"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Keys and values the scenarios use. Every key respbench writes starts with keyPrefix,
// except benchKey, the one key redis-benchmark uses without -r.
const (
	keyPrefix = "respbench:"
	getKey    = keyPrefix + "get"
	benchKey  = "key:__rand_int__"
)

var (
	value16 = "0123456789abcdef"
	value1K = strings.Repeat("v", 1024)
)

// pipelineDepth is the number of GETs in one explicit pipeline.
const pipelineDepth = 100

// errNotAcquired is a free lock that was not acquired.
var errNotAcquired = errors.New("respbench: lock not acquired")

// target is what one participant drives: one of the kinds of client. A Redlock group
// is a locker too.
type target struct {
	name   string
	data   dataClient
	lock   locker
	cached cachedClient
	sem    semaphore
	// prepareErr is the error of the scenario's prepare for this participant; a load
	// returns it from every operation, so it shows in the figures.
	prepareErr error
}

// scenario is one workload. Every participant runs it with the same goroutines.
type scenario struct {
	name       string
	title      string
	latency    string // what one latency sample is
	kind       scenarioKind
	goroutines int
	opsPerCall int
	// capacity is the semaphore scenario's number of permits; 0 elsewhere.
	capacity int
	// peerless says why no peer takes part, where none can; empty elsewhere.
	peerless string
	// benchArgs are redis-benchmark's arguments for the same workload, the server-side
	// reference; nil when there is none.
	benchArgs []string
	// limits says the scenario's reference rows (limits.go) take part beside the
	// libraries.
	limits bool
	// limit names the reference row the table divides every row by; empty for none.
	limit string
	// prepare, when set, readies a participant once, before its first run (it stores
	// what the load reads through the participant's own client); nil for none.
	prepare func(ctx context.Context, t target) error
	// makeLoad returns a fresh load on t; each measured run gets its own.
	makeLoad func(s *scenario, t target) load
}

// scenarios lists the workloads in the order they run and are reported.
var scenarios = []*scenario{
	{
		name: "get-seq", title: "sequential GET, 1 goroutine, 16-byte value",
		latency: "per GET", kind: kindData, goroutines: 1, opsPerCall: 1,
		benchArgs: []string{"-c", "1", "-P", "1", "-t", "get", "-d", "16"},
		makeLoad:  getLoad,
	},
	{
		name: "get-par", title: "parallel GET, 64 goroutines, 16-byte value",
		latency: "per GET", kind: kindData, goroutines: 64, opsPerCall: 1,
		benchArgs: []string{"-c", "64", "-P", "1", "-t", "get", "-d", "16"},
		makeLoad:  getLoad,
	},
	{
		name: "set-par", title: "parallel SET, 64 goroutines, 1 KiB values",
		latency: "per SET", kind: kindData, goroutines: 64, opsPerCall: 1,
		benchArgs: []string{"-c", "64", "-P", "1", "-t", "set", "-d", "1024"},
		makeLoad:  setLoad,
	},
	{
		name: "pipeline", title: "explicit pipeline of 100 GETs, 1 goroutine (ops = commands)",
		latency: "per 100-GET pipeline", kind: kindData, goroutines: 1, opsPerCall: pipelineDepth,
		benchArgs: []string{"-c", "1", "-P", "100", "-t", "get", "-d", "16"},
		limit:     referenceName, makeLoad: pipelineLoad,
	},
	{
		name: "lock", title: "lock acquire+release, 16 goroutines on distinct keys",
		latency: "per acquire+release", kind: kindLock, goroutines: 16, opsPerCall: 1,
		limits: true, limit: "ref-lock-commands", makeLoad: lockLoad,
	},
	{
		name: "lock-contended", title: "lock contention, 16 goroutines on 1 key (ops = hand-offs)",
		latency: "hand-off: release to next acquire", kind: kindLock, goroutines: 16, opsPerCall: 1,
		makeLoad: contendedLoad,
	},
	{
		name: "cached-get", title: "client-side cached GET of a hot key, 64 goroutines",
		latency: "per GET", kind: kindCache, goroutines: 64, opsPerCall: 1,
		limits: true, limit: mapLimitSpec.name, makeLoad: cachedLoad,
	},
	{
		name: "semaphore", title: "semaphore TryAcquire+Release, 16 goroutines, capacity 4 (ops = cycles, taken or not)",
		latency: "per cycle that took a permit: TryAcquire + Release", kind: kindSemaphore,
		goroutines: 16, opsPerCall: 1, capacity: 4,
		peerless: "no Go library offers a Redis semaphore (DistributedLock.Redis, the one peer with one, is .NET)",
		makeLoad: semaphoreLoad,
	},
	{
		name: "redlock", title: "Redlock acquire+release on 3 independent servers, 16 goroutines on distinct keys",
		latency: "per acquire+release", kind: kindRedlock, goroutines: 16, opsPerCall: 1,
		makeLoad: lockLoad,
	},
}

// scenarioNames returns the names -scenarios accepts.
func scenarioNames() []string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return names
}

func getLoad(s *scenario, t target) load {
	return load{goroutines: s.goroutines, newWorker: func(int) workerFunc {
		return timed(1, func(ctx context.Context) error {
			v, err := t.data.get(ctx, getKey)
			if err == nil && len(v) != len(value16) {
				err = errShortValue
			}
			return err
		})
	}}
}

func setLoad(s *scenario, t target) load {
	return load{goroutines: s.goroutines, newWorker: func(i int) workerFunc {
		key := keyPrefix + "set:" + strconv.Itoa(i)
		return timed(1, func(ctx context.Context) error {
			return t.data.set(ctx, key, value1K)
		})
	}}
}

func pipelineLoad(s *scenario, t target) load {
	return load{goroutines: s.goroutines, newWorker: func(int) workerFunc {
		return timed(pipelineDepth, func(ctx context.Context) error {
			return t.data.getPipeline(ctx, getKey, pipelineDepth)
		})
	}}
}

// lockRuns numbers the lock runs, so each run has keys of its own: a lock left behind
// by a run whose waiters were cancelled (a library can lose track of a SET NX that
// reached the server just as its context ended) cannot stall the next run.
var lockRuns atomic.Int64

// lockKey returns the key of a locker's lock for one run.
func lockKey(locker string, run int64, suffix string) string {
	return keyPrefix + "lock:" + locker + ":" + strconv.FormatInt(run, 10) + ":" + suffix
}

func lockLoad(s *scenario, t target) load {
	run := lockRuns.Add(1)
	return load{goroutines: s.goroutines, newWorker: func(i int) workerFunc {
		key := lockKey(t.name, run, strconv.Itoa(i))
		return timed(1, func(ctx context.Context) error {
			release, ok, err := t.lock.acquire(ctx, key)
			if err != nil {
				return err
			}
			if !ok {
				return errNotAcquired
			}
			return release(context.Background())
		})
	}}
}

// handoffs is the state the goroutines contending for one lock share.
type handoffs struct {
	lastRelease atomic.Int64 // lockClock when the last holder began to release; 0 for none yet
	holders     atomic.Int32
	overlaps    atomic.Int64 // acquisitions that found another holder: must stay zero
}

// contendedLoad has every goroutine take the same lock and let it go at once. A sample
// is the time from the holder starting its release to the next holder's acquire
// returning; waiting is each library's own (see the locker's retry note).
func contendedLoad(s *scenario, t target) load {
	st := new(handoffs)
	key := lockKey(t.name, lockRuns.Add(1), "contended")
	return load{
		goroutines:   s.goroutines,
		cancelAtStop: true,
		newWorker: func(int) workerFunc {
			return func(ctx context.Context, h *histogram) (int, error) {
				release, ok, err := t.lock.acquire(ctx, key)
				if err != nil || !ok {
					return 0, err
				}
				acquired := lockClock()
				if st.holders.Add(1) != 1 {
					st.overlaps.Add(1)
				}
				if last := st.lastRelease.Load(); last != 0 {
					h.record(time.Duration(acquired - last))
				}
				st.holders.Add(-1)
				st.lastRelease.Store(lockClock())
				return 1, release(context.Background())
			}
		},
		finish: func(f *figures) { f.Overlaps = ptr(st.overlaps.Load()) },
	}
}

func cachedLoad(s *scenario, t target) load {
	return load{goroutines: s.goroutines, newWorker: func(int) workerFunc {
		return timed(1, func(ctx context.Context) error {
			v, err := t.cached.cachedGet(ctx, getKey)
			if err == nil && len(v) != len(value16) {
				err = errShortValue
			}
			return err
		})
	}}
}
