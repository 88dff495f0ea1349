package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/coordination"
	"github.com/respire/respire/lock"
)

// semaphore is one counting-semaphore implementation. tryAcquire makes one attempt at
// a permit of key, which holds capacity permits, and reports ok=false when every
// permit is held; release gives the permit back.
type semaphore interface {
	tryAcquire(ctx context.Context, key string, capacity int) (release func(ctx context.Context) error, ok bool, err error)
	close()
}

// semaphoreSpec names a semaphore implementation and how to open it.
type semaphoreSpec struct {
	name    string
	respire bool
	open    func(ctx context.Context, ep endpoint) (semaphore, error)
}

// semaphoreSpecs lists the semaphores the semaphore scenario measures: Respire's alone,
// since no Go library offers a Redis semaphore to set beside it.
var semaphoreSpecs = []semaphoreSpec{
	{name: "respire-semaphore", respire: true, open: openRespireSemaphore},
}

// respireSemaphore is package coordination's Semaphore over a default Respire client.
type respireSemaphore struct {
	c  *respire.Client
	co *coordination.Coordinator
}

func openRespireSemaphore(ctx context.Context, ep endpoint) (semaphore, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return &respireSemaphore{c: c, co: coordination.New(c)}, nil
}

func (s *respireSemaphore) tryAcquire(ctx context.Context, key string, capacity int) (func(context.Context) error, bool, error) {
	p, ok, err := s.co.Semaphore(key, capacity).TryAcquire(ctx, lockTTL)
	if err != nil || !ok {
		return nil, false, err
	}
	return func(ctx context.Context) error {
		outcome, err := p.Release(ctx)
		if err == nil && outcome != lock.Released {
			err = fmt.Errorf("respire-semaphore: release of a permit of %s: %v", key, outcome)
		}
		return err
	}, true, nil
}

func (s *respireSemaphore) close() { s.c.Close() }

// occupancy counts the holders of one semaphore as the harness sees them: from
// TryAcquire's success to the start of Release, an interval inside the one the server
// holds the permit for, so a count above capacity is a permit the semaphore should
// not have granted.
type occupancy struct {
	holders      atomic.Int64
	most         atomic.Int64 // the highest count seen
	overCapacity atomic.Int64 // acquisitions that brought the count above capacity: must stay zero
	acquisitions atomic.Int64
}

// enter counts a new holder.
func (o *occupancy) enter(capacity int) {
	o.acquisitions.Add(1)
	n := o.holders.Add(1)
	if n > int64(capacity) {
		o.overCapacity.Add(1)
	}
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			return
		}
	}
}

// leave counts a holder gone.
func (o *occupancy) leave() { o.holders.Add(-1) }

// semaphoreLoad has every goroutine try for a permit of one semaphore and give it back
// at once. A cycle that found every permit held counts as an op (the attempt is the
// workload) but not as a latency sample, which is of cycles that took a permit. The
// calls are immediate, so the window lets them finish rather than cancel them: a
// cancelled TryAcquire could leave a permit held until its TTL, and each run has a
// key of its own besides.
func semaphoreLoad(s *scenario, t target) load {
	st := new(occupancy)
	key := keyPrefix + "semaphore:" + t.name + ":" + strconv.FormatInt(lockRuns.Add(1), 10)
	return load{
		goroutines: s.goroutines,
		newWorker: func(int) workerFunc {
			return func(ctx context.Context, h *histogram) (int, error) {
				t0 := time.Now()
				release, ok, err := t.sem.tryAcquire(ctx, key, s.capacity)
				if err != nil {
					return 0, err
				}
				if !ok {
					return 1, nil
				}
				// The holder does no work but yield once, so that holders overlap in the
				// harness's count as they do on the server (back-to-back they seldom
				// would, and the check would prove nothing); the count is given back
				// before the release is sent.
				st.enter(s.capacity)
				runtime.Gosched()
				st.leave()
				if err := release(context.Background()); err != nil {
					return 0, err
				}
				h.record(time.Since(t0))
				return 1, nil
			}
		},
		finish: func(f *figures) {
			n := st.acquisitions.Load()
			f.Acquisitions = ptr(n)
			if f.Seconds > 0 {
				f.AcquisitionsPerSec = ptr(float64(n) / f.Seconds)
			}
			f.MaxOccupancy = ptr(st.most.Load())
			f.OverCapacity = ptr(st.overCapacity.Load())
		},
	}
}
